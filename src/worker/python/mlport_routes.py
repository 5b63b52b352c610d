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
             cuda:N, `vulkan-spirv` on vulkan:N) -> iree-base-runtime.

On vulkan:N (docs/vulkan.md) no framework runs: the case's arrays are built on the host and
the route carries the function to the Vulkan device. `onnx` there is the same exported model
imported by IREE's ONNX importer (iree.compiler.extras.onnx_importer, as `iree-import-onnx`
does) and compiled for SPIR-V, since ONNX Runtime has no Vulkan provider. Stages, each named at
the start of a failure's message: export (the exporter, `mlport.ExportError`), import (IREE's
ONNX importer), compile (`iree-compile` for vulkan-spirv), run (IREE's Vulkan driver).
float64: IREE demotes f64 to f32 by default (`--iree-input-demote-f64-to-f32`, which changes
the compiled function's signature); mlport keeps that default, as a user gets it, feeds the
inputs as the compiled signature declares (float32) and returns what the device computed, so
the core records `dtype_changed` rather than a pass.

Stages and outcomes: the exporter refusing the function raises `ExportError` (reported as
`mlport.ExportError`, the core's `export_error`, with the exporter's message); the runtime
refusing the model raises the runtime's own exception, which the core classifies
(`not_implemented` for ONNX Runtime's "Could not find an implementation for ...", else
`compile_error`, as any first-call failure of a compiled target). The first call is export +
load/compile + the first run; the steady state times the runtime's call alone, on NumPy inputs.

Pins: python/ir-routes.lock (they resolve beside requirements.lock without moving a framework).
"""

import atexit
import importlib.util
import os
import re
import weakref

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
    kind = device.split(":")[0]
    if kind == "vulkan":
        return _vulkan_unavailable(route, framework, device)
    mod = _missing_module(NEEDS[(route, framework)])
    if mod:
        return f"route `{route}` needs the Python module `{mod}` (python/ir-routes.lock; installed on first use of a route)"
    if kind not in ("cpu", "cuda"):
        return f"route `{route}` has no runtime target for {device} (cpu, cuda:N and vulkan:N only)"
    if route == "onnx_openvino" and kind == "cuda":
        return "route `onnx_openvino` runs on OpenVINO's CPU device only (its GPU plugin drives Intel GPUs, not CUDA)"
    if route == "onnx" and kind == "cuda":
        import onnxruntime as ort

        if "CUDAExecutionProvider" not in ort.get_available_providers():
            return f"ONNX Runtime here has no CUDAExecutionProvider (providers: {', '.join(ort.get_available_providers())})"
    return None


def _missing_module(modules):
    """The first of `modules` that cannot be found, without importing it, or None."""
    for mod in modules:
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return mod
    return None


def _vulkan_unavailable(route, framework, device):
    """Why `route` cannot run `framework` on the Vulkan device `device` here, or None: the
    route's modules (IREE in place of ONNX Runtime for `onnx`), then the device itself, as IREE's
    Vulkan driver lists it."""
    if route == "onnx_openvino":
        return "route `onnx_openvino` runs on OpenVINO's CPU device only (no Vulkan device)"
    needs = [m for m in NEEDS[(route, framework)] if m != "onnxruntime"] + ["iree.compiler", "iree.runtime"]
    mod = _missing_module(dict.fromkeys(needs))
    if mod:
        return f"{device}/{route} needs the Python module `{mod}` (python/ir-routes.lock; installed on first use of a route)"
    try:
        _vulkan_info(device)
    except Exception as e:  # noqa: BLE001 - said as why the target is unavailable
        return str(e)
    return None


# IREE Vulkan devices this process opened, by mlport device name: creating one is costly.
_VULKAN = {}


class _CallState(dict):
    """A wrapped call's state (its loaded model and inputs); a dict that can be weakly held
    (hashed by identity)."""

    __hash__ = object.__hash__


# The state of every live wrapped call on a Vulkan device (its loaded module and device
# buffers), held weakly: a finished case's is freed with its call.
_VULKAN_CALLS = weakref.WeakSet()
_RELEASE_AT_EXIT = []


def _release_vulkan():
    """Drops every IREE object on a Vulkan device (cases' loaded modules and buffers, and
    reference cycles through a failure's traceback) before the interpreter tears its modules
    down: released later, IREE's Vulkan runtime segfaults at exit (seen with lavapipe: exit
    status 139 after a clean run)."""
    import gc

    # The devices go last: a buffer or module freed after its device crashes. Failures'
    # tracebacks hold cases' buffers in reference cycles, so collect those while the devices
    # are still held. An uncaught exception's traceback outlives the program in sys.last_*.
    import sys

    for name in ("last_exc", "last_value", "last_traceback", "last_type"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    gc.collect()
    for state in list(_VULKAN_CALLS):
        state.clear()
    gc.collect()
    _VULKAN.clear()
    gc.collect()


def _vulkan_info(device):
    """(IREE's Vulkan driver, its description of `vulkan:N`): the Nth device the driver lists
    (the Vulkan loader's order, as `mlport env` shows them), without opening it (a hello asks
    this; only a case opens the device). Raises RuntimeError with why when the driver or the
    device is absent."""
    import iree.runtime as ireert

    kind, _, index = device.partition(":")
    if kind != "vulkan" or not index.isdigit():
        raise RuntimeError(f"not a Vulkan device: {device!r} (vulkan:N)")
    try:
        driver = ireert.get_driver("vulkan")
        found = driver.query_available_devices()
    except Exception as e:  # no loader, no ICD (VK_ERROR_INCOMPATIBLE_DRIVER)
        raise RuntimeError(f"IREE's Vulkan driver finds no Vulkan device ({str(e).splitlines()[0]}): install Debian's "
                           "`libvulkan1` and `mesa-vulkan-drivers` (lavapipe) or a GPU's Vulkan driver") from e
    if int(index) >= len(found):
        names = ", ".join(f"vulkan:{i} {d['name']}" for i, d in enumerate(found)) or "none"
        raise RuntimeError(f"IREE's Vulkan driver lists no {device} (devices: {names})")
    return driver, found[int(index)]


def _vulkan_device(device):
    """(IREE HAL device, its description from IREE's Vulkan driver) of `vulkan:N`, opened once
    per process ([`_vulkan_info`]). Raises RuntimeError with why when it cannot be opened."""
    if device in _VULKAN:
        return _VULKAN[device]
    driver, info = _vulkan_info(device)
    try:
        _VULKAN[device] = (driver.create_device(info["device_id"]), info)
    except Exception as e:
        raise RuntimeError(f"IREE cannot open {device} ({info['name']}): {e}") from e
    if not _RELEASE_AT_EXIT:
        # After iree.runtime's import: exit handlers run last-registered first, so this one
        # runs before any IREE registered.
        _RELEASE_AT_EXIT.append(atexit.register(_release_vulkan))
    return _VULKAN[device]


def _vulkan_target(name):
    """IREE's `--iree-vulkan-target` for a Vulkan device name: `llvmpipe` for Mesa's lavapipe,
    else what MLPORT_IREE_VULKAN_TARGET says (an architecture or product IREE knows: `ampere`,
    `rdna3`, `rtx4090` …), else None (IREE's conservative default profile)."""
    if "llvmpipe" in name:
        return "llvmpipe"
    return os.environ.get("MLPORT_IREE_VULKAN_TARGET") or None


def runtime(route, device=None):
    """The runtime a route runs its models on, in words, with the settings that change an
    answer (the worker's hello reports it for each route the run asked for, in
    `route_details`; the core stores it as the target's detail). Imports the runtime, so it
    is asked only for routes the run uses. On a Vulkan `device`: IREE's Vulkan driver, the
    compiler's target and the device as the driver names it. OpenVINO: its CPU plugin's inference precision
    (`INFERENCE_PRECISION_HINT`), bf16 by default on CPUs with native bfloat16 (AVX512_BF16
    or AMX), f32 elsewhere (OpenVINO's documented CPU default): a float32 model's matmuls and
    convolutions then run in bfloat16."""
    if device is not None and device.startswith("vulkan:"):
        from importlib.metadata import version

        _, info = _vulkan_info(device)
        target = _vulkan_target(info["name"]) or "IREE's default Vulkan profile"
        how = "IREE's ONNX importer, " if route == "onnx" else ""
        f64 = "float64 refused (IREE's ONNX input)" if route == "onnx" else "f64 demoted to f32 (IREE's default)"
        return (f"IREE {version('iree-base-runtime')}: {how}vulkan-spirv (--iree-vulkan-target={target}), {f64}, "
                f"IREE device {info['name']}")
    if route == "onnx":
        import onnxruntime as ort

        return f"ONNX Runtime {ort.__version__}"
    if route == "onnx_openvino":
        import openvino as ov

        hint = ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT").get_type_name()
        version = ov.__version__.split("-")[0]
        why = " (the CPU plugin's default on CPUs with native bfloat16: float32 models compute in bfloat16)" if hint == "bf16" else ""
        return f"OpenVINO {version} CPU plugin, inference precision {hint}{why}"
    if route == "stablehlo":
        from importlib.metadata import version

        return f"IREE {version('iree-base-runtime')} (llvm-cpu on cpu, cuda on cuda:N)"
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

        state = _CallState()
        if self.device.startswith("vulkan:"):
            _VULKAN_CALLS.add(state)

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
        if self.device.startswith("vulkan:"):
            _refuse_wide_onnx_interface(model, self.device)
            mlir, entry = _import_onnx(model)
            return _vulkan_module(mlir, "onnx", entry, np_args, self.device)
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
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(_contiguous(a).view(np.uint16), TensorProto.BFLOAT16)
    return ort.OrtValue.ortvalue_from_numpy(_contiguous(a))


def _contiguous(a):
    """`a` in C order, its shape kept: `np.ascontiguousarray` makes a 0-d array 1-d, which a
    model taking a scalar refuses."""
    import numpy as np

    return a if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(a.shape)


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

    a = _contiguous(a)
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
    if device.startswith("vulkan:"):
        return _vulkan_module(mlir, "stablehlo", "main", [np.asarray(a) for a in arrays], device)
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


def _restaged(e, message):
    """An exception carrying `message` whose type has `e`'s module and name, so the core
    classifies it by the same type (`iree.compiler.tools.binaries.CompilerToolError`, whose
    constructor takes a process, not a message); `e` stays its cause."""
    cls = type(e)
    twin = type(cls.__name__, (Exception,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    err = twin(message)
    err.__cause__ = e
    return err


def _staged(stage, thunk):
    """Runs one stage; an exception it raises is re-raised with `stage: ` before its message
    (IREE's own words), under its own type name (the core classifies it)."""
    try:
        return thunk()
    except Exception as e:
        raise _restaged(e, f"{stage}: {_ANSI.sub('', str(e)).strip() or type(e).__name__}") from e


class UnsupportedDtype(Exception):
    """The route cannot carry this dtype to the device; the message says why."""


UnsupportedDtype.__module__ = "mlport"


def _refuse_wide_onnx_interface(model, device):
    """Refuses an ONNX model with a float64 or complex128 input or output on a Vulkan device:
    IREE's ONNX input demotes f64 to f32 inside the module (its default) but keeps float64 at the
    module's interface, so such a module reads float64 inputs as float32 bytes (silently wrong:
    Cast(double→float) of [1.5, 2.5, 3.5, 4.5] gives [0, 1.9375, 0, 2.0625]) and overruns its
    float64 outputs' buffers; with demotion off, lavapipe refuses f64 in most operations
    (`'spirv.GL.Sin' op operand #0 must be 16/32-bit float …, but got 'vector<4xf64>'`). Raises
    UnsupportedDtype (the core's `dtype_unsupported`) naming the first such value."""
    import onnx

    graph = onnx.load_from_string(model).graph
    wide = {onnx.TensorProto.DOUBLE: "float64", onnx.TensorProto.COMPLEX128: "complex128"}
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for v in values:
            dtype = wide.get(v.type.tensor_type.elem_type)
            if dtype:
                raise UnsupportedDtype(
                    f"IREE import (ONNX importer): unsupported dtype {dtype} on {device}/onnx: the model's {kind} "
                    f"`{v.name}` is {dtype}, and IREE's ONNX input demotes f64 to f32 inside the module (its default) "
                    "while keeping it at the module's interface, so the module would read or write its buffers at "
                    "the wrong width (docs/vulkan.md)")


def _import_onnx(model):
    """An ONNX model (bytes) as (MLIR text in IREE's torch-dialect input, the entry function's
    name: the ONNX graph's, `main_graph` from torch, `jax_model` from jax2onnx), by IREE's ONNX
    importer with the shape inference `iree-import-onnx` runs first."""
    import onnx
    from iree.compiler.extras import onnx_importer
    from iree.compiler.ir import Context

    def run():
        proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(model))
        context = Context()
        info = onnx_importer.ModelInfo(proto)
        module = info.create_module(context=context).operation
        onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
        module.verify()
        return module.get_asm(), proto.graph.name

    return _staged("IREE import (ONNX importer)", run)


def _vulkan_module(mlir, input_type, entry, np_args, device):
    """`mlir` compiled by IREE for SPIR-V and loaded on the Vulkan `device`; returns
    (run(*inputs) -> [NumPy arrays], inputs on the device).

    Inputs go to the device as device-local buffers written through a host-visible mapping
    (IREE's Python `asdevicearray` and a NumPy array passed directly import the host
    allocation, which Vulkan refuses unless it meets `minImportedHostPointerAlignment`, 4096 on
    lavapipe); outputs come back through a host staging buffer and a queue copy. Inputs are
    fed as the compiled signature declares: float64 ones as float32 where IREE demoted f64 (a
    StableHLO input's declaration says so; IREE's ONNX input keeps f64 and declares nothing)."""
    import iree.compiler as ireec
    import iree.runtime as ireert
    import numpy as np

    dev, info = _vulkan_device(device)
    target = _vulkan_target(info["name"])
    extra = [f"--iree-vulkan-target={target}"] if target else []
    vmfb = _staged(f"IREE compile (vulkan-spirv, target {target or 'default'})", lambda: ireec.compile_str(
        mlir, target_backends=["vulkan-spirv"], input_type=input_type, extra_args=extra))

    def load():
        context = ireert.SystemContext(config=ireert.Config(device=dev))
        vm = ireert.VmModule.copy_buffer(context.instance, vmfb)
        context.add_vm_module(vm)
        function = vm.lookup_function(entry)
        if function is None:
            raise LookupError(f"the compiled module has no function `{entry}`")
        return context.modules[vm.name][entry], function.reflection.get("iree.abi.declaration", "")

    fn, declaration = _staged(f"IREE run ({device})", load)
    demoted = {"float64": "float32", "complex128": "complex64"}
    declared = {"float64": "f64", "complex128": "complex<f64>"}
    fed = [a.astype(demoted[a.dtype.name])
           if declaration and a.dtype.name in demoted and declared[a.dtype.name] not in declaration else a
           for a in (np.asarray(x) for x in np_args)]  # 0-d stays 0-d (ascontiguousarray makes it 1-d)
    on_device = _staged(f"IREE run ({device})", lambda: [_to_vulkan(dev, a) for a in fed])

    def run(*xs):
        def call():
            out = fn(*xs)
            out = list(out) if isinstance(out, (list, tuple)) else [out]
            return [_from_vulkan(dev, o) for o in out]

        return _staged(f"IREE run ({device})", call)

    return run, on_device


def _to_vulkan(dev, a):
    """A NumPy array as a device-local, host-visible IREE buffer view on `dev`."""
    import iree.runtime as ireert
    from iree.runtime.array_interop import map_dtype_to_element_type

    element = map_dtype_to_element_type(a.dtype)
    if element is None:
        raise TypeError(f"IREE has no element type for {a.dtype}")
    buf = dev.allocator.allocate_buffer(
        memory_type=int(ireert.MemoryType.DEVICE_LOCAL | ireert.MemoryType.HOST_VISIBLE),
        allowed_usage=int(ireert.BufferUsage.DEFAULT | ireert.BufferUsage.MAPPING_SCOPED),
        allocation_size=max(a.nbytes, 1))
    if a.size:
        mapped = buf.map()
        mapped.asarray(a.shape, a.dtype)[...] = a
        del mapped
    return ireert.HalBufferView(buf, list(a.shape), int(element))


def _from_vulkan(dev, out):
    """A function's output (a DeviceArray on the Vulkan device) copied to a NumPy array: a
    host-local staging buffer, one queue copy, a wait, a mapped read."""
    import iree.runtime as ireert
    import numpy as np

    if not isinstance(out, ireert.DeviceArray):
        return np.asarray(out)
    view = out._buffer_view
    dtype = out._get_raw_dtype()
    source = view.get_buffer()
    if source.byte_length() == 0:
        return np.zeros(view.shape, dtype)
    host = dev.allocator.allocate_buffer(
        memory_type=int(ireert.MemoryType.HOST_LOCAL | ireert.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(ireert.BufferUsage.TRANSFER_TARGET | ireert.BufferUsage.MAPPING_SCOPED),
        allocation_size=source.byte_length())
    semaphore = dev.create_semaphore(0)
    dev.queue_copy(source, host, wait_semaphores=ireert.HalFence.create_at(semaphore, 0),
                   signal_semaphores=ireert.HalFence.create_at(semaphore, 1))
    ireert.HalFence.create_at(semaphore, 1).wait()
    return np.array(host.map().asarray(view.shape, dtype), copy=True)
