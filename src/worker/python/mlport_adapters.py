"""Framework adapters: canonical device and dtype names to each framework's own,
moving NumPy inputs onto the device, synchronising after a call, detecting silent
host fallback, and turning outputs back into NumPy arrays (.npy files).

Device names are mlport's canonical ones: cpu, cuda:N, tpu:N, xla:N, mps, xpu:N.
`xla:N` is PyTorch/XLA on its CPU PJRT client (PJRT_DEVICE=CPU, set by the core): torch ops
are traced into an XLA graph that XLA compiles for the host, the lowering TPUs use; on a TPU
VM (PJRT_DEVICE=TPU) the same adapter reports the device as tpu:N.
Synchronisation per adapter (after every timed call):
  numpy       none needed (synchronous host code)
  torch       torch.cuda/xpu.synchronize(device) or torch.mps.synchronize(); nothing on cpu;
              xla:N/tpu:N: torch_xla.sync() (xm.mark_step: cut the traced graph, compile it
              or take it from the cache, launch it) then xm.wait_device_ops() (wait until
              the device has finished every launched graph)
  jax         block_until_ready() on every array leaf of the output
  tensorflow  tf.test.experimental.sync_devices() off the host; eager CPU ops are synchronous
Silent fallback: TensorFlow soft device placement is turned off; PyTorch's MPS CPU
fallback is disabled through PYTORCH_ENABLE_MPS_FALLBACK=0; for every framework the
outputs' devices are checked against the target after the first call. On xla:N/tpu:N the
torch adapter also reads torch_xla's metrics after the first call and again after the steady
state (or --quick's second call): each `aten::NAME` counter counts calls of an operator
PyTorch/XLA has no lowering for and ran on the host CPU (`torch_xla.debug.metrics`, counters
cleared just before the first call); `aten::_local_scalar_dense`, a tensor read as a Python
number (`.item()`), is a host read, not a fallback, and is left out.
Framework defaults as shipped: JAX runs with jax_enable_x64 OFF, as JAX users have it,
unless the core sets MLPORT_JAX_X64=1 (mlport run --jax-x64): an int64/float64 case then gets
int32/float32 arrays, as a JAX user's code would. A float64 self-reference of JAX or Keras on
JAX runs inside jax.enable_x64(True) (reference_scope) in the same worker: JAX keys its caches
of traced and compiled code on the switch, so the cases the worker runs next see it off again.
Every process-wide switch an adapter sets is reported in the hello's `settings`
(docs/protocol.md).

Timing semantics, the same for every framework (mlport_worker.blocked): a block of N
calls is issued back to back and synchronised ONCE, after the last call, with the
adapter's synchronize() above; the block's time over N is the sample. On the host this
is plain wall time; on CUDA/XPU/MPS the device queue runs in order, so waiting for the
last call waits for all N; TPU (torch_xla) and JAX wait on the last output's readiness.

Threads (mlport run --threads N, passed as MLPORT_THREADS; the core also sets
OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS for NumPy/BLAS):
  torch       torch.set_num_threads(N) and, where still allowed, set_num_interop_threads(N)
  tensorflow  tf.config.threading intra-op and inter-op parallelism N
  jax         XLA_FLAGS --xla_cpu_multi_thread_eigen=false when N == 1 (set by the core;
              XLA has no portable per-count flag), reported as N
Each adapter's threads() reports what the framework itself says, recorded with the run.

Execution modes (mlport run --modes eager,compiled; docs/modes.md). A worker runs one
target, a device plus a mode. `eager` is each framework's ordinary dispatch (JAX's
op-by-op). In `compiled` mode the case's timed callable is compiled as a whole:
  torch       torch.compile(), default backend (Inductor), graph breaks allowed and counted
              (Dynamo's counters["graph_break"]); `compiled_fullgraph`: torch.compile(
              fullgraph=True), a graph break is an error; Dynamo's caches are reset before
              each case; compilations counted as Dynamo's unique graphs
  jax         jax.jit of the zero-argument callable, with JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS
              so closed-over input arrays are executable arguments, not constants XLA
              could fold; compilations counted as traces
  tensorflow  tf.function(jit_compile=True); compilations counted as traces
  numpy       has no compiled mode (load refuses it); only torch has compiled_fullgraph
  onnxruntime has no compiled mode either: its model is a graph already, optimised once when
              the case's InferenceSession is created (setup, untimed)
Case code may choose a smaller compile boundary with ctx.compile(f); the whole callable
is then left as it is.
"""

import contextlib
import functools
import gc
import hashlib
import importlib
import os
import re
import sys

import numpy as np

import mlport_inputs as inputs
import mlport_routes as routes

JAX_X64 = os.environ.get("MLPORT_JAX_X64") == "1"

_threads_env = os.environ.get("MLPORT_THREADS")
THREADS = int(_threads_env) if _threads_env and _threads_env.isdigit() and int(_threads_env) > 0 else None

MODES = ("eager", "compiled", "compiled_fullgraph") + routes.ROUTES
DEVICE_RE = re.compile(r"^(cpu|mps|(cuda|tpu|xla|xpu|vulkan):(\d+))$")
MAX_SAVED_OUTPUTS = 16
# Output arrays larger than this are described (shape, dtype) but not written as .npy.
MAX_SAVED_BYTES = 64 * 1024 * 1024


def parse_device(device):
    m = DEVICE_RE.match(device)
    if not m:
        raise ValueError(f"not a canonical device name: {device!r} (cpu, cuda:N, tpu:N, xla:N, mps, xpu:N, vulkan:N)")
    if m.group(2):
        return m.group(2), int(m.group(3))
    return m.group(1), 0


ROOTS = {"tf": "tensorflow", "np": "numpy", "jnp": "jax.numpy"}


def resolve(qualified):
    """The object a fully qualified name denotes; raises AttributeError/ImportError
    when this framework version has no such name (recorded as api_missing)."""
    parts = qualified.split(".")
    if parts[0] in ROOTS:
        parts = ROOTS[parts[0]].split(".") + parts[1:]
    # Walk attributes from the root; import a submodule only where its parent package
    # does not expose it (tensorflow.distribute, say, is not the public tf.distribute).
    obj = importlib.import_module(parts[0])
    for i in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[i])
        except AttributeError as missing:
            try:
                obj = importlib.import_module(".".join(parts[: i + 1]))
            except ImportError:
                raise missing from None
    return obj


def package_versions():
    from importlib import metadata

    out = {}
    for name in ("numpy", "scipy", "torch", "torch-xla", "jax", "jaxlib", "tensorflow", "tensorflow-cpu", "keras",
                 "ml_dtypes", "onnx", "onnxruntime", "onnxruntime-gpu"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def leaves(out):
    """Flatten tuples, lists, namedtuples and dicts (sorted keys) into leaves."""
    if isinstance(out, dict):
        for k in sorted(out, key=str):
            yield from leaves(out[k])
    elif isinstance(out, (tuple, list)):
        for x in out:
            yield from leaves(x)
    else:
        yield out


class CompileCounter:
    """Counts the compilations of one case in compiled mode. JAX and TensorFlow count traces
    (a Python side effect in the traced function runs once per trace); torch counts the
    graphs Dynamo hands to its backend since the case began (Dynamo's `unique_graphs`), and
    the graph breaks Dynamo took (`counters["graph_break"]`, summed over reasons)."""

    def __init__(self, adapter):
        self._adapter = adapter
        self.traces = 0
        self.chosen_by_case = False
        self._start = adapter.compile_clock()
        self._breaks_start = adapter.break_clock()

    def count(self):
        """Compilations so far in this case."""
        return self.traces + self._adapter.compile_clock() - self._start

    def breaks(self):
        """Graph breaks so far in this case (torch's `compiled` mode); None elsewhere."""
        now = self._adapter.break_clock()
        return None if now is None else now - self._breaks_start


class Ctx:
    """What catalogue code's build(ctx, *inputs, **kwargs) receives."""

    def __init__(self, adapter, fn, dtype, seed):
        self.fn = fn
        self.fw = adapter.root
        self.np = np
        self.device = adapter.native_device
        self.device_name = adapter.device
        self.dtype_name = dtype
        self.dtype = adapter.native_dtype(dtype)
        self.rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 1_000_003])
        self._adapter = adapter
        self.mode = adapter.mode
        self.compiles = CompileCounter(adapter) if adapter.compiled else None

    def compile(self, f):
        """`f` compiled the way the target's mode compiles (torch.compile(fullgraph=True),
        jax.jit, tf.function(jit_compile=True)), its compilations counted; `f` itself in
        eager mode. A case that calls it chooses its own compile boundary: the worker then
        does not compile the whole timed callable."""
        if self.compiles is None:
            return f
        self.compiles.chosen_by_case = True
        return self._adapter.compile(f, self.compiles)

    def tensor(self, x, dtype=None):
        """A NumPy array or Python value as a framework array on the target device."""
        arr = np.asarray(x)
        name = dtype or (self.dtype_name if arr.dtype.kind == "f" else str(arr.dtype))
        return self._adapter.to_framework(arr.astype(inputs.numpy_dtype(name)), {"dtype": name}, name)

    def sync(self, out=None):
        self._adapter.synchronize(out)


class Adapter:
    name = "?"
    root = None
    # Whether `compiled_fullgraph` differs from `compiled` (torch.compile's fullgraph=True).
    has_fullgraph = False

    def __init__(self, device, mode="eager"):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} ({', '.join(MODES)})")
        self.device = device
        self.mode = mode
        # Either compiled mode; compiled_fullgraph differs from compiled for torch only.
        self.compiled = mode in ("compiled", "compiled_fullgraph")
        # An export route (mlport_routes): cases leave the framework through ONNX or StableHLO.
        self.route = None
        if mode in routes.ROUTES:
            self.route = routes.Route(mode, self.name, device)
        if mode == "compiled_fullgraph" and not self.has_fullgraph:
            raise ValueError(f"{self.name} has no compiled_fullgraph mode: its compiled mode already takes the whole call")
        self.kind, self.index = parse_device(device)
        if self.kind == "vulkan":
            # No framework runs on a Vulkan device: the case's arrays live on the host and the
            # route carries the function to the device (mlport_routes, docs/vulkan.md).
            if self.route is None:
                raise ValueError(f"{device} runs export routes only (stablehlo, onnx), not {mode}")
            self.kind, self.index, self.device = "cpu", 0, "cpu"
        self.native_device = None

    def begin_case(self):
        """Called before each case: a compiled target forgets what earlier cases compiled."""

    def compile(self, f, counter):
        """`f` compiled by this framework's compiler, its compilations added to `counter`."""
        raise NotImplementedError(f"{self.name} has no compiled mode")

    def compile_clock(self):
        """A count of compilations that only grows (0 where traces are counted instead)."""
        return 0

    def break_clock(self):
        """A count of graph breaks that only grows; None where the compiler has none (jax.jit
        and tf.function(jit_compile=True) take the whole call or fail)."""
        return None

    def warm_compiler(self):
        """Compiles and runs a one-element `x + 1` once at start-up, so the compiler's one-time
        set-up (imports, backend initialisation, the first C++ toolchain call) is not charged
        to the first case's first call; then forgets it."""
        try:
            one = self.to_framework(np.ones(1, np.float32), {"dtype": "float32"}, "float32")
            with self.on_device():
                self.synchronize(self.compile(lambda: one + 1, CompileCounter(self))())
        except Exception:  # noqa: BLE001 - the first case meets (and reports) whatever this met
            pass
        self.begin_case()

    def devices(self):
        return [{"device": "cpu", "available": True, "native": "cpu", "detail": ""}]

    def threads(self):
        return THREADS or os.cpu_count()

    def settings(self):
        """The process-wide switches this worker set in its framework, name -> value (the hello's
        `settings`; docs/protocol.md lists them). Thread counts are reported apart (threads())."""
        return {}

    def context(self, fn, dtype, seed):
        return Ctx(self, fn, dtype, seed)

    def resolve(self, qualified):
        """The object a catalogue function's name denotes (module-level `resolve`, an attribute
        walk); AttributeError/ImportError when this framework version has none (api_missing)."""
        return resolve(qualified)

    def on_device(self):
        return contextlib.nullcontext()

    def reference_scope(self):
        """The context a float64 reference is computed in (JAX: 64-bit types on)."""
        return contextlib.nullcontext()

    def native_dtype(self, name):
        return np.dtype(name)

    def to_framework(self, arr, spec, dtype):
        return arr

    def synchronize(self, out):
        pass

    def watch_fallback(self):
        """Called just before a case's first call: start counting host fallbacks (torch_xla)."""

    def fallback_check(self, out):
        """After the first call: why the call did not run (wholly) on the target device, or None."""
        return None

    def device_peak_reset(self):
        """Workloads: start counting the device's peak allocated memory (frameworks that report it)."""

    def device_peak(self):
        """Peak device memory the framework allocated since `device_peak_reset`, bytes; None on
        the cpu and where the framework does not report it."""
        return None

    def steady_fallback_check(self):
        """After the calls that follow the first: a fallback seen only then, or None."""
        return None

    def is_array(self, x):
        """Whether `x` is one of the framework's arrays (an export route's graph input)."""
        return isinstance(x, np.ndarray)

    def to_numpy(self, leaf):
        """(array, canonical dtype name) or None when the leaf is not array-like."""
        if isinstance(leaf, (np.ndarray, np.generic)) or isinstance(leaf, (bool, int, float, complex)):
            a = np.asarray(leaf)
            if a.dtype.name == "bfloat16":  # ml_dtypes' (NumPy's kind "V")
                return a, "bfloat16"
            if a.dtype.kind not in "biufc":  # object, strings, structured: not an array to compare
                return None
            # The canonical name whatever the byte order (`>f4` is float32).
            return a, a.dtype.name
        return None

    def _passthrough(self, arr, spec):
        how = spec.get("as", "tensor")
        if how == "numpy":
            return arr
        if how == "list":
            return arr.tolist()
        if how == "scalar" or not isinstance(arr, np.ndarray):
            return arr.item() if isinstance(arr, np.ndarray) else arr
        return None


def save_outputs(adapter, out, out_dir, key):
    """Write up to MAX_SAVED_OUTPUTS array leaves as .npy; describe every leaf."""
    descs = []
    for i, leaf in enumerate(leaves(out)):
        if i >= MAX_SAVED_OUTPUTS:
            break
        conv = adapter.to_numpy(leaf)
        if conv is None:
            descs.append({"index": i, "kind": "object", "type": type(leaf).__module__ + "." + type(leaf).__qualname__})
            continue
        arr, dtname = conv
        d = {"index": i, "kind": "array", "dtype": dtname, "shape": list(arr.shape)}
        if isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic):
            # A Python number has no width: NumPy stores an int as int64, but the framework
            # returned `int` (docs/protocol.md, "outputs"; judged by kind, docs/catalogue.md).
            d["python"] = type(leaf).__name__
        if arr.nbytes > MAX_SAVED_BYTES:
            d["not_saved"] = f"{arr.nbytes} bytes, over the {MAX_SAVED_BYTES} byte limit"
        elif out_dir:
            # Readable and unique: distinct keys that sanitise alike (`a:b`, `a_b`) differ in the hash.
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(key))[:100]
            digest = hashlib.sha256(str(key).encode()).hexdigest()[:12]
            path = os.path.join(out_dir, f"{safe}-{digest}.out{i}.npy")
            saved = arr if dtname != "bfloat16" else arr.astype(np.float32)
            # mlport's own file: a failure (a full disk) is no outcome of the function (protocol 8).
            inputs.own_io(path, "write", lambda: inputs.save_npy(path, saved), cleanup=path)
            d["path"] = path
        descs.append(d)
    return descs


class NumpyAdapter(Adapter):
    name = "numpy"

    def __init__(self, device, mode="eager"):
        if mode != "eager":
            raise ValueError("numpy has no compiled mode: NumPy runs eagerly only")
        super().__init__(device, mode)
        self.root = np
        self.version = np.__version__
        self.native_device = "cpu"

    def to_framework(self, arr, spec, dtype):
        p = self._passthrough(arr, spec)
        if p is not None:
            return p
        want = self.native_dtype(spec.get("dtype", dtype))
        return arr if arr.dtype == want else arr.astype(want)

    def native_dtype(self, name):
        if name == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(name)

    def to_numpy(self, leaf):
        conv = super().to_numpy(leaf)
        if conv is not None and conv[1] == "bfloat16":
            return conv[0].astype(np.float32), "bfloat16"
        return conv


class TorchAdapter(Adapter):
    name = "torch"
    has_fullgraph = True

    def __init__(self, device, mode="eager"):
        super().__init__(device, mode)
        import torch

        self.torch = torch
        self._graphs = None
        if self.compiled:
            import torch._dynamo  # noqa: F401  (imported now, not inside the first case's timing)
            from torch._dynamo.utils import counters

            self._graphs = counters
        self.root = torch
        self.version = torch.__version__
        if THREADS:
            torch.set_num_threads(THREADS)
            try:
                torch.set_num_interop_threads(THREADS)
            except RuntimeError:
                pass
        self.xla = None
        if self.kind in ("tpu", "xla"):
            self.native_device = self._xla_device()
        elif self.kind in ("cuda", "xpu"):
            self.native_device = torch.device(self.kind, self.index)
        else:
            self.native_device = torch.device(self.kind)
        if self.compiled and self.native_device is not None:
            self.warm_compiler()

    def _xla_device(self):
        """torch_xla's device for xla:N (its CPU or GPU PJRT client) or tpu:N (a TPU VM's);
        None when torch_xla is missing or its device has the other kind."""
        try:
            import torch_xla
            import torch_xla.core.xla_model as xm
            import torch_xla.debug.metrics as met
            import torch_xla.runtime as xr
        except ImportError:
            return None
        if (xr.device_type() == "TPU") != (self.kind == "tpu"):
            return None
        self.xla = (torch_xla, xm, met)
        devs = xm.get_xla_supported_devices()
        return self.torch.device(devs[self.index]) if self.index < len(devs) else None

    def threads(self):
        return self.torch.get_num_threads()

    def settings(self):
        out = {"PYTORCH_ENABLE_MPS_FALLBACK": os.environ.get("PYTORCH_ENABLE_MPS_FALLBACK")}
        if self.xla is not None:
            out["PJRT_DEVICE"] = os.environ.get("PJRT_DEVICE")
            out["torch_xla fallback counters checked"] = True
        if self.compiled:
            out["torch._dynamo.reset per case"] = True
            out["torch.compile fullgraph"] = self.mode == "compiled_fullgraph"
            out["TORCHINDUCTOR_CACHE_DIR"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        return out

    def device_peak_reset(self):
        if self.kind == "cuda":
            self.torch.cuda.reset_peak_memory_stats(self.native_device)

    def device_peak(self):
        if self.kind == "cuda":
            return int(self.torch.cuda.max_memory_allocated(self.native_device))
        return None

    def begin_case(self):
        if self.compiled:
            # One worker compiles many cases: without a reset, Dynamo's per-code-object cache
            # (and its recompile limit) would carry over from case to case.
            self.torch._dynamo.reset()
        if self.xla is not None:
            # A case that failed inside PyTorch/XLA's lazy graph leaves tensors behind (held in
            # reference cycles through the exception's traceback until the cyclic collector
            # runs) and pending IR; the next case's sync, which executes every live tensor's
            # graph, would fail on them ("Check failed: tensor_data"): each case starts clean.
            gc.collect()
            try:
                self.xla[0]._XLAC._clear_pending_irs(str(self.native_device))
            except Exception:  # noqa: BLE001 - an older torch_xla without it: as before
                pass

    def compile_clock(self):
        return self._graphs["stats"]["unique_graphs"] if self._graphs is not None else 0

    def break_clock(self):
        # Dynamo counts each graph break it takes, by reason (`counters["graph_break"]`).
        return sum(self._graphs["graph_break"].values()) if self._graphs is not None else 0

    def compile(self, f, counter):
        # `compiled`: torch.compile's defaults, as users run it: a graph break returns to eager
        # Python for that part (counted). `compiled_fullgraph`: fullgraph=True, a graph break is
        # an error (compile_error) (docs/modes.md). Default backend: Inductor.
        def case(*args, **kwargs):
            return f(*args, **kwargs)

        return self.torch.compile(case, fullgraph=self.mode == "compiled_fullgraph")

    def devices(self):
        t = self.torch
        out = [{"device": "cpu", "available": True, "native": "cpu", "detail": f"{t.get_num_threads()} threads"}]
        if t.cuda.is_available():
            for i in range(t.cuda.device_count()):
                out.append({"device": f"cuda:{i}", "available": True, "native": f"cuda:{i}",
                            "detail": t.cuda.get_device_name(i)})
        if getattr(t.backends, "mps", None) is not None and t.backends.mps.is_available():
            out.append({"device": "mps", "available": True, "native": "mps", "detail": ""})
        if hasattr(t, "xpu") and t.xpu.is_available():
            for i in range(t.xpu.device_count()):
                out.append({"device": f"xpu:{i}", "available": True, "native": f"xpu:{i}", "detail": ""})
        try:
            import torch_xla
            import torch_xla.core.xla_model as xm
            import torch_xla.runtime as xr

            canon = "tpu" if xr.device_type() == "TPU" else "xla"
            detail = f"torch_xla {torch_xla.__version__}, PJRT_DEVICE={xr.device_type()}"
            for i, d in enumerate(xm.get_xla_supported_devices()):
                out.append({"device": f"{canon}:{i}", "available": True, "native": str(d), "detail": detail})
        except Exception:
            pass
        return out

    def on_device(self):
        # torch.device(...) as a context manager is a TorchFunctionMode: every torch call in
        # it pays a Python-level dispatch (~1 µs, doubling a 1e3-element add). CPU is torch's
        # default device, so it needs none; elsewhere factory calls (torch.zeros(3)) need it
        # to land on the device, and its cost is part of what is timed there.
        if self.kind == "cpu":
            return contextlib.nullcontext()
        return self.torch.device(self.native_device)

    def native_dtype(self, name):
        return getattr(self.torch, name)

    def to_framework(self, arr, spec, dtype):
        p = self._passthrough(arr, spec)
        if p is not None:
            return p
        t = self.torch.from_numpy(np.ascontiguousarray(arr))
        return t.to(device=self.native_device, dtype=self.native_dtype(spec["dtype"]))

    def synchronize(self, out):
        k = self.kind
        if k == "cuda":
            self.torch.cuda.synchronize(self.native_device)
        elif k == "mps":
            self.torch.mps.synchronize()
        elif k == "xpu":
            self.torch.xpu.synchronize(self.native_device)
        elif self.xla is not None:
            torch_xla, xm, _ = self.xla
            sync = getattr(torch_xla, "sync", None) or xm.mark_step  # torch_xla.sync() since 2.6
            sync()
            xm.wait_device_ops()

    def watch_fallback(self):
        if self.xla is not None:
            self.xla[2].clear_counters()

    # `aten::_local_scalar_dense` is a tensor read as a Python number (`.item()`, `bool(t)`,
    # a library's own check of an `info` result): torch_xla counts it with the fallbacks, but the
    # computation stayed on the device and only the scalar came back. A host read, not a missing
    # lowering, so never a silent fallback; its cost shows in the steady-state time.
    HOST_READS = frozenset({"aten::_local_scalar_dense"})

    def xla_fallbacks(self):
        """torch_xla's `aten::NAME` counters since the last clear, host reads left out: "" when none,
        else "aten::NAME (Nx), ..." (torch_xla/csrc/aten_cpu_fallback.cpp counts each operator it
        ran through its CPU fallback)."""
        met = self.xla[2]
        fell = sorted(n for n in met.counter_names() if n.startswith("aten::") and n not in self.HOST_READS)
        return ", ".join(f"{n} ({met.counter_value(n)}x)" for n in fell)

    def steady_fallback_check(self):
        """After the calls that follow the first: operators that fell back to the host only then
        (the counters are cleared once, before the first call, which had none). None when none."""
        if self.xla is None:
            return None
        calls = self.xla_fallbacks()
        if calls:
            return f"ran on the host through PyTorch/XLA's CPU fallback after the first call: {calls}"
        return None

    def fallback_check(self, out):
        if self.kind == "cpu":
            return None
        if self.xla is not None:
            # torch_xla counts each operator it ran through its CPU fallback as `aten::NAME`
            # (torch_xla/csrc/aten_cpu_fallback.cpp); cleared just before the first call.
            calls = self.xla_fallbacks()
            if calls:
                return f"ran on the host through PyTorch/XLA's CPU fallback: {calls}"
        want = self.native_device.type
        for leaf in leaves(out):
            if isinstance(leaf, self.torch.Tensor) and leaf.device.type != want:
                return f"output on {leaf.device}, expected {self.device}"
        return None

    def is_array(self, x):
        return isinstance(x, self.torch.Tensor)

    def to_numpy(self, leaf):
        t = self.torch
        if isinstance(leaf, t.Tensor):
            leaf = leaf.detach()
            if leaf.layout != t.strided:
                leaf = leaf.to_dense()
            name = str(leaf.dtype).replace("torch.", "")
            if leaf.dtype == t.bfloat16:
                return leaf.float().cpu().numpy(), name
            if leaf.dtype == t.complex32:  # NumPy has no complex32 (OpInfo's chalf, view_as_complex of half)
                return leaf.to(t.complex64).cpu().resolve_conj().resolve_neg().numpy(), name
            if leaf.dtype.is_floating_point and leaf.dtype not in (t.float16, t.float32, t.float64):
                return leaf.float().cpu().numpy(), name  # float8 kinds: their exact float32 values
            return leaf.cpu().resolve_conj().resolve_neg().numpy(), name
        return super().to_numpy(leaf)


class JaxAdapter(Adapter):
    name = "jax"

    def __init__(self, device, mode="eager"):
        super().__init__(device, mode)
        if mode == "compiled":
            # Closed-over arrays (a case's inputs) become arguments of the executable instead
            # of constants embedded in it, which XLA would fold: without this, jax.jit of
            # `lambda: jnp.sin(x) @ x` compiles to returning a constant.
            os.environ["JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS"] = "True"
        import jax

        # Set either way, so that a JAX_ENABLE_X64 in the user's environment cannot change
        # what the run records.
        jax.config.update("jax_enable_x64", JAX_X64)
        if mode == "compiled":
            jax.config.update("jax_use_simplified_jaxpr_constants", True)
        import jax.numpy as jnp

        self.jax = jax
        self.jnp = jnp
        self.root = jax
        self.version = jax.__version__
        self.native_device = self._find(self.kind, self.index)
        if mode == "compiled" and self.native_device is not None:
            self.warm_compiler()

    def settings(self):
        out = {"jax_enable_x64": bool(self.jax.config.jax_enable_x64)}
        if self.mode == "compiled":
            out["jax_use_simplified_jaxpr_constants"] = True
        return out

    def _find(self, kind, index):
        backend = {"cpu": "cpu", "cuda": "gpu", "tpu": "tpu", "mps": "METAL", "xpu": "xpu"}[kind]
        try:
            devs = self.jax.devices(backend)
        except RuntimeError:
            return None
        return devs[index] if index < len(devs) else None

    def devices(self):
        out = []
        for backend, canon in (("cpu", "cpu"), ("gpu", "cuda"), ("tpu", "tpu"), ("METAL", "mps")):
            try:
                devs = self.jax.devices(backend)
            except RuntimeError:
                continue
            for i, d in enumerate(devs):
                name = canon if canon in ("cpu", "mps") else f"{canon}:{i}"
                if canon in ("cpu", "mps") and i > 0:
                    continue
                out.append({"device": name, "available": True, "native": str(d),
                            "detail": getattr(d, "device_kind", "")})
        return out

    def on_device(self):
        return self.jax.default_device(self.native_device)

    def reference_scope(self):
        # jax.enable_x64 (JAX 0.6+), jax.experimental.enable_x64 before it: the config
        # switch as a context, part of the key of JAX's trace and compile caches.
        enable_x64 = getattr(self.jax, "enable_x64", None)
        if enable_x64 is None:
            from jax.experimental import enable_x64
        return enable_x64(True)

    def compile(self, f, counter):
        def traced(*args, **kwargs):
            counter.traces += 1  # runs once per trace
            return f(*args, **kwargs)

        return self.jax.jit(traced)

    def native_dtype(self, name):
        return getattr(self.jnp, name)

    def to_framework(self, arr, spec, dtype):
        p = self._passthrough(arr, spec)
        if p is not None:
            return p
        return self.jax.device_put(self.jnp.asarray(arr, dtype=self.native_dtype(spec["dtype"])), self.native_device)

    def synchronize(self, out):
        for leaf in self.jax.tree_util.tree_leaves(out):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()

    # `aten::_local_scalar_dense` is a tensor read as a Python number (`.item()`, `bool(t)`,
    # a library's own check of an `info` result): torch_xla counts it with the fallbacks, but the
    # computation stayed on the device and only the scalar came back. A host read, not a missing
    # lowering, so never a silent fallback; its cost shows in the steady-state time.
    def fallback_check(self, out):
        if self.kind == "cpu":
            return None
        for leaf in self.jax.tree_util.tree_leaves(out):
            if isinstance(leaf, self.jax.Array) and self.native_device not in leaf.devices():
                return f"output on {leaf.devices()}, expected {self.device}"
        return None

    def is_array(self, x):
        return isinstance(x, self.jax.Array)

    def to_numpy(self, leaf):
        if isinstance(leaf, self.jax.Array):
            name = str(leaf.dtype)
            a = np.asarray(leaf)
            if name == "bfloat16":
                a = a.astype(np.float32)
            return a, name
        return super().to_numpy(leaf)


class TensorflowAdapter(Adapter):
    name = "tensorflow"

    def __init__(self, device, mode="eager"):
        super().__init__(device, mode)
        import tensorflow as tf

        tf.config.set_soft_device_placement(False)
        if THREADS:
            tf.config.threading.set_intra_op_parallelism_threads(THREADS)
            tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        for gpu in tf.config.list_physical_devices("GPU"):
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except Exception:
                pass
        self.tf = tf
        self.root = tf
        self.version = tf.__version__
        tfname = {"cpu": "CPU", "cuda": "GPU", "tpu": "TPU", "mps": "GPU", "xpu": "XPU"}[self.kind]
        self.native_device = f"/{tfname}:{self.index}"
        if mode == "compiled":
            self.warm_compiler()

    def threads(self):
        n = self.tf.config.threading.get_intra_op_parallelism_threads()
        return n if n > 0 else os.cpu_count()

    def settings(self):
        return {"tf.config.soft_device_placement": bool(self.tf.config.get_soft_device_placement()),
                "tf.config.experimental.memory_growth (GPUs)": True,
                "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL")}

    def devices(self):
        out = [{"device": "cpu", "available": True, "native": "/CPU:0", "detail": ""}]
        for i, d in enumerate(self.tf.config.list_physical_devices("GPU")):
            canon = "mps" if sys.platform == "darwin" else f"cuda:{i}"
            out.append({"device": canon, "available": True, "native": f"/GPU:{i}", "detail": d.name})
        for i, d in enumerate(self.tf.config.list_logical_devices("TPU")):
            out.append({"device": f"tpu:{i}", "available": True, "native": f"/TPU:{i}", "detail": d.name})
        return out

    def on_device(self):
        return self.tf.device(self.native_device)

    def compile(self, f, counter):
        def traced(*args, **kwargs):
            counter.traces += 1  # runs once per trace
            return f(*args, **kwargs)

        return self.tf.function(traced, jit_compile=True)

    def native_dtype(self, name):
        return getattr(self.tf, name) if name != "bool" else self.tf.bool

    def to_framework(self, arr, spec, dtype):
        p = self._passthrough(arr, spec)
        if p is not None:
            return p
        t = self.tf.constant(arr)
        if spec["dtype"] == "bfloat16":
            t = self.tf.cast(t, self.tf.bfloat16)
        return t

    def synchronize(self, out):
        if self.kind != "cpu":
            self.tf.test.experimental.sync_devices()

    # `aten::_local_scalar_dense` is a tensor read as a Python number (`.item()`, `bool(t)`,
    # a library's own check of an `info` result): torch_xla counts it with the fallbacks, but the
    # computation stayed on the device and only the scalar came back. A host read, not a missing
    # lowering, so never a silent fallback; its cost shows in the steady-state time.
    def fallback_check(self, out):
        if self.kind == "cpu":
            return None
        want = self.native_device.strip("/").split(":")[0]
        for leaf in leaves(out):
            dev = getattr(leaf, "device", None)
            if isinstance(leaf, self.tf.Tensor) and dev and f"DEVICE:{want}:" not in dev.upper():
                return f"output on {dev}, expected {self.device}"
        return None

    def is_array(self, x):
        return self.tf.is_tensor(x)

    def to_numpy(self, leaf):
        tf = self.tf
        if isinstance(leaf, (tf.Tensor, tf.Variable)):
            name = leaf.dtype.name
            if leaf.dtype == tf.bfloat16:
                leaf = tf.cast(leaf, tf.float32)
            if leaf.dtype == tf.string:
                return None
            return np.asarray(leaf.numpy()), name
        if isinstance(leaf, getattr(tf, "RaggedTensor", ())):
            return None
        return super().to_numpy(leaf)


class OnnxOp:
    """A standard ONNX operator by its schema (`ai.onnx.Sin` resolves to `OnnxOp("Sin")`): what
    `ctx.fn` is for an onnxruntime case. `since` is the newest opset that changed it."""

    def __init__(self, op_type, schema):
        self.op_type = op_type
        self.since = schema.since_version

    def __repr__(self):
        return f"ai.onnx.{self.op_type}"


class OrtCtx(Ctx):
    """The onnxruntime case context: `ort_op` builds a one-node model and its session."""

    def ort_op(self, inputs, attrs=None, opset=None, outputs=1):
        """A one-node ONNX model of `ctx.fn` over `inputs` (NumPy arrays, graph inputs x0, x1, ...;
        None for an optional input left out), with attributes `attrs`, at `opset` (default the
        operator's newest version), checked with onnx.checker and typed by ONNX shape inference;
        an InferenceSession for it on the target's execution provider, created here (setup,
        untimed). Returns the timed call: `session.run(None, feeds)`, a list of `outputs` NumPy
        arrays; where an input or output is bfloat16, which ORT's NumPy bridge refuses,
        `session.run_with_ort_values` on OrtValues made once here, a list of OrtValues that the
        adapter's to_numpy reads back after the call (measured here: ~5x the per-call cost of
        `run` for a 4x6 Relu, 210 against 37 us, so it is used only where it must be)."""
        return self._adapter.session(self.fn, inputs, attrs or {}, opset or self.fn.since, outputs)


class OnnxruntimeAdapter(Adapter):
    """ONNX Runtime, one ONNX operator per case. Functions are named `ai.onnx.<OpType>` and
    resolve through `onnx.defs` (an operator this onnx version lacks is api_missing). Devices:
    `cpu` runs on providers=["CPUExecutionProvider"], given explicitly; `cuda:N` on
    [("CUDAExecutionProvider", {"device_id": N}), "CPUExecutionProvider"] where the installed
    onnxruntime has that provider. Silent fallback, off the cpu: the session's providers
    (`get_providers()`) must include the device's, and the first call runs with ORT's profiler
    on, whose node events name the provider each node ran on: a node on another provider is a
    silent fallback. Inputs and outputs are NumPy arrays (bfloat16 as ml_dtypes.bfloat16); a model
    with a bfloat16 input or output, which ORT's NumPy bridge refuses, is fed OrtValues and its
    outputs, OrtValues, are read back from their buffers after the call. `session.run` is
    synchronous, so synchronize() has nothing to wait for. Threads: the
    session's intra-op and inter-op thread counts are MLPORT_THREADS when set."""

    name = "onnxruntime"

    def __init__(self, device, mode="eager"):
        if mode != "eager":
            raise ValueError("onnxruntime has no compiled mode: an ONNX model is already a whole graph, optimised "
                             "once when its InferenceSession is created")
        super().__init__(device, mode)
        import onnx
        import onnxruntime

        self.onnx = onnx
        self.ort = onnxruntime
        self.root = onnxruntime
        self.version = onnxruntime.__version__
        self._last = None
        if self.kind == "cpu":
            self.provider, self.providers = "CPUExecutionProvider", ["CPUExecutionProvider"]
            self.native_device = "cpu"
        elif self.kind == "cuda" and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
            self.provider = "CUDAExecutionProvider"
            self.providers = [("CUDAExecutionProvider", {"device_id": self.index}), "CPUExecutionProvider"]
            self.native_device = f"cuda:{self.index}"

    def resolve(self, qualified):
        prefix, _, op_type = qualified.rpartition(".")
        if prefix != "ai.onnx" or not op_type:
            raise AttributeError(f"{qualified!r} is not a standard ONNX operator name (ai.onnx.<OpType>)")
        if not self.onnx.defs.has(op_type):
            raise AttributeError(f"onnx {self.onnx.__version__} has no operator {op_type!r}")
        return OnnxOp(op_type, self.onnx.defs.get_schema(op_type))

    def context(self, fn, dtype, seed):
        return OrtCtx(self, fn, dtype, seed)

    def settings(self):
        return {"onnxruntime.providers": [p if isinstance(p, str) else p[0] for p in getattr(self, "providers", [])],
                "onnx": self.onnx.__version__}

    def devices(self):
        out = [{"device": "cpu", "available": True, "native": "CPUExecutionProvider", "detail": ""}]
        if "CUDAExecutionProvider" in self.ort.get_available_providers():
            out.append({"device": "cuda:0", "available": True, "native": "CUDAExecutionProvider", "detail": ""})
        return out

    def session(self, op, inputs, attrs, opset, outputs):
        """The timed call of one `op` node's InferenceSession; see OrtCtx.ort_op."""
        helper = self.onnx.helper
        names, infos, feeds = [], [], {}
        self._keep = []  # the arrays the OrtValues point into
        for i, x in enumerate(inputs):
            if x is None:
                names.append("")
                continue
            x = np.ascontiguousarray(x)
            self._keep.append(x)
            names.append(f"x{i}")
            elem = self.onnx.TensorProto.BFLOAT16 if x.dtype.name == "bfloat16" else \
                helper.np_dtype_to_tensor_dtype(x.dtype)
            feeds[f"x{i}"] = x
            infos.append(helper.make_tensor_value_info(f"x{i}", elem, x.shape))
        outs = [f"y{i}" for i in range(outputs)]
        node = helper.make_node(op.op_type, names, outs, **attrs)
        graph = helper.make_graph([node], op.op_type, infos, [helper.make_tensor_value_info(o, 0, None) for o in outs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        # The newest IR version this onnxruntime reads (10 is ONNX 1.16's), whatever onnx writes.
        model.ir_version = min(model.ir_version, 10)
        model = self.onnx.shape_inference.infer_shapes(model, strict_mode=True)
        bf16 = self.onnx.TensorProto.BFLOAT16
        ort_values = any(v.type.tensor_type.elem_type == bf16 for v in list(model.graph.input) + list(model.graph.output))
        options = self.ort.SessionOptions()
        if THREADS:
            options.intra_op_num_threads = THREADS
            options.inter_op_num_threads = THREADS
        if self.kind != "cpu":
            options.enable_profiling = True
        session = self.ort.InferenceSession(model.SerializeToString(), options, providers=self.providers)
        self._last = session
        if not ort_values:
            return functools.partial(session.run, None, feeds)
        values = {}
        for name, x in feeds.items():
            if x.dtype.name == "bfloat16":
                values[name] = self.ort.OrtValue.ortvalue_from_numpy_with_onnx_type(x.view(np.uint16), bf16)
            else:
                values[name] = self.ort.OrtValue.ortvalue_from_numpy(x)
        return functools.partial(session.run_with_ort_values, None, values)

    def to_framework(self, arr, spec, dtype):
        p = self._passthrough(arr, spec)
        if p is not None:
            return p
        want = NumpyAdapter.native_dtype(self, spec.get("dtype", dtype))
        return arr if arr.dtype == want else arr.astype(want)

    def native_dtype(self, name):
        return NumpyAdapter.native_dtype(self, name)

    def to_numpy(self, leaf):
        if hasattr(leaf, "data_type") and hasattr(leaf, "data_ptr"):  # an OrtValue
            if leaf.data_type() == "tensor(bfloat16)":
                import ctypes

                shape = tuple(leaf.shape())
                n = int(np.prod(shape, dtype=np.int64))
                raw = np.frombuffer((ctypes.c_uint16 * n).from_address(leaf.data_ptr()), np.uint16) if n else \
                    np.zeros(0, np.uint16)
                return raw.reshape(shape).astype(np.uint32).__lshift__(16).view(np.float32), "bfloat16"
            leaf = leaf.numpy()
        conv = super().to_numpy(leaf)
        if conv is not None and conv[1] == "bfloat16":
            return conv[0].astype(np.float32), "bfloat16"
        return conv

    def fallback_check(self, out):
        session, self._last = self._last, None
        if self.kind == "cpu" or session is None:
            return None
        used = session.get_providers()
        if self.provider not in used:
            return f"session providers {used}, expected {self.provider}"
        import json

        with open(session.end_profiling()) as f:
            events = json.load(f)
        away = sorted({f"{e['args'].get('op_name', e['name'])} on {e['args']['provider']}" for e in events
                       if e.get("cat") == "Node" and e.get("args", {}).get("provider") not in (None, self.provider)})
        return f"nodes ran off {self.provider}: {', '.join(away)}" if away else None


ADAPTERS = {"numpy": NumpyAdapter, "torch": TorchAdapter, "jax": JaxAdapter, "tensorflow": TensorflowAdapter,
            "onnxruntime": OnnxruntimeAdapter}


def keras_adapter(backend):
    """The adapter of framework `keras-<backend>`: the backend's own adapter (devices, inputs as
    the backend's arrays, synchronisation, compilation, export routes) with Keras 3 as the root
    that catalogue names resolve against. KERAS_BACKEND is set before Keras is imported, which
    is when Keras reads it."""
    base = ADAPTERS[backend]

    class KerasAdapter(base):
        def __init__(self, device, mode="eager"):
            os.environ["KERAS_BACKEND"] = backend
            super().__init__(device, mode)
            import keras

            if keras.config.backend() != backend:
                raise ImportError(f"keras was imported with backend {keras.config.backend()!r}, not {backend!r}")
            self.keras = keras
            self.root = keras
            self.version = f"{keras.__version__} on {backend} {self.version}"

        def settings(self):
            return dict(super().settings(), KERAS_BACKEND=backend)

    KerasAdapter.__name__ = KerasAdapter.__qualname__ = f"Keras{base.__name__}"
    return KerasAdapter


for _backend in ("jax", "torch", "tensorflow"):
    ADAPTERS[f"keras-{_backend}"] = keras_adapter(_backend)


def load(framework, device, mode="eager"):
    if framework not in ADAPTERS:
        raise ValueError(f"unknown framework {framework!r}; known: {', '.join(ADAPTERS)}")
    return ADAPTERS[framework](device, mode)
