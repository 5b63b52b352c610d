"""Builds a case's input arrays from its catalogue spec, with NumPy's seeded PCG64.

Every input is made in NumPy first (float64, then cast), so every framework gets the
same values for the same (seed, input index). bfloat16 has no NumPy dtype: such inputs
are made as float32 and cast by the adapter on the device.
"""

import io
import os

import numpy as np

INT_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
FLOAT_DTYPES = {"float16", "bfloat16", "float32", "float64"}
COMPLEX_DTYPES = {"complex64", "complex128"}
ALL_DTYPES = INT_DTYPES | FLOAT_DTYPES | COMPLEX_DTYPES | {"bool"}


def numpy_dtype(name):
    """NumPy dtype used to hold an input of the canonical dtype `name` on the host."""
    if name == "bfloat16":
        return np.dtype("float32")
    return np.dtype(name)


def _real(rng, dist, shape, spec):
    if dist == "normal":
        return rng.normal(float(spec.get("mean", 0.0)), float(spec.get("std", 1.0)), size=shape)
    if dist == "uniform":
        return rng.uniform(float(spec.get("low", 0.0)), float(spec.get("high", 1.0)), size=shape)
    if dist == "positive":
        return rng.uniform(float(spec.get("low", 0.5)), float(spec.get("high", 2.0)), size=shape)
    if dist == "probs":
        x = rng.uniform(0.05, 1.0, size=shape)
        return x / x.sum(axis=-1, keepdims=True)
    if dist == "spd":
        n = shape[-1]
        a = rng.normal(size=tuple(shape[:-1]) + (n,))
        m = a @ np.swapaxes(a, -1, -2) / n + np.eye(n)
        return m
    if dist == "arange":
        return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + float(spec.get("start", 0))
    if dist == "ones":
        return np.ones(shape)
    if dist == "zeros":
        return np.zeros(shape)
    raise ValueError(f"unknown dist {dist!r}")


def build(spec, dtype, rng):
    """One input as (numpy array or Python value, resolved spec)."""
    spec = dict(spec)
    dt = spec.get("dtype", "T")
    if dt == "T":
        dt = dtype
    spec["dtype"] = dt
    if dt not in ALL_DTYPES:
        raise ValueError(f"unknown dtype {dt!r}")
    if "value" in spec or "fill" in spec:
        # A literal: `value` broadcast to `shape` (NumPy's rules; the loader checked they
        # agree), or `fill` repeated over `shape`. bfloat16 literals are rounded like drawn ones.
        literal = spec["value"] if "value" in spec else spec["fill"]
        arr = np.asarray(literal, dtype=numpy_dtype(dt))
        if "shape" in spec or "fill" in spec:
            arr = np.broadcast_to(arr, tuple(int(s) for s in spec.get("shape", []))).copy()
        if dt == "bfloat16":
            arr = round_to_bfloat16(arr)
        if spec.get("scalar"):
            return arr.item(), spec
        return arr, spec
    shape = tuple(int(s) for s in spec.get("shape", []))
    dist = spec.get("dist", "normal")
    if dt == "bool":
        arr = rng.random(size=shape) < float(spec.get("p", 0.5))
    elif dt in INT_DTYPES:
        if dist in ("randint", "normal"):
            lo = int(spec.get("low", 0 if dt.startswith("uint") else -10))
            hi = int(spec.get("high", 20 if dt.startswith("uint") else 10))
            arr = rng.integers(lo, hi, size=shape)
        else:
            arr = np.rint(_real(rng, dist, shape, spec))
        arr = arr.astype(numpy_dtype(dt))
    elif dt in COMPLEX_DTYPES:
        if dist == "randint":
            lo, hi = int(spec.get("low", -10)), int(spec.get("high", 10))
            arr = rng.integers(lo, hi, size=shape) + 1j * rng.integers(lo, hi, size=shape)
        elif dist == "spd":  # Hermitian positive definite
            n = shape[-1]
            half = tuple(shape[:-1]) + (n,)
            a = rng.normal(size=half) + 1j * rng.normal(size=half)
            arr = a @ np.conj(np.swapaxes(a, -1, -2)) / n + np.eye(n)
        else:
            arr = _real(rng, dist, shape, spec) + 1j * _real(rng, dist, shape, spec)
        arr = arr.astype(dt)
    else:
        if dist == "randint":
            arr = rng.integers(int(spec.get("low", -10)), int(spec.get("high", 10)), size=shape).astype(np.float64)
        else:
            arr = _real(rng, dist, shape, spec)
        arr = arr.astype(numpy_dtype(dt))
        if dt == "bfloat16":
            arr = round_to_bfloat16(arr)
    return arr, spec


def round_to_bfloat16(arr):
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32.

    Every framework then receives exactly these values (its own float32 -> bfloat16 cast is
    exact), whatever rounding its cast would use, and the float64 reference sees them too.
    """
    a = np.ascontiguousarray(arr, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(a), out, a).reshape(a.shape)


class OwnIOError(Exception):
    """mlport's own file I/O failed (protocol 8): writing an output .npy, writing or reading the
    run's input cache, creating their folders. Not the function's failure: the worker answers
    `io_error` and the core stops the run with the case pending."""

    def __init__(self, path, operation, exc):
        super().__init__(f"could not {operation} {path}: {exc}")
        self.path = str(path)
        self.operation = operation
        self.errno = getattr(exc, "errno", None)
        self.message = str(exc)


def own_io(path, operation, action, cleanup=None):
    """Runs `action()` (mlport's own file I/O on `path`); an OSError becomes OwnIOError, after
    `cleanup` (removing a partly written file, best effort)."""
    try:
        return action()
    except OSError as e:
        if cleanup:
            try:
                os.remove(cleanup)
            except OSError:
                pass
        raise OwnIOError(path, operation, e) from e


def save_npy(path, arr):
    """Writes `arr` as a .npy file at `path` through one Python file write, so that a failure
    carries the OS's error number (NumPy's own writer reports a short write on a full disk as
    "N requested and M written", without ENOSPC). Arrays are at most 64 MiB here."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    with open(path, "wb") as f:
        f.write(buf.getbuffer())


def build_all(specs, dtype, seed, cache_dir=None, key=None):
    """All inputs of a case; input i uses the generator seeded with [seed, i].

    With `cache_dir` and `key` (the core's hash of the inputs' specs, dtype and seed), array
    inputs are made once: input i is read from `<cache_dir>/<key>.in<i>.npy` when that file
    exists, else built and written there (to a temporary name, then renamed), so every
    framework and device of a run gets the very same arrays and `mlport repro` can ship them.
    """
    out = []
    for i, spec in enumerate(specs):
        path = os.path.join(cache_dir, f"{key}.in{i}.npy") if cache_dir and key else None
        if path and os.path.exists(path):
            resolved = dict(spec)
            if resolved.get("dtype", "T") == "T":
                resolved["dtype"] = dtype
            arr = own_io(path, "read", lambda: np.load(path, allow_pickle=False))
            if ("value" in spec or "fill" in spec) and spec.get("scalar"):
                out.append((arr.item(), resolved))
            else:
                out.append((arr, resolved))
            continue
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, i])
        value, resolved = build(spec, dtype, rng)
        if path and isinstance(value, np.ndarray):
            own_io(cache_dir, "create folder", lambda: os.makedirs(cache_dir, exist_ok=True))
            tmp = f"{path}.{os.getpid()}.tmp.npy"
            own_io(tmp, "write", lambda: save_npy(tmp, value), cleanup=tmp)
            own_io(path, "write", lambda: os.replace(tmp, path), cleanup=tmp)
        out.append((value, resolved))
    return out


def upcast(built, integers=None):
    """The float64 reference's inputs: floating arrays (float16, bfloat16 as its exact float32
    values, float32) become float64 and complex64 becomes complex128, so the reference
    computes on exactly the values the framework got, in double precision. With `integers`
    (the swept integer or bool dtype), the inputs of that dtype become float64 too, for
    functions whose result is floating; inputs of fixed dtypes (indices) stay as they are."""
    out = []
    for value, spec in built:
        widen = integers is not None and spec.get("dtype") == integers
        if isinstance(value, np.ndarray) and (value.dtype.kind in "fc" or widen):
            wide = np.complex128 if value.dtype.kind == "c" else np.float64
            out.append((value.astype(wide), dict(spec, dtype=np.dtype(wide).name)))
        else:
            out.append((value, spec))
    return out


def reference_dtype(dtype):
    """The dtype the float64 reference of a case swept at `dtype` computes in."""
    if dtype in FLOAT_DTYPES:
        return "float64"
    if dtype in COMPLEX_DTYPES:
        return "complex128"
    return dtype


def resolve_kwargs(kwargs, dtype, adapter):
    """Literal kwargs from the catalogue; the strings "$dtype" (the swept dtype),
    "$dtype:NAME" and "$device" become the framework's own objects."""

    def conv(v):
        if isinstance(v, str):
            if v == "$dtype":
                return adapter.native_dtype(dtype)
            if v.startswith("$dtype:"):
                return adapter.native_dtype(v.split(":", 1)[1])
            if v == "$device":
                return adapter.native_device
        if isinstance(v, list):
            return tuple(conv(x) for x in v) if v and all(isinstance(x, int) for x in v) else [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v

    return {k: conv(v) for k, v in kwargs.items()}
