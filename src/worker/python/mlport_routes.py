"""IR routes (issue 17): export a case's callable to an interchange format and run it elsewhere.

Routes (docs/ir-routes.md):
  onnx       torch: torch.onnx.export(module, args, dynamo=True) (needs onnxscript)
             -> ONNX Runtime with the provider that matches the device, given explicitly
             (CPUExecutionProvider on cpu, CUDAExecutionProvider on cuda:N).
  stablehlo  jax: jax.export(jax.jit(f)) -> serialize -> deserialize (the round trip is part
             of the route) -> IREE (iree-base-compiler, `llvm-cpu` on cpu) -> iree-base-runtime.

A framework without a route gets `RouteUnavailable` (said once by the caller, never counted).
Each stage's failure is an outcome, classified by `classify`:
  export_error     the exporter refused the function (its message kept)
  not_implemented  the runtime has no kernel for an op/dtype: ONNX Runtime's
                   "Could not find an implementation for ..."
  compile_error    any other refusal by the runtime / IR compiler (e.g. IREE rejecting a
                   stablehlo.custom_call such as JAX's LAPACK calls for det/eigh on cpu)
Agreement (wrong_result, dtype_changed) is decided by the caller against the float64
reference and eager, exactly as for compiled targets.

Timing: `Prepared.first_call_ns` is export + load/compile + the first run (stored as the
first call); `Prepared.run` is the steady-state callable the ordinary timer measures.

Pins: python/ir-routes.lock (they resolve beside requirements.lock without moving a framework).
"""

import time

ROUTES = ("onnx", "stablehlo")

# Which framework has which route (a route missing here is "said once, never counted").
ROUTE_FRAMEWORKS = {
    "onnx": ("torch",),
    "stablehlo": ("jax",),
}

ORT_NOT_IMPLEMENTED = "Could not find an implementation for"


class RouteUnavailable(Exception):
    """The framework has no such route, or the route's converter/runtime is not installed."""


class StageError(Exception):
    """A route stage refused the function. `outcome` is export_error, not_implemented or
    compile_error; `stage` is export, load or run; the message is the tool's own."""

    def __init__(self, outcome, stage, message):
        super().__init__(message)
        self.outcome = outcome
        self.stage = stage


def classify(stage, message):
    """The outcome name for a failure at `stage` (export, load, run) with `message`."""
    if stage == "export":
        return "export_error"
    if ORT_NOT_IMPLEMENTED in message:
        return "not_implemented"
    return "compile_error"


def _fail(stage, exc):
    message = str(exc).strip() or type(exc).__name__
    return StageError(classify(stage, message), stage, message)


class Prepared:
    """A function exported and loaded: `run(*numpy_arrays)` returns a list of numpy arrays.
    `first_call_ns` (ns): export + load/compile + first run; `export_ns` and `load_ns` apart."""

    def __init__(self, run, export_ns, load_ns, first_call_ns, detail):
        self.run = run
        self.export_ns = export_ns
        self.load_ns = load_ns
        self.first_call_ns = first_call_ns
        self.detail = detail


def check_route(route, framework):
    """Raises RouteUnavailable when `framework` has no `route` or its tools are missing."""
    if route not in ROUTES:
        raise RouteUnavailable(f"unknown route `{route}` (expected one of {', '.join(ROUTES)})")
    if framework not in ROUTE_FRAMEWORKS[route]:
        raise RouteUnavailable(f"{framework} has no `{route}` route")
    needed = {"onnx": ("onnx", "onnxscript", "onnxruntime"), "stablehlo": ("iree.compiler", "iree.runtime")}[route]
    import importlib

    for mod in needed:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            raise RouteUnavailable(f"route `{route}` needs {mod} (python/ir-routes.lock): {e}") from None


def prepare(route, framework, f, example_args, device="cpu"):
    """Exports `f` (a framework callable taking arrays) at the shapes/dtypes of `example_args`
    (numpy arrays), loads it on the route's runtime and runs it once. Raises RouteUnavailable or
    StageError."""
    check_route(route, framework)
    if route == "onnx":
        return _prepare_torch_onnx(f, example_args, device)
    return _prepare_jax_stablehlo(f, example_args, device)


def _as_list(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _prepare_torch_onnx(f, args, device):
    import numpy as np
    import onnxruntime as ort
    import torch

    class Wrapped(torch.nn.Module):
        def forward(self, *a):
            return f(*a)

    t0 = time.perf_counter_ns()
    try:
        program = torch.onnx.export(Wrapped(), tuple(torch.from_numpy(np.asarray(a)) for a in args), dynamo=True, verbose=False)
        model = program.model_proto.SerializeToString()
    except Exception as e:
        raise _fail("export", e) from None
    t1 = time.perf_counter_ns()
    if device == "cpu":
        providers = ["CPUExecutionProvider"]
    elif device.startswith("cuda:"):
        providers = [("CUDAExecutionProvider", {"device_id": int(device.split(":")[1])}), "CPUExecutionProvider"]
    else:
        raise RouteUnavailable(f"onnx route has no execution provider for {device}")
    try:
        session = ort.InferenceSession(model, providers=providers)
    except Exception as e:
        raise _fail("load", e) from None
    t2 = time.perf_counter_ns()
    names = [i.name for i in session.get_inputs()]

    def run(*xs):
        return session.run(None, dict(zip(names, xs)))

    try:
        run(*args)
    except Exception as e:
        raise _fail("run", e) from None
    t3 = time.perf_counter_ns()
    detail = {"providers": session.get_providers(), "opset": [(o.domain, o.version) for o in program.model_proto.opset_import]}
    return Prepared(run, t1 - t0, t2 - t1, t3 - t0, detail)


def _prepare_jax_stablehlo(f, args, device):
    import iree.compiler as ireec
    import iree.runtime as ireert
    import jax
    import numpy as np
    from jax import export

    t0 = time.perf_counter_ns()
    try:
        exported = export.export(jax.jit(f))(*[jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args])
        exported = export.deserialize(exported.serialize())
        mlir = exported.mlir_module()
    except Exception as e:
        raise _fail("export", e) from None
    t1 = time.perf_counter_ns()
    if device == "cpu":
        backend, driver, extra = "llvm-cpu", "local-task", ["--iree-llvmcpu-target-cpu=host"]
    elif device.startswith("cuda:"):
        backend, driver, extra = "cuda", "cuda", []
    else:
        raise RouteUnavailable(f"stablehlo route has no IREE target for {device}")
    try:
        vmfb = ireec.compile_str(mlir, target_backends=[backend], input_type="stablehlo", extra_args=extra)
        module = ireert.load_vm_flatbuffer(vmfb, driver=driver)
    except Exception as e:
        raise _fail("load", e) from None
    t2 = time.perf_counter_ns()

    def run(*xs):
        return [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in _as_list(module.main(*xs))]

    try:
        run(*args)
    except Exception as e:
        raise _fail("run", e) from None
    t3 = time.perf_counter_ns()
    return Prepared(run, t1 - t0, t2 - t1, t3 - t0, {"iree_target": backend, "driver": driver})


if __name__ == "__main__":
    # A smoke check with the real exporters and runtimes: one function that survives each route,
    # one the exporter refuses, one the IR compiler refuses. Prints one line per case.
    import sys

    import numpy as np

    x = np.random.default_rng(0).random((4, 4), dtype=np.float32)
    checks = []
    if "torch" in sys.argv[1:] or len(sys.argv) == 1:
        import torch

        checks += [("onnx", "torch", "torch.sin", torch.sin), ("onnx", "torch", "torch.linalg.det", torch.linalg.det)]
    if "jax" in sys.argv[1:] or len(sys.argv) == 1:
        import jax.numpy as jnp

        checks += [
            ("stablehlo", "jax", "jnp.sin", jnp.sin),
            ("stablehlo", "jax", "jnp.nonzero", lambda a: jnp.nonzero(a > 0.5)),
            ("stablehlo", "jax", "jnp.linalg.det", jnp.linalg.det),
        ]
    for route, fw, name, fn in checks:
        try:
            p = prepare(route, fw, fn, [x])
            print(f"{route} {fw} {name}: ran, export {p.export_ns / 1e6:.0f} ms, load {p.load_ns / 1e6:.0f} ms")
        except StageError as e:
            print(f"{route} {fw} {name}: {e.outcome} at {e.stage}: {str(e).splitlines()[0][:120]}")
