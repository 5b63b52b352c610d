"""Export routes (docs/ir-routes.md): a case's function leaves its framework through an
interchange format and runs on another runtime. A worker started with `--mode onnx` or
`--mode stablehlo` runs every case this way; the core judges the answers against eager on
the same device, as for compiled targets.

Routes:
  onnx       torch       torch.onnx.export(Module, args, dynamo=True) (needs onnxscript)
             jax         jax2onnx.to_onnx(f, args)
             tensorflow  tf2onnx.convert.from_function(tf.function(f), input_signature=...)
             then ONNX Runtime with the execution provider that matches the device, given
             explicitly (CPUExecutionProvider on cpu; CUDAExecutionProvider on cuda:N with the
             CPU fallback disabled, so a node that would land on the CPU provider is found).
  onnx_openvino  the same exporters, the same ONNX model, run by OpenVINO
             (Core.read_model + compile_model on its `CPU` device, its defaults but the
             worker's thread budget; cpu only: OpenVINO's GPU plugin is for Intel GPUs).
  stablehlo  jax         jax.export(jax.jit(f)) -> serialize -> deserialize (the round trip
             is part of the route) -> IREE (iree-base-compiler: `llvm-cpu` on cpu, `cuda` on
             cuda:N) -> iree-base-runtime.

Stages and outcomes: the exporter refusing the function raises `ExportError` (reported as
`mlport.ExportError`, the core's `export_error`, with the exporter's message); the runtime
refusing the model raises the runtime's own exception, which the core classifies
(`not_implemented` for ONNX Runtime's "Could not find an implementation for ...", else
`compile_error`, as any first-call failure of a compiled target). The first call is export +
load/compile + the first run; the steady state times the runtime's call alone, on NumPy inputs.

Pins: python/ir-routes.lock (they resolve beside requirements.lock without moving a framework).
"""

import importlib.util
import os
import re

ROUTES = ("onnx", "onnx_openvino", "stablehlo")

# Which framework has which route; the core says the others once (Framework::lacks_mode).
ROUTE_FRAMEWORKS = {
    "onnx": ("torch", "jax", "tensorflow"),
    "onnx_openvino": ("torch", "jax", "tensorflow"),
    "stablehlo": ("jax",),
}

# The modules each (route, framework) needs beyond the framework itself.
NEEDS = {
    ("onnx", "torch"): ("onnx", "onnxscript", "onnxruntime"),
    ("onnx", "jax"): ("onnx", "jax2onnx", "onnxruntime"),
    ("onnx", "tensorflow"): ("onnx", "tf2onnx", "onnxruntime"),
    ("onnx_openvino", "torch"): ("onnx", "onnxscript", "openvino"),
    ("onnx_openvino", "jax"): ("onnx", "jax2onnx", "openvino"),
    ("onnx_openvino", "tensorflow"): ("onnx", "tf2onnx", "openvino"),
    ("stablehlo", "jax"): ("iree.compiler", "iree.runtime"),
}

# The ONNX opset the exporters are asked for (ONNX Runtime 1.32 runs opsets up to 23).
OPSET = 18


class ExportError(Exception):
    """The exporter refused the function; the message is the exporter's own."""


ExportError.__module__ = "mlport"  # reported as `mlport.ExportError` (the core's export_error)


def unavailable(route, framework, device):
    """Why `route` cannot run `framework` on `device` here (a sentence), or None when it can.
    Looks modules up without importing them, so a worker's hello stays fast."""
    if route not in ROUTES:
        return f"unknown route `{route}` (expected one of {', '.join(ROUTES)})"
    if framework not in ROUTE_FRAMEWORKS[route]:
        return f"{framework} has no `{route}` route"
    for mod in NEEDS[(route, framework)]:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"route `{route}` needs the Python module `{mod}` (python/ir-routes.lock; installed on first use of a route)"
    kind = device.split(":")[0]
    if kind not in ("cpu", "cuda"):
        return f"route `{route}` has no runtime target for {device} (cpu and cuda:N only)"
    if route == "onnx_openvino" and kind == "cuda":
        return "route `onnx_openvino` runs on OpenVINO's CPU device only (its GPU plugin drives Intel GPUs, not CUDA)"
    if route == "onnx" and kind == "cuda":
        import onnxruntime as ort

        if "CUDAExecutionProvider" not in ort.get_available_providers():
            return f"ONNX Runtime here has no CUDAExecutionProvider (providers: {', '.join(ort.get_available_providers())})"
    return None


class Route:
    """One worker's route: `wrap(f, args)` gives the zero-argument callable a case times."""

    def __init__(self, route, framework, device):
        why = unavailable(route, framework, device)
        if why:
            raise RuntimeError(why)
        self.route, self.framework, self.device = route, framework, device

    def wrap(self, f, args, is_array):
        """A callable that exports `f` at the shapes and dtypes of the array arguments among
        `args` (framework arrays; the others are constants of the export) on its first call,
        loads it on the route's runtime and runs it; later calls run the loaded model on the
        same inputs as NumPy arrays. Returns a list of NumPy arrays."""
        positions = [i for i, a in enumerate(args) if is_array(a)]
        arrays = [args[i] for i in positions]

        def g(*xs):
            full = list(args)
            for i, x in zip(positions, xs):
                full[i] = x
            return f(*full)

        state = {}

        def call():
            run = state.get("run")
            if run is None:
                run, np_args = self._prepare(g, arrays)
                state["run"], state["args"] = run, np_args
            return run(*state["args"])

        return call

    def _prepare(self, g, arrays):
        if self.route == "stablehlo":
            return _stablehlo_jax(g, arrays, self.device)
        exporter = {"torch": _onnx_torch, "jax": _onnx_jax, "tensorflow": _onnx_tensorflow}[self.framework]
        model, np_args = exporter(g, arrays)
        if self.route == "onnx_openvino":
            return _openvino_model(model, np_args), np_args
        return _ort_session(model, np_args, self.device), np_args


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _export(thunk):
    """Runs an exporter; any exception it raises becomes ExportError with its message (terminal
    colour codes, which torch.onnx's messages carry, removed)."""
    try:
        return thunk()
    except Exception as e:
        message = _ANSI.sub("", str(e)).strip() or type(e).__name__
        raise ExportError(f"{type(e).__name__}: {message}") from e


def _onnx_torch(g, arrays):
    import torch

    class Wrapped(torch.nn.Module):
        def forward(self, *a):
            return g(*a)

    host = [a.detach().cpu() for a in arrays]
    program = _export(lambda: torch.onnx.export(Wrapped(), tuple(host), dynamo=True, verbose=False, opset_version=OPSET))
    if program is None or getattr(program, "model_proto", None) is None:
        raise ExportError("torch.onnx.export returned no model")
    return program.model_proto.SerializeToString(), [_torch_numpy(a) for a in host]


def _torch_numpy(t):
    """A torch tensor as a NumPy array of the same dtype (bfloat16 through ml_dtypes)."""
    import torch

    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _onnx_jax(g, arrays):
    import numpy as np
    from jax2onnx import to_onnx

    np_args = [np.asarray(a) for a in arrays]
    double = any(a.dtype.name in ("float64", "complex128") for a in np_args)
    model = _export(lambda: to_onnx(g, list(arrays), opset=OPSET, enable_double_precision=double))
    return model.SerializeToString(), np_args


def _onnx_tensorflow(g, arrays):
    import tensorflow as tf
    import tf2onnx

    signature = [tf.TensorSpec(a.shape, a.dtype, name=f"arg{i}") for i, a in enumerate(arrays)]
    model, _ = _export(lambda: tf2onnx.convert.from_function(tf.function(g), input_signature=signature, opset=OPSET))
    return model.SerializeToString(), [a.numpy() for a in arrays]


def _ort_session(model, np_args, device):
    """An InferenceSession on the provider of `device`, and a run(*arrays) -> [arrays]."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    threads = _thread_budget()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    if device.startswith("cuda:"):
        providers = [("CUDAExecutionProvider", {"device_id": int(device.split(":")[1])})]
        # A node without a CUDA kernel would otherwise run on the CPU provider unannounced.
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    else:
        providers = ["CPUExecutionProvider"]
    session = ort.InferenceSession(model, sess_options=options, providers=providers)
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(np_args):
        # The exporter dropped an input the function does not read: feed the ones kept.
        np_args[:] = np_args[: len(names)]
    for i, (inp, a) in enumerate(zip(session.get_inputs(), np_args)):
        want = "tensor(" + _ONNX_TYPE_NAMES.get(a.dtype.name, a.dtype.name) + ")"
        if inp.type != want:
            # tf2onnx, for one, turns bfloat16 inputs into float16: the model is not the function.
            raise ExportError(f"the exported model takes {inp.type} for input {i} ({inp.name}), the function {want}")
    # ONNX Runtime's Python API takes and gives NumPy arrays, except bfloat16, which NumPy
    # lacks: those go in as OrtValues typed by ONNX and come out through their buffer.
    np_args[:] = [_ort_value(a) for a in np_args]

    def run(*xs):
        return [_from_ort_value(o) for o in session.run_with_ort_values(None, dict(zip(names, xs)))]

    return run


# NumPy dtype names whose ONNX tensor type is spelled otherwise (`tensor(float)`).
_ONNX_TYPE_NAMES = {"float32": "float", "float64": "double", "bool": "bool"}


def _ort_value(a):
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto

    if a.dtype.name == "bfloat16":
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(a).view(np.uint16), TensorProto.BFLOAT16)
    return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a))


def _from_ort_value(o):
    """An output OrtValue (on the host) as a NumPy array; bfloat16 copied from its buffer."""
    if o.data_type() != "tensor(bfloat16)":
        return o.numpy()
    import ctypes

    import ml_dtypes
    import numpy as np

    shape = o.shape()
    n = int(np.prod(shape)) if shape else 1
    raw = np.ctypeslib.as_array((ctypes.c_uint16 * n).from_address(o.data_ptr())).copy()
    return raw.view(ml_dtypes.bfloat16).reshape(shape)


def _thread_budget():
    """The worker's thread budget (`mlport run --threads`/`--jobs`, OMP_NUM_THREADS), as the
    frameworks get it, or None; a runtime would otherwise start one thread per core."""
    threads = os.environ.get("OMP_NUM_THREADS")
    return int(threads) if threads and threads.isdigit() else None


# OpenVINO element type names (`Type.get_type_name()`) of NumPy dtypes spelled otherwise.
_OV_TYPE_NAMES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "bool": "boolean",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}


def _openvino_model(model, np_args):
    """The ONNX model compiled by OpenVINO for its CPU device, and a run(*arrays) -> [arrays].
    OpenVINO's documented CPU defaults stand (its inference precision hint is bf16 on CPUs with
    native bf16, f32 elsewhere), except the thread count."""
    import numpy as np
    import openvino as ov

    core = ov.Core()
    config = {}
    threads = _thread_budget()
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = core.compile_model(core.read_model(model), "CPU", config)
    inputs = compiled.inputs
    if len(inputs) != len(np_args):
        np_args[:] = np_args[: len(inputs)]
    for i, (inp, a) in enumerate(zip(inputs, np_args)):
        want = _OV_TYPE_NAMES.get(a.dtype.name, a.dtype.name)
        got = inp.get_element_type().get_type_name()
        if got != want:
            raise ExportError(f"the exported model takes {got} for input {i}, the function {want}")
    request = compiled.create_infer_request()
    tensors = [_ov_tensor(a) for a in np_args]
    for i, t in enumerate(tensors):
        request.set_input_tensor(i, t)
    np_args[:] = tensors

    def run(*xs):
        for i, t in enumerate(xs):
            request.set_input_tensor(i, t)
        request.infer()
        return [_from_ov_tensor(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]

    return run


def _ov_tensor(a):
    """A NumPy array as an OpenVINO tensor (bfloat16 through its bits: NumPy has no bfloat16)."""
    import numpy as np
    import openvino as ov

    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        t = ov.Tensor(ov.Type.bf16, ov.Shape(list(a.shape)))
        np.copyto(t.data.view(np.uint16), a.view(np.uint16).reshape(t.data.shape))
        return t
    return ov.Tensor(a)


def _from_ov_tensor(t):
    """An output tensor as a NumPy array of its own dtype, copied out of OpenVINO's buffer."""
    import numpy as np

    if t.get_element_type().get_type_name() == "bf16":
        import ml_dtypes

        return np.array(t.data, copy=True).view(np.uint16).view(ml_dtypes.bfloat16).reshape(list(t.shape))
    return np.array(t.data, copy=True)


def _stablehlo_jax(g, arrays, device):
    import iree.compiler as ireec
    import iree.runtime as ireert
    import jax
    import numpy as np
    from jax import export

    def exported_mlir():
        shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
        exp = export.export(jax.jit(g))(*shapes)
        return export.deserialize(exp.serialize()).mlir_module()

    mlir = _export(exported_mlir)
    if device == "cpu":
        backend, driver, extra = "llvm-cpu", "local-task", ["--iree-llvmcpu-target-cpu=host"]
    else:
        backend, driver, extra = "cuda", "cuda", []
    vmfb = ireec.compile_str(mlir, target_backends=[backend], input_type="stablehlo", extra_args=extra)
    module = ireert.load_vm_flatbuffer(vmfb, driver=driver)

    def run(*xs):
        out = module.main(*xs)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        return [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in out]

    return run, [np.asarray(a) for a in arrays]
