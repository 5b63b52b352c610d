"""The floor of the opinfo suite: PyTorch's own plain loop over its OpInfo samples, with no
mlport in between. For every OpInfo and every dtype it declares for the CPU (mlport's dtype names
only), the first N samples are generated on the CPU (torch seeded before each, as
mlport_suites does), each is called once, and each floating (or complex) sample is called once
more upcast to float64 (complex128), as the float64 reference is. Errors are counted, not raised.

    python benches/suite_floor_opinfo.py [--samples 3] [--ops sin,add] [--limit-ops K]

Prints one JSON line: {"samples", "ops", "pairs", "errors", "import_s", "generate_s", "call_s",
"float64_s", "total_s"}. Needs expecttest in the Python that runs it."""

import argparse
import json
import time
import warnings

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--ops", default="")
    p.add_argument("--limit-ops", type=int, default=None)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import_s = time.perf_counter() - t0
    only = {n for n in a.ops.split(",") if n}
    ops = [op for op in op_db if not only or op.name in only]
    if a.limit_ops is not None:
        ops = ops[: a.limit_ops]
    gen = call = f64 = 0.0
    n = pairs = errors = 0
    clock = time.perf_counter
    for op in ops:
        names = sorted({str(d).replace("torch.", "") for d in op.supported_dtypes("cpu")} & set(DTYPES),
                       key=DTYPES.index)
        for name in names:
            dtype = getattr(torch, name)
            pairs += 1
            samples = []
            t = clock()
            try:
                torch.manual_seed(0)
                it = iter(op.sample_inputs("cpu", dtype, requires_grad=False))
                for k in range(a.samples):
                    torch.manual_seed(k * 1_000_003)
                    try:
                        samples.append(next(it))
                    except StopIteration:
                        break
            except Exception:  # noqa: BLE001
                errors += 1
            gen += clock() - t
            for s in samples:
                n += 1
                t = clock()
                try:
                    op(s.input, *s.args, **s.kwargs)
                except Exception:  # noqa: BLE001
                    errors += 1
                call += clock() - t
                if name in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
                    t = clock()
                    try:
                        w = s.transform(lambda x: x.to(torch.complex128 if x.is_complex() else torch.float64)
                                        if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())
                                        else x)
                        op(w.input, *w.args, **w.kwargs)
                    except Exception:  # noqa: BLE001
                        errors += 1
                    f64 += clock() - t
    print(json.dumps({"samples": n, "ops": len(ops), "pairs": pairs, "errors": errors,
                      "import_s": round(import_s, 3), "generate_s": round(gen, 3), "call_s": round(call, 3),
                      "float64_s": round(f64, 3), "total_s": round(clock() - t0, 3)}))


if __name__ == "__main__":
    main()
