"""mlport worker: runs catalogue cases for one framework on one device.

Started by the mlport core (Rust), one process per (framework, target): a target is a
device in an execution mode: eager, compiled, or an export route (onnx, onnx_openvino, stablehlo)
(--mode; docs/modes.md, docs/ir-routes.md). It is small
and boring on purpose: import the framework, map the device name, build inputs, call,
synchronise, time, write outputs, answer. Every decision (classification, statistics,
storage) is made by the core.

Protocol (version 8, documented in docs/protocol.md): the core writes one JSON object
per line to the worker's stdin; the worker answers one JSON object per line on a
dedicated pipe. At start-up, before any framework is imported, the worker moves the
pipe it inherited as fd 1 to a private descriptor and points fd 1 at stderr, so
nothing a library prints (Python or C level) can reach the protocol stream.

Standalone use, for catalogue authors (no core needed):
    python mlport_worker.py --framework torch --device cpu [--mode compiled] --selftest catalogue/torch.toml [--only NAME]
"""

import os
import sys

PROTOCOL_VERSION = 13

# --- Move the protocol pipe off fd 1 before anything else can write to it. ---
_PROTO_FD = os.dup(1)
os.dup2(2, 1)
sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
_PROTO = os.fdopen(_PROTO_FD, "w", buffering=1, encoding="utf-8")

# Die with the core: if the mlport process is killed, the kernel kills this worker.
if sys.platform.startswith("linux"):
    try:
        import ctypes
        import signal as _signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(_signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        pass

# No silent CPU fallback for Apple's MPS backend (PyTorch reads this at import).
os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "0"
# TensorFlow: keep its C++ logging quiet on stderr except real errors.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

try:  # NumPy is needed by every adapter; without it the hello says so
    import mlport_adapters as adapters
    import mlport_inputs as inputs
except Exception as _e:  # noqa: BLE001
    adapters = inputs = None
    _BASE_IMPORT_ERROR = _e
else:
    _BASE_IMPORT_ERROR = None


def send(obj):
    obj["v"] = PROTOCOL_VERSION
    _PROTO.write(json.dumps(obj, default=str) + "\n")
    _PROTO.flush()


def io_error_dict(e):
    """The `io_error` of a result (protocol 8): mlport's own file I/O failed (an output .npy, the
    input cache), which says nothing about the function: the core records no result and stops."""
    return {"path": e.path, "operation": e.operation, "errno": e.errno, "message": e.message}


class CaseError(Exception):
    """An exception annotated with the phase of the case in which it was raised."""

    def __init__(self, phase, exc, harness=False):
        super().__init__(str(exc))
        self.phase = phase
        self.exc = exc
        self.harness = harness


def qualified_type(exc):
    t = type(exc)
    mod = t.__module__
    return t.__qualname__ if mod in ("builtins", "__main__") else f"{mod}.{t.__qualname__}"


# A message is kept whole up to this many characters; a longer one keeps its head and its
# tail (where XLA and others name the missing kernel, after a long graph name), marked in
# the middle. Tracebacks keep their tail (the innermost frames).
MAX_MESSAGE = 65536
MAX_TRACEBACK = 32768


def head_and_tail(text, limit):
    """`text` whole if it fits in `limit` characters, else its first and last halves with a
    note of how much was left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out by mlport ...]\n{text[-half:]}"


def error_dict(exc, phase, harness):
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {
        "type": qualified_type(exc),
        "message": head_and_tail(str(exc), MAX_MESSAGE),
        "traceback": head_and_tail(tb, MAX_TRACEBACK),
        "phase": phase,
        "harness": harness,
    }


def is_harness_error(exc, case_filename):
    """True when the exception is our bug, not the framework's: a name or syntax error
    in catalogue code, or an error raised by the worker's own input building."""
    if isinstance(exc, (SyntaxError, NameError, UnboundLocalError)):
        tb = exc.__traceback__
        last = None
        while tb is not None:
            last = tb
            tb = tb.tb_next
        if last is None or last.tb_frame.f_code.co_filename == case_filename:
            return True
        return isinstance(exc, SyntaxError)
    return False


def compile_case_code(code, label):
    filename = f"<catalogue:{label}>"
    # The source in linecache, as for a file: tracebacks quote its lines, and inspect.getsource
    # finds it, which TensorFlow's autograph needs to convert Python loops and branches inside
    # tf.function (compiled mode); without it they would run as Python at trace time.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    # A module of its own (in sys.modules, as an imported file's), so inspect.getmodule finds
    # it: autograph converts a function only when it can read its module's globals.
    # (No __file__: autograph would then "refresh" the linecache entry from a file that does
    # not exist, dropping it.)
    module = types.ModuleType(f"mlport_case_{abs(hash(label))}")
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    exec(compile(code, filename, "exec"), namespace)
    build = namespace.get("build")
    if build is None:
        raise NameError(f"catalogue code for {label} defines no build(ctx, *inputs, **kwargs)")
    return build, filename


def run_case(adapter, req):
    """Run one case, or compute a float64 reference inside the adapter's reference_scope (JAX:
    64-bit types on); return the result message (never raises)."""
    if req.get("reference"):
        with adapter.reference_scope():
            return _run_case(adapter, req)
    return _run_case(adapter, req)


def _run_case(adapter, req):
    case = req["case"]
    dtype = req.get("dtype") or "float32"
    label = f"{case['function']}[{case.get('id', 'default')}:{dtype}]"
    timing = req.get("timing") or {}
    out_dir = req.get("out_dir")
    result = {"kind": "result", "case_key": req.get("case_key"), "nonce": req.get("nonce")}
    phase = "resolve"
    case_filename = None
    # A case of a framework's own test suite (OpInfo, ModuleInfo, JAX harnesses): its
    # `function` is a public name that may not resolve, and its sample comes from the suite
    # (mlport_suites.build), not from `inputs`.
    suite_ref = case.get("suite")
    try:
        if suite_ref:
            phase = "inputs"
            import mlport_suites as suites  # only workers that run suite cases pay for it

            fn = None
            # The sample is generated on the CPU at the case's dtype, reference or not; errors
            # of the suite's own generator are harness errors. The case begins first: what
            # begin_case clears (torch_xla's pending IR) must not hold the sample's own copy to
            # the device.
            adapter.begin_case()
            try:
                suite_call = suites.build(adapter, None, suite_ref, dtype, req.get("seed", 0),
                                          bool(req.get("reference")), upcast_integers=bool(req.get("upcast_integers")))
            except suites.SampleError as e:  # the suite's own generator: not the framework's failure
                raise CaseError("inputs", e.exc, harness=True)
            except suites.TransferError as e:  # the sample onto the device
                raise CaseError("inputs", e.exc)
            except Exception as e:  # building the callable (a module's constructor)
                raise CaseError("setup", e)
        else:
            try:
                fn = adapter.resolve(case["function"])
            except (AttributeError, ImportError, ModuleNotFoundError) as e:
                raise CaseError("resolve", e)
        phase = "inputs"
        reference = bool(req.get("reference"))
        try:
            np_inputs = [] if suite_ref else inputs.build_all(
                case.get("inputs", []), dtype, req.get("seed", 0), req.get("inputs_dir"), req.get("input_key")
            )
            if reference and not suite_ref:  # the float64 reference: the same values, in double precision
                widen_integers = bool(req.get("upcast_integers"))
                np_inputs = inputs.upcast(np_inputs, integers=dtype if widen_integers else None)
                dtype = "float64" if widen_integers else inputs.reference_dtype(dtype)
        except inputs.OwnIOError:
            raise
        except Exception as e:  # our own spec handling: a harness error
            raise CaseError("inputs", e, harness=True)
        if not suite_ref:  # a suite's case began before its sample was built
            adapter.begin_case()
        workload = bool(case.get("workload")) and not reference
        if workload:  # peak memory is the case's own: reset the kernel's high-water mark
            reset_peak_rss()
            adapter.device_peak_reset()
        ctx = adapter.context(fn, dtype, req.get("seed", 0))
        compiled = ctx.compiles is not None and not reference
        with adapter.on_device():
            try:
                fw_inputs = [adapter.to_framework(a, spec, dtype) for a, spec in np_inputs]
            except Exception as e:
                raise CaseError("inputs", e)
            kwargs = inputs.resolve_kwargs(case.get("kwargs") or {}, dtype, adapter)
            phase = "setup"
            try:
                if suite_ref:
                    call = suite_call
                elif case.get("code"):
                    build, case_filename = compile_case_code(case["code"], label)
                    call = build(ctx, *fw_inputs, **kwargs)
                    if not callable(call):
                        raise TypeError(f"build() of {label} returned {type(call).__name__}, not a callable")
                else:
                    # functools.partial: a C-level call, cheaper than a lambda (~50 ns less
                    # per call than `lambda: fn(*inputs, **kwargs)`).
                    call = functools.partial(fn, *fw_inputs, **kwargs)
            except Exception as e:
                raise CaseError("setup", e, harness=is_harness_error(e, case_filename))
            if adapter.route is not None and not reference:
                # An export route: the case's arrays become the exported graph's inputs (a
                # code case's build runs again inside the exporter's trace); export and load
                # happen at the first call (docs/ir-routes.md).
                if suite_ref:
                    # The suite's callable over its sample's arrays (mlport_suites: `traced`).
                    traced, fw_inputs = call.traced
                    fw_inputs = list(fw_inputs)
                elif case.get("code") and takes_inputs(call, len(fw_inputs)):
                    # The callable takes the inputs as its parameters (a workload's
                    # `def run(x=x)`): what was built (a model, its weights) is built once, and
                    # the exporter traces only the call (docs/workloads.md).
                    traced = call
                elif case.get("code"):
                    traced = lambda *a: build(ctx, *a, **kwargs)()  # noqa: E731
                else:
                    traced = lambda *a: fn(*a, **kwargs)  # noqa: E731
                call = adapter.route.wrap(traced, fw_inputs, adapter.is_array)
            if compiled and not ctx.compiles.chosen_by_case:
                # The whole timed callable is compiled; compilation happens at its first call.
                call = adapter.compile(call, ctx.compiles)
            phase = "first_call"
            adapter.watch_fallback()
            try:
                t0 = time.perf_counter_ns()
                out = call()
                adapter.synchronize(out)
                first_ns = time.perf_counter_ns() - t0
            except Exception as e:
                raise CaseError("first_call", e, harness=is_harness_error(e, case_filename))
            result["first_call_ns"] = first_ns
            if compiled:
                result["compiles_first_call"] = result["compiles"] = ctx.compiles.count()
                breaks = ctx.compiles.breaks()
                if breaks is not None:  # torch: graph breaks Dynamo took (protocol 7)
                    result["graph_breaks"] = breaks
            phase = "outputs"
            # A route's outputs come back from its runtime as NumPy arrays by design.
            fallback = adapter.fallback_check(out) if adapter.route is None or reference else None
            if fallback:
                return silent_fallback(result, fallback, "outputs")
            try:
                result["outputs"] = adapters.save_outputs(adapter, out, out_dir, req.get("case_key") or label)
            except inputs.OwnIOError:
                raise
            except Exception as e:
                raise CaseError("outputs", e)
            if reference:  # a reference is computed once, never timed
                if suite_ref:  # which reference computed it: "op.ref numpy.sin", "torch.sin in float64"
                    result["reference_by"] = suites.LAST_REFERENCE_BY
                narrow = {"float16", "bfloat16", "float32", "complex64"}
                if not req.get("upcast_integers") and any(o.get("dtype") in narrow for o in result["outputs"]):
                    # Integer inputs, floating outputs of less than double precision (NumPy makes
                    # float16 from uint8): compute it again from the integers as float64.
                    again = run_case(adapter, dict(req, upcast_integers=True))
                    if again.get("outcome") in ("pass", "io_error"):
                        return again
                    result["outputs"] = adapters.save_outputs(adapter, out, out_dir, req.get("case_key") or label)
                result["outcome"] = "pass"
                return result
            if workload:
                # The repeat check: a second call on the same inputs (docs/workloads.md).
                phase = "repeat"
                try:
                    again = call()
                    adapter.synchronize(again)
                    result["measures"] = repeat_measures(adapter, out, again, case.get("outputs"))
                except Exception as e:
                    raise CaseError("repeat", e, harness=is_harness_error(e, case_filename))
                again = None
            phase = "steady"
            out = None  # the first call's output is saved: let its memory go before timing
            try:
                if not timing.get("steady", True):
                    # `mlport run --quick`: one call after the first (a second call is where a
                    # compiled case recompiles), untimed; no steady state. A workload's repeat
                    # check was that call.
                    if not workload:
                        adapter.synchronize(call())
                    raise _Quick()
                wait0, wall0 = runqueue_wait_ns(), time.perf_counter_ns()
                result["samples_ns"], result["block_sizes"], result["steady_stop"] = blocked(call, adapter, timing)
                wait1, wall1 = runqueue_wait_ns(), time.perf_counter_ns()
                if wait0 is not None and wait1 is not None:
                    result["runqueue_wait_ns"] = max(0, wait1 - wait0)
                    result["steady_wall_ns"] = wall1 - wall0
            except _Quick:
                pass
            except Exception as e:
                raise CaseError("steady", e, harness=is_harness_error(e, case_filename))
            finally:
                if compiled:
                    result["compiles"] = ctx.compiles.count()
                    breaks = ctx.compiles.breaks()
                    if breaks is not None:
                        result["graph_breaks"] = breaks
            if workload:
                m = result.setdefault("measures", {})
                peak = peak_rss_bytes()
                if peak is not None:
                    m["peak_rss_bytes"] = peak
                dev = adapter.device_peak()
                if dev is not None:
                    m["device_peak_bytes"] = dev
            late = adapter.steady_fallback_check()
            if late:  # the first call stayed on the device, a later one did not
                result.pop("outputs", None)
                return silent_fallback(result, late, "steady")
        result["outcome"] = "pass"
        return result
    except inputs.OwnIOError as e:  # mlport's own file, not the function: no outcome (protocol 8)
        result["outcome"] = "io_error"
        result["io_error"] = io_error_dict(e)
        return result
    except CaseError as ce:
        result["outcome"] = "fail"
        result["error"] = error_dict(ce.exc, ce.phase, ce.harness)
        return result
    except Exception as e:  # anything else is the worker's own bug
        result["outcome"] = "fail"
        result["error"] = error_dict(e, phase, True)
        return result
    except BaseException as e:  # SystemExit, KeyboardInterrupt, GeneratorExit raised by the call
        result["outcome"] = "fail"
        result["error"] = error_dict(e, phase, False)
        return result


def takes_inputs(call, n):
    """Whether `call` accepts `n` positional arguments (and none required beyond them)."""
    import inspect

    try:
        inspect.signature(call).bind(*([None] * n))
    except (TypeError, ValueError):
        return False
    return n > 0


def reset_peak_rss():
    """Resets this process's peak resident set size (`VmHWM`) to its current size: writing "5"
    to /proc/self/clear_refs (proc(5), Linux 4.0+). Silently nothing elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_bytes():
    """This process's peak resident set size since the last reset, bytes (`VmHWM` of
    /proc/self/status, in kB); None where the kernel has none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def repeat_measures(adapter, first, second, selected=None):
    """The repeat check of a workload (protocol 10): two calls' compared outputs (the case's
    `outputs`, else every array leaf), flattened to float64 in order. `repeat_rmse` is the RMSE
    of their difference over the elements finite in both calls; `repeat_nan_mismatch` counts
    the elements where the calls differ and one of them is NaN or infinite (equal infinities
    and NaN in both are equal). A measurement; the core judges it."""
    import numpy as np

    def flat(out):
        parts = []
        for i, leaf in enumerate(adapters.leaves(out)):
            if selected is not None and i not in selected:
                continue
            conv = adapter.to_numpy(leaf)
            if conv is not None:
                parts.append(np.asarray(conv[0]).astype(np.float64, copy=False).ravel())
        return np.concatenate(parts) if parts else np.zeros(0)

    a, b = flat(first), flat(second)
    if a.shape != b.shape:  # the calls disagree on the outputs themselves
        return {"repeat_nan_mismatch": int(max(a.size, b.size, 1))}
    with np.errstate(invalid="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        finite = np.isfinite(a) & np.isfinite(b)
        d = np.where(finite, a - b, 0.0)
    rmse = float(np.sqrt(np.mean(np.square(d)))) if d.size else 0.0
    return {"repeat_rmse": rmse, "repeat_nan_mismatch": int((~same & ~finite).sum())}


def silent_fallback(result, message, phase):
    """The case ran, not (wholly) on its device: a failure the core classifies silent_fallback."""
    result["outcome"] = "fail"
    result["error"] = {"type": "mlport.SilentFallback", "message": message, "traceback": "", "phase": phase, "harness": False}
    return result


class _Quick(Exception):
    """Ends a quick case's second call without a steady state."""


def _median_interval_width(values, resamples=200, seed=0):
    """Width of the 95% percentile-bootstrap interval of the median of values, over that median
    (Efron & Tibshirani 1993, ch. 13; `resamples` resamples with a fixed seed, so the stop is
    reproducible). NumPy, which every worker imports."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    med = float(np.median(v))
    if med <= 0:
        return float("inf")
    idx = np.random.default_rng(seed).integers(0, len(v), size=(resamples, len(v)))
    lo, hi = np.percentile(np.median(v[idx], axis=1), [2.5, 97.5])
    return float(hi - lo) / med


def _spread(values):
    """IQR / median of values (linear-interpolation quartiles, NumPy's default)."""
    v = sorted(values)
    n = len(v)

    def q(p):
        h = (n - 1) * p
        lo = int(h)
        hi = min(lo + 1, n - 1)
        return v[lo] + (h - lo) * (v[hi] - v[lo])

    med = q(0.5)
    return (q(0.75) - q(0.25)) / med if med > 0 else 0.0


def runqueue_wait_ns():
    """Time this process's threads have spent runnable but waiting for a CPU, summed over its
    threads, in ns: the second field of Linux's /proc/self/task/<tid>/schedstat (`run_delay`,
    "time spent waiting on a runqueue", Documentation/scheduler/sched-stats.rst). Read before
    and after the steady state, never inside a timed block. Its growth over the steady state's
    wall time says how much of that time other processes held the CPUs this case wanted.
    None where the kernel does not provide it (not Linux, or schedstats unavailable)."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    total, read = 0, 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[1])
            read += 1
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total if read else None  # nothing readable: not measured, never a measured 0


def blocked(call, adapter, timing):
    """Blocked steady-state timing, after torch.utils.benchmark's blocked_autorange.

    Warm-up calls for warmup_ms (at least one); then the block size (calls per timed block) doubles from 1 until a
    block lasts at least min_block_ms, so the timer's own cost (~100 ns against >= 1 ms) is
    negligible; then blocks of that size until IQR/median of the per-call times falls under
    target_spread with at least min_blocks taken and min_time_ms spent in blocks (so a short
    burst of interference cannot pass for a steady state), or the 95% bootstrap interval of their
    median is narrower than target_spread of it (with the same minimums: the median is known well
    enough), or budget_ms (counted from the warm-up) is spent with min_blocks taken, or max_blocks
    are taken. The third value says which ended it: "precision" (spread or interval), "budget" or
    "max_blocks". The garbage collector
    is off meanwhile (as in timeit). Each block: N calls back to back,
    then ONE synchronisation on the last output (the device's queue runs in order, so this
    waits for all N), timed with perf_counter_ns. Returns (ns per call per block, block sizes,
    why it stopped)."""
    clock = time.perf_counter_ns
    sync = adapter.synchronize
    # Python's garbage collector is off while timing, as timeit (and so torch's Timer) does:
    # a collection triggered by the call's own allocations is not the framework's time.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _blocked(call, sync, clock, timing)
    finally:
        if gc_was_on:
            gc.enable()


def _blocked(call, sync, clock, timing):
    min_block_ns = float(timing.get("min_block_ms", 1.0)) * 1e6
    min_blocks = int(timing.get("min_blocks", 5))
    min_time_ns = float(timing.get("min_time_ms", 20.0)) * 1e6
    max_blocks = int(timing.get("max_blocks", 1000))
    target = float(timing.get("target_spread", 0.05))
    budget_ns = float(timing.get("budget_ms", 100.0)) * 1e6
    start = clock()
    # Warm-up: calls until warmup_ms (at most budget_ms) has passed (at least one call), so thread pools are
    # awake, caches warm and the allocator settled (a fresh 4 MB output page-faults for
    # ~1 ms until glibc's malloc adapts) before the block size is chosen.
    warmup_ns = min(float(timing.get("warmup_ms", 10.0)) * 1e6, budget_ns)
    sync(call())
    while clock() - start < warmup_ns:
        sync(call())

    def block(n):
        t0 = clock()
        for _ in range(n - 1):
            call()
        sync(call())
        return clock() - t0

    # Block size: doubles while the fastest time per call seen so far says a block would be
    # shorter than min_block_ns. At a size that looks long enough, three blocks are timed
    # (they are the first samples), and any faster one sends the size up again: one or two
    # hiccups (a descheduled thread, page faults after the warm-up) cannot leave a fast call
    # with blocks of one call.
    number, best, samples, measured = 1, float("inf"), [], 0
    while True:
        took = block(number)
        measured += took
        best = min(best, took / number)
        if number * best < min_block_ns and number < (1 << 30) and clock() - start < budget_ns:
            number *= 2
            samples, measured = [], 0
            continue
        samples.append(took / number)
        if len(samples) >= 3 or clock() - start >= budget_ns:
            break
    stop, next_check = "max_blocks", min_blocks
    while len(samples) < max_blocks:
        if len(samples) >= min_blocks:
            if clock() - start >= budget_ns:
                stop = "budget"
                break
            if measured >= min_time_ns and _spread(samples) < target:
                stop = "precision"
                break
            # The bootstrap costs ~0.1-2 ms: checked at every block up to 20, then every tenth more.
            if measured >= min_time_ns and len(samples) >= next_check:
                next_check = len(samples) + max(1, len(samples) // 10)
                if _median_interval_width(samples) < target:
                    stop = "precision"
                    break
        took = block(number)
        measured += took
        samples.append(took / number)
    return [max(1, round(x)) for x in samples], [number] * len(samples), stop


def hello(adapter_or_error, framework, device, mode):
    msg = {
        "kind": "hello",
        "protocol": PROTOCOL_VERSION,
        "pid": os.getpid(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "framework": framework,
        "device": device,
        "mode": mode,
    }
    if isinstance(adapter_or_error, Exception):
        msg["framework_version"] = None
        msg["import_error"] = error_dict(adapter_or_error, "import", False)
        msg["devices"] = []
        msg["packages"] = adapters.package_versions() if adapters else {}
    else:
        a = adapter_or_error
        msg["framework_version"] = a.version
        msg["import_error"] = None
        msg["devices"] = a.devices()
        msg["packages"] = adapters.package_versions()
        msg["threads"] = a.threads()
        msg["settings"] = a.settings()
        # Export routes this framework could take on this device, each with why not (None: it can).
        # (A Keras framework exports through its backend: the adapter's name is the backend's.)
        msg["routes"] = {r: adapters.routes.unavailable(r, a.name, device) for r in adapters.routes.ROUTES}
        # The route targets on Vulkan devices the run uses (`vulkan:0/onnx` in MLPORT_ROUTES):
        # no worker runs on such a device, so every hello says whether this framework can
        # reach it, keyed by the whole target (protocol 13).
        listed = [r for r in os.environ.get("MLPORT_ROUTES", "").split(",") if r]
        for t in (r for r in listed if "/" in r):
            dev, route = t.split("/", 1)
            try:
                msg["routes"][t] = adapters.routes.unavailable(route, a.name, dev) if route in adapters.routes.ROUTES else f"unknown route `{route}`"
            except Exception as e:  # noqa: BLE001 - said as why the target is unavailable
                msg["routes"][t] = f"{type(e).__name__}: {e}"
        # The runtime of each route the run uses (MLPORT_ROUTES, from the core), where it can run.
        asked = [r for r in listed if msg["routes"].get(r, "?") is None]
        msg["route_details"] = {}
        for r in asked:
            dev, route = r.split("/", 1) if "/" in r else (None, r)
            try:
                msg["route_details"][r] = adapters.routes.runtime(route, dev)
            except Exception as e:  # a runtime that fails to describe itself still runs (or fails) per case
                msg["route_details"][r] = f"(could not describe the runtime: {type(e).__name__}: {e})"
        if os.environ.get("MLPORT_CPUS") and hasattr(os, "sched_getaffinity"):
            # The cores the worker is pinned to (`mlport run --jobs`), as the kernel has them.
            msg["settings"]["cpus"] = sorted(os.sched_getaffinity(0))
    return msg


def serve(framework, device, mode):
    try:
        if _BASE_IMPORT_ERROR is not None:
            raise _BASE_IMPORT_ERROR
        adapter = adapters.load(framework, device, mode)
    except Exception as e:  # import failure: say so, then answer every case with it
        adapter = e
    send(hello(adapter, framework, device, mode))
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError as e:
            send({"kind": "error", "message": f"bad request line: {e}"})
            continue
        op = req.get("op")
        if op == "shutdown":
            send({"kind": "bye"})
            return
        if op == "ping":
            send({"kind": "pong"})
            continue
        if op != "run":
            send({"kind": "error", "message": f"unknown op {op!r}"})
            continue
        # The core's stderr tail of this request starts at this line (docs/protocol.md).
        sys.stderr.flush()
        os.write(2, f"\x1emlport: request {req.get('nonce')}\n".encode())
        if isinstance(adapter, Exception):
            send({"kind": "result", "case_key": req.get("case_key"), "nonce": req.get("nonce"), "outcome": "fail",
                  "error": error_dict(adapter, "import", False)})
            continue
        send(run_case(adapter, req))


def selftest(framework, device, mode, path, only, dtypes_filter):
    import tomllib

    with open(path, "rb") as f:
        cat = tomllib.load(f)
    if _BASE_IMPORT_ERROR is not None:
        raise SystemExit(f"mlport worker: cannot import its modules (is NumPy installed in {sys.executable}?): {_BASE_IMPORT_ERROR!r}")
    adapter = adapters.load(framework, device, mode)
    print(f"# {framework} {adapter.version} on {device} ({mode}); devices: {adapter.devices()}", file=sys.stderr)
    n = {"pass": 0, "fail": 0}
    for func in cat.get("function", []):
        if only and only not in func["name"]:
            continue
        for case in func.get("case", []):
            spec = dict(case)
            spec["function"] = func["name"]
            for dt in case.get("dtypes", ["float32"]):
                if dtypes_filter and dt not in dtypes_filter:
                    continue
                req = {"case": spec, "dtype": dt, "seed": case.get("seed", 0), "case_key": None,
                       "out_dir": None, "timing": {"min_blocks": 2, "max_blocks": 3, "budget_ms": 5}}
                r = run_case(adapter, req)
                n[r["outcome"]] += 1
                line = f"{r['outcome']:4} {func['name']}[{case.get('id', 'default')}:{dt}]"
                if r["outcome"] == "fail":
                    err = r["error"]
                    first = (err["message"].strip().splitlines() or [""])[0][:160]
                    line += f"  {err['phase']} {err['type']}{' HARNESS' if err['harness'] else ''}: {first}"
                else:
                    if "compiles" in r:
                        line += f"  compiles={r['compiles']}"
                    line += f"  first={r['first_call_ns'] / 1e6:.2f}ms outs={[(o['dtype'], o['shape']) if o['kind'] == 'array' else o['type'] for o in r['outputs']]}"
                print(line, file=sys.stderr)
    print(f"# {n['pass']} pass, {n['fail']} fail", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description="mlport worker (protocol v%d)" % PROTOCOL_VERSION)
    p.add_argument("--framework", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--mode", default="eager", choices=["eager", "compiled", "compiled_fullgraph", "onnx", "onnx_openvino", "stablehlo"])
    p.add_argument("--selftest", metavar="CATALOGUE_TOML")
    p.add_argument("--only")
    p.add_argument("--dtypes")
    a = p.parse_args()
    # Keras 3 reads its backend at import: a torch, JAX or TensorFlow worker's `keras` runs on
    # that framework (keras/torch, keras/jax, keras/tensorflow; docs/workloads.md).
    backend = {"torch": "torch", "jax": "jax", "tensorflow": "tensorflow", "tf": "tensorflow"}.get(a.framework)
    if backend:
        os.environ["KERAS_BACKEND"] = backend
    if a.selftest:
        selftest(a.framework, a.device, a.mode, a.selftest, a.only, a.dtypes.split(",") if a.dtypes else None)
    else:
        serve(a.framework, a.device, a.mode)


if __name__ == "__main__":
    main()
