"""Builds a case's input arrays from its catalogue spec, with NumPy's seeded PCG64.

Every input is made in NumPy first (float64, then cast), so every framework gets the
same values for the same (seed, input index). bfloat16 has no NumPy dtype: such inputs
are made as float32 and cast by the adapter on the device.
"""

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
    if "value" in spec:
        arr = np.asarray(spec["value"], dtype=numpy_dtype(dt))
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
    return arr, spec


def build_all(specs, dtype, seed):
    """All inputs of a case; input i uses the generator seeded with [seed, i]."""
    out = []
    for i, spec in enumerate(specs):
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, i])
        out.append(build(spec, dtype, rng))
    return out


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
