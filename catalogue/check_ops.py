"""Checks the cross-framework alignment of the built-in catalogue (docs/catalogue.md,
"Cross-framework ops"). Not part of mlport; a tool for catalogue authors.

    python catalogue/check_ops.py            # static checks only (any Python 3.11+)
    python catalogue/check_ops.py --run      # also run every aligned case in every framework
                                             # (the managed environment's Python, with numpy,
                                             # scipy, torch, jax and tensorflow; a few minutes)

Static: for every (op, case id) in two or more files, the inputs and seed are identical; prints
how many ops are in two or more frameworks, in all four, and with a NumPy reference.
--run: runs each framework in its own process (the worker's own input building and adapters)
and checks that, at every dtype two frameworks both run, the output leaves have the same count
and shapes. It then compares every output with the float64 reference (the NumPy file's case on
the same inputs upcast to float64) under the case's compare rule and torch.testing's default
tolerances, and lists the differences: most are real findings (low-precision accumulation, dtype
promotion, integer overflow); a large or structural one is usually a catalogue mistake.
"""

import collections
import os
import pickle
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "src", "worker", "python")
FWS = ["numpy", "torch", "jax", "tensorflow"]
# Checked for alignment too, not run by --run (its packages are the ir-routes add-on): each ONNX
# operator case whose op has a NumPy reference_only entry must have that entry's inputs.
ADD_ONS = ["onnxruntime"]
# float64 reference dtype for each swept dtype; other dtypes are their own reference
REF = {"float16": "float64", "bfloat16": "float64", "float32": "float64", "float64": "float64",
       "complex64": "complex128", "complex128": "complex128"}
# torch.testing.assert_close's defaults: (rtol, atol)
TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
       "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def load():
    """{(op, case id): {framework: (function name, case table)}}, {op: frameworks} (a NumPy
    function marked reference_only is not a NumPy test, so it does not count NumPy here) and
    the ops with a NumPy/SciPy reference."""
    cases, opfw, referenced = collections.defaultdict(dict), collections.defaultdict(set), set()
    for fw in FWS + ADD_ONS:
        with open(os.path.join(HERE, f"{fw}.toml"), "rb") as f:
            cat = tomllib.load(f)
        for func in cat["function"]:
            if "op" not in func:
                continue
            if fw == "numpy":
                referenced.add(func["op"])
            if not func.get("reference_only"):
                opfw[func["op"]].add(fw)
            for case in func["case"]:
                key = (func["op"], case.get("id", "default"))
                if fw in cases[key]:
                    print(f"AMBIGUOUS {fw}: {key} in {cases[key][fw][0]} and {func['name']}")
                cases[key][fw] = (func["name"], case)
    return cases, opfw, referenced


def static():
    cases, opfw, referenced = load()
    bad = 0
    for key, d in sorted(cases.items()):
        items = list(d.items())
        fw0, (n0, c0) = items[0]
        for fw, (n, c) in items[1:]:
            if c.get("inputs", []) != c0.get("inputs", []) or c.get("seed", 0) != c0.get("seed", 0):
                bad += 1
                print(f"INPUTS {key}: {fw0} {n0} {c0.get('inputs')} | {fw} {n} {c.get('inputs')}")
            if c.get("compare", "allclose") != c0.get("compare", "allclose"):
                bad += 1
                print(f"COMPARE {key}: {fw0} {c0.get('compare')} | {fw} {c.get('compare')}")
    multi = sorted(o for o, s in opfw.items() if len(s) >= 2)
    print(f"ops in >= 2 frameworks: {len(multi)}; in all 4: {sum(len(opfw[o]) == 4 for o in multi)}; "
          f"with a NumPy reference: {sum(o in referenced for o in multi)}; alignment problems: {bad}")
    return bad


def run_one(adapter, adapters, inputs, name, case, dtype, ref):
    import numpy as np

    fn = adapters.resolve(name)
    seed = case.get("seed", 0)
    built = inputs.build_all(case.get("inputs", []), dtype, seed)
    rdt = REF.get(dtype, dtype) if ref else dtype
    if ref:  # the same values, upcast (bfloat16 inputs are float32 on the host: round them first)
        up = []
        for a, spec in built:
            spec = dict(spec)
            if spec["dtype"] in REF and isinstance(a, np.ndarray):
                if spec["dtype"] == "bfloat16":
                    import ml_dtypes

                    a = a.astype(ml_dtypes.bfloat16)
                a, spec["dtype"] = a.astype(REF[spec["dtype"]]), REF[spec["dtype"]]
            up.append((a, spec))
        built = up
    ctx = adapter.context(fn, rdt, seed)
    with adapter.on_device():
        args = [adapter.to_framework(a, s, rdt) for a, s in built]
        kwargs = inputs.resolve_kwargs(case.get("kwargs") or {}, rdt, adapter)
        if case.get("code"):
            ns = {}
            exec(compile(case["code"], f"<{name}>", "exec"), ns)
            out = ns["build"](ctx, *args, **kwargs)()
        else:
            out = fn(*args, **kwargs)
    res = []
    for leaf in adapters.leaves(out):
        conv = adapter.to_numpy(leaf)
        res.append(None if conv is None else (conv[1], np.asarray(conv[0])))
    return res


def worker(fw, path):
    """Runs every aligned case of one framework; pickles {(op, id, dtype): leaves or error}."""
    sys.path.insert(0, WORKER)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import mlport_adapters as adapters
    import mlport_inputs as inputs

    adapter = adapters.load(fw, "cpu")
    cases, _, _ = load()
    out = {}
    for (op, cid), d in sorted(cases.items()):
        if len(d) < 2 or fw not in d:
            continue
        name, case = d[fw]
        for dt in case.get("dtypes", ["float32"]):
            for ref in ([False, True] if fw == "numpy" else [False]):
                key = ("REF", op, cid, dt) if ref else (op, cid, dt)
                try:
                    out[key] = run_one(adapter, adapters, inputs, name, case, dt, ref)
                except Exception as e:  # noqa: BLE001
                    out[key] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"
    with open(path, "wb") as f:
        pickle.dump(out, f)


def align_signs(a, ref, axis):
    import numpy as np

    s = np.where(np.real(np.sum(a * np.conj(ref), axis=axis, keepdims=True)) < 0, -1, 1)
    return a * s


def differs(rule, a, r, dt):
    import numpy as np

    if rule in ("none", "shape_dtype", "statistical"):
        return None
    if a.shape != r.shape:
        return f"shape {a.shape} vs reference {r.shape}"
    if rule == "sorted":
        a, r = np.sort(a, axis=-1), np.sort(r, axis=-1)
    if a.dtype.kind in "biu" and r.dtype.kind in "biu":
        n = int(np.sum(a.astype(np.int64) != r.astype(np.int64)))
        return f"{n}/{a.size} integers differ" if n else None
    cplx = np.iscomplexobj(a) or np.iscomplexobj(r)
    a, r = a.astype(np.complex128 if cplx else np.float64), r.astype(np.complex128 if cplx else np.float64)
    if rule == "up_to_sign":
        a = align_signs(a, r, -2)
    elif rule == "up_to_sign_rows":
        a = align_signs(a, r, -1)
    rtol, atol = TOL.get(dt, (0.0, 0.0))
    bad = ~np.isclose(a, r, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        return f"{int(bad.sum())}/{a.size} off, max |err| {np.max(np.abs(a - r)[bad]):.3g} (max |ref| {np.nanmax(np.abs(r)):.3g})"
    return None


def dynamic():
    cases, _, _ = load()
    tmp = tempfile.mkdtemp(prefix="check_ops_")
    procs = {fw: subprocess.Popen([sys.executable, __file__, "--worker", fw, os.path.join(tmp, fw)]) for fw in FWS}
    for fw, p in procs.items():
        if p.wait() != 0:
            raise SystemExit(f"{fw} worker failed")
    res = {}
    for fw in FWS:
        with open(os.path.join(tmp, fw), "rb") as f:
            res[fw] = pickle.load(f)
    nstruct = ndiff = 0
    for (op, cid), d in sorted(cases.items()):
        if len(d) < 2:
            continue
        case = next(iter(d.values()))[1]
        rules = case.get("compare", "allclose")
        for fw, (_, c) in d.items():
            for dt in c.get("dtypes", ["float32"]):
                out = res[fw].get((op, cid, dt))
                if isinstance(out, str):
                    continue
                for fw2 in d:
                    o2 = res[fw2].get((op, cid, dt))
                    if FWS.index(fw2) <= FWS.index(fw) or o2 is None or isinstance(o2, str):
                        continue
                    s1 = [None if x is None else x[1].shape for x in out]
                    s2 = [None if x is None else x[1].shape for x in o2]
                    if s1 != s2:
                        nstruct += 1
                        print(f"STRUCTURE {op}[{cid}:{dt}] {fw} {s1} vs {fw2} {s2}")
                ref = res["numpy"].get(("REF", op, cid, dt))
                if ref is None or isinstance(ref, str):
                    continue
                if len(ref) != len(out):
                    nstruct += 1
                    print(f"STRUCTURE {op}[{cid}:{dt}] {fw}: {len(out)} leaves, reference {len(ref)}")
                    continue
                for i, (x, y) in enumerate(zip(out, ref)):
                    if x is None or y is None or (case.get("outputs") is not None and i not in case["outputs"]):
                        continue
                    rule = rules if isinstance(rules, str) else rules[i]
                    msg = differs(rule, x[1], y[1], dt)
                    if msg:
                        ndiff += 1
                        print(f"DIFFERS {op}[{cid}:{dt}] {fw} leaf {i} ({x[0]}, {rule}): {msg}")
    print(f"structure problems: {nstruct}; outputs differing from the float64 reference: {ndiff}")
    return nstruct


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        bad = static()
        if "--run" in sys.argv[1:]:
            bad += dynamic()
        sys.exit(1 if bad else 0)
