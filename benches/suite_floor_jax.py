"""The floor of the jax-harnesses suite: JAX's own plain loop over its primitive harnesses, with
no mlport in between. For every harness: its dynamic arguments from dyn_args_maker (a seeded
NumPy RandomState), jax.jit(h.dyn_fun) called twice (block_until_ready each), then the float64
call: the floating (complex) arguments upcast to float64 (complex128), under jax.enable_x64,
jit-compiled and called once. Harnesses that raise are counted.

    python benches/suite_floor_jax.py [--limit K] [--every K | --groups-every K]

Prints one JSON line: {"harnesses", "raised", "raised_float64", "groups" (the groups taken:
with --groups-every, `mlport run --suite jax-harnesses --op GROUPS` runs the same harnesses),
"import_s", "generate_s", "call_s", "float64_s", "total_s"}. Needs absl-py in the Python that runs it."""

import argparse
import json
import time
import warnings


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--every", type=int, default=1, help="every K-th harness only (a spread-out sample)")
    p.add_argument("--groups-every", type=int, default=None,
                   help="every harness of every K-th group (groups sorted by name): what `mlport run --op GROUPS` runs")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    import jax
    import numpy as np
    from jax._src.internal_test_util import test_harnesses

    jax.config.update("jax_enable_x64", False)
    harnesses = test_harnesses.all_harnesses[:: max(1, a.every)]
    groups = sorted({h.group_name for h in test_harnesses.all_harnesses})
    if a.groups_every:
        groups = groups[:: a.groups_every]
        harnesses = [h for h in test_harnesses.all_harnesses if h.group_name in set(groups)]
    else:
        groups = sorted({h.group_name for h in harnesses})
    if a.limit is not None:
        harnesses = harnesses[: a.limit]
    enable_x64 = getattr(jax, "enable_x64", None)
    if enable_x64 is None:
        from jax.experimental import enable_x64
    import_s = time.perf_counter() - t0
    clock = time.perf_counter
    gen = call = f64 = 0.0
    raised = raised64 = 0

    def wide(x):
        if isinstance(x, np.ndarray) or isinstance(x, np.generic):
            x = np.asarray(x)
            if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
                return x.astype(np.float64)
            if x.dtype.kind == "c":
                return x.astype(np.complex128)
        return x

    def block(out):
        for leaf in jax.tree_util.tree_leaves(out):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()

    for i, h in enumerate(harnesses):
        t = clock()
        try:
            args = h.dyn_args_maker(np.random.RandomState(i))
        except Exception:  # noqa: BLE001
            raised += 1
            gen += clock() - t
            continue
        gen += clock() - t
        t = clock()
        try:
            f = jax.jit(h.dyn_fun)
            block(f(*args))
            block(f(*args))
        except Exception:  # noqa: BLE001
            raised += 1
        call += clock() - t
        t = clock()
        try:
            with enable_x64(True):
                block(jax.jit(h.dyn_fun)(*[wide(x) for x in args]))
        except Exception:  # noqa: BLE001
            raised64 += 1
        f64 += clock() - t
    print(json.dumps({"harnesses": len(harnesses), "raised": raised, "raised_float64": raised64,
                      # with --groups-every, mlport's `--op` names of the same harnesses
                      "groups": groups,
                      "import_s": round(import_s, 3), "generate_s": round(gen, 3), "call_s": round(call, 3),
                      "float64_s": round(f64, 3), "total_s": round(clock() - t0, 3)}))


if __name__ == "__main__":
    main()
