#!/usr/bin/env python3
"""The Grand Illusion's GPU (T4) -> TPU v3 latency figures as the authors' own plotting code
computes them, on the published raw data, and a check of `mlport report paper`'s authors' method.

An independent check (tests/paper_report.rs runs it): standard library only, no mlport code.
It follows the authors' repository for-ai/portability (commit b220f30), `src/plotting/`, step by
step, quirks included; each function below names the function it follows:

- `utils.open_file`: a framework's timing sessions `<device>_<n>.json`, n = 1, 2, 3, are read
  from `{framework}_timings/{device}_vm/{device}/` (TensorFlow, JAX) or
  `pytorch_timings/{device}_vm/` (PyTorch), and the failure report from
  `{framework_dir}/{device}_vm/test_failure_report.json` -- the report at the top of the
  machine's folder, whichever run it came from. The published data has no `gpu_vm`; device gpu
  reads `t4_vm`, the only GPU machine folder with a report there (`a100_vm` has none).
  TensorFlow's top-level reports are the 8 May ones, not the 13 May ones beside the sessions;
  JAX's `tpu_vm/` report is a copy of the T4 (GPU) run's.
- `utils.combine_function_tests` (consolidation "concat", the default): for every test of the
  report, in report order, the key is `<file>:<test name>` (the node id's file without the
  framework's `src/<fw>_tests_reduced/` prefix; the class is dropped). A test counts when the
  key is in the session's timings, the outcome is `passed` and the key does not contain `_cpu`
  anywhere (PyTorch's CPU copies, and any test or file whose name holds `_cpu`). Each counting
  test appends the key's timed calls, so two passing tests of one file that share a name
  (two classes; the timing file kept one entry) append the same calls twice. After each
  session, keys with no timed call yet are dropped (a key dropped after session 1 and timed in
  session 2 is inserted again, at the end of the order).
- `utils.fetch_data`: TPU sessions 1-3, then GPU sessions 1-3. PyTorch only: each key is cut
  at its first `_xla` (TPU) or `_cuda` (GPU) -- `key.split("_xla")[0]` -- which drops the
  dtype suffix after the device token too, so a test's dtype variants (`..._xla_float32`,
  `..._xla_float64`) collide and the last one in the order above wins; the TPU and GPU
  winners may be different dtypes. Keys present on both devices are kept and grouped by
  test file (`key.split(":")[0].removesuffix(".py")`, e.g. `Adamax_test`), their timed calls
  concatenated.
- `overall_success.get_percent_count`: per function the mean of all its timed calls on each
  device; faster on TPU when the TPU mean is below the GPU mean. The median and geometric
  mean of the ratio TPU mean / GPU mean, and the share above 10x (the paper's intolerable
  mark), are mlport's summaries of the same per-function ratios.

`overall_success.py` calls `fetch_data("tensorflow", consolidation_method="mean")` for
TensorFlow; that path raises on the published data (ragged per-call arrays in `np.mean`), so
the default "concat" reading, which every other plot uses, is the one followed here.

Usage: python3 scripts/paper_plotting_check.py PAPER_DATA_DIR [MLPORT_PAPER_JSON]

Prints one JSON document: per framework the functions compared (file stems) with their TPU/GPU
ratio, and the figures. With MLPORT_PAPER_JSON (`mlport report paper --format json`), also
compares the authors' method's latency figures there with these and exits 1 when one differs
(counts exactly, ratios to a relative 1e-6: the store keeps whole nanoseconds).
"""

import json
import math
import os
import statistics
import sys

FRAMEWORKS = ("torch", "tensorflow", "jax")
# `{device}_vm` in utils.open_file: the published data's folders.
VM = {"gpu": "t4_vm", "tpu": "tpu_vm"}
# The prefixes utils.combine_function_tests removes from a node id.
PREFIXES = ("src/tensorflow_tests_reduced/", "src/pytorch_tests_reduced/", "src/jax_tests_reduced/")
THRESHOLD = 10.0


def load(path):
    with open(path) as f:
        return json.load(f)


def session_path(root, framework, device, n):
    """utils.open_file: the timing file of session `n`."""
    if framework in ("tensorflow", "jax"):
        return os.path.join(root, f"{framework}_timings", VM[device], device, f"{device}_{n}.json")
    return os.path.join(root, "pytorch_timings", VM[device], f"{device}_{n}.json")


def report_path(root, framework, device):
    """utils.open_file: the failure report, at the top of the machine's folder."""
    framework_dir = "pytorch_timings" if framework == "torch" else f"{framework}_timings"
    return os.path.join(root, framework_dir, VM[device], "test_failure_report.json")


def timing_key(nodeid):
    """utils.combine_function_tests: `src/x/foo_test.py::Class::test_y` -> `foo_test.py:test_y`."""
    with_suffix = nodeid
    for prefix in PREFIXES:
        with_suffix = with_suffix.removeprefix(prefix)
    with_suffix = with_suffix.split(":")[0]
    test = nodeid.split(":")[-1]
    return f"{with_suffix}:{test}"


def combine_function_tests(timings, functions, report):
    """utils.combine_function_tests, consolidation "concat", by_function=True (keys kept)."""
    for test in report["tests"]:
        key = timing_key(test["nodeid"])
        if key in timings and test["outcome"] == "passed" and "_cpu" not in key:
            if key not in functions:
                functions[key] = {"operations": []}
            functions[key]["operations"] += timings[key]["operations"]
    return functions


def open_file(root, framework, device, n, functions):
    """utils.open_file: one session combined into `functions`, keys without calls dropped."""
    functions = combine_function_tests(
        load(session_path(root, framework, device, n)), functions, load(report_path(root, framework, device))
    )
    return {k: v for k, v in functions.items() if v["operations"] != []}


def fetch_data(root, framework):
    """utils.fetch_data(framework), by_function=True, consolidation "concat": per function
    (test file stem) the timed calls on GPU and on TPU."""
    tpu, gpu = {}, {}
    for n in (1, 2, 3):
        tpu = open_file(root, framework, "tpu", n, tpu)
    for n in (1, 2, 3):
        gpu = open_file(root, framework, "gpu", n, gpu)
    if framework == "torch":
        # Last one wins: dict assignment in the order of the keys.
        tpu = {k.split("_xla")[0]: v for k, v in tpu.items()}
        gpu = {k.split("_cuda")[0]: v for k, v in gpu.items()}
    both_tpu = {k: v for k, v in tpu.items() if k in gpu}
    both_gpu = {k: v for k, v in gpu.items() if k in tpu}
    by_function = {}
    for side, items in (("tpu", both_tpu), ("gpu", both_gpu)):
        out = {}
        for key, value in items.items():
            func_key = key.split(":")[0].removesuffix(".py")
            out.setdefault(func_key, {"operations": []})["operations"] += value["operations"]
        by_function[side] = out
    return by_function["gpu"], by_function["tpu"]


def mean(values):
    return math.fsum(values) / len(values)


def latency(root, framework):
    """overall_success.get_percent_count's per-function means, and their ratios' summaries."""
    gpu, tpu = fetch_data(root, framework)
    ratios = {}
    faster = 0
    for key in gpu:  # function_keys: the GPU side's keys
        if key in tpu:
            t, g = mean(tpu[key]["operations"]), mean(gpu[key]["operations"])
            faster += t < g
            ratios[key] = t / g
    values = sorted(ratios.values())
    n = len(values)
    return {
        "functions": n,
        "faster": faster,
        "intolerable": sum(1 for r in values if r > THRESHOLD),
        "median": statistics.median(values) if values else None,
        "geometric_mean": math.exp(math.fsum(math.log(r) for r in values) / n) if values else None,
        "ratios": dict(sorted(ratios.items())),
    }


def compare(want, mlport_json):
    """Differences between these figures and mlport's authors' method, as lines."""
    got = {row["framework"]: row for row in mlport_json["latency"]}
    problems = []
    for fw, w in want.items():
        if fw not in got:
            problems.append(f"{fw}: no latency row in mlport's output")
            continue
        row = got[fw]
        a = row["authors"]
        for field in ("functions", "faster", "intolerable"):
            if a[field] != w[field]:
                problems.append(f"{fw} {field}: mlport {a[field]}, plotting code {w[field]}")
        for field in ("median", "geometric_mean"):
            if a[field] is None or w[field] is None:
                if a[field] != w[field]:
                    problems.append(f"{fw} {field}: mlport {a[field]}, plotting code {w[field]}")
            elif abs(a[field] - w[field]) > 1e-6 * abs(w[field]):
                problems.append(f"{fw} {field}: mlport {a[field]!r}, plotting code {w[field]!r}")
        listed = row.get("authors_functions")
        if listed is not None:
            mine = {f["key"]: f["ratio"] for f in listed}
            if set(mine) != set(w["ratios"]):
                problems.append(
                    f"{fw} functions: only mlport {sorted(set(mine) - set(w['ratios']))}, "
                    f"only plotting code {sorted(set(w['ratios']) - set(mine))}"
                )
            for k in sorted(set(mine) & set(w["ratios"])):
                if abs(mine[k] - w["ratios"][k]) > 1e-6 * abs(w["ratios"][k]):
                    problems.append(f"{fw} {k}: mlport {mine[k]!r}, plotting code {w['ratios'][k]!r}")
        else:
            problems.append(f"{fw}: mlport's output lists no authors_functions")
    return problems


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(next(line for line in __doc__.splitlines() if line.startswith("Usage:")))
    root = sys.argv[1]
    out = {fw: latency(root, fw) for fw in FRAMEWORKS}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()
    if len(sys.argv) == 3:
        problems = compare(out, load(sys.argv[2]))
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            sys.exit(1)
        print("mlport's authors' method equals the plotting code's figures", file=sys.stderr)


if __name__ == "__main__":
    main()
