#!/usr/bin/env python3
"""The Grand Illusion's status figure by the authors' method, straight from the published raw data.

An independent check of `mlport report --paper` (tests/paper_report.rs runs it): standard
library only, no mlport code. Reads the data set's folder (../shared/paper-data, layout in its
README) and prints one JSON document:

- "status": per framework and device with a pytest report, the functions (test files) that
  succeed (every counted test passed), are partial, or fail completely. Counted tests are the
  device's tests that were not skipped; PyTorch's CPU copies (class `...CPU`, name with the
  `_cpu` token) are the reference and not counted, and a failing device test is excused when
  its CPU copy failed too. Every failure counts, the authors' timer bug included. The
  authors' code has no status computation to follow: this is the counting the paper states,
  on the reports beside the timing sessions.

The latency figures by the authors' method are their plotting code's: see
scripts/paper_plotting_check.py, which follows it.

Usage: python3 scripts/paper_figures.py PAPER_DATA_DIR
"""

import json
import os
import sys

# framework: (folder, GPU sessions' folder, GPU report, TPU sessions' folder, TPU report); the
# sessions' folders are not read here.
RUNS = {
    "torch": ("pytorch_timings", "t4_vm", "t4_vm/test_failure_report.json",
              "tpu_vm", "tpu_vm/test_failure_report.json"),
    "tensorflow": ("tensorflow_timings", "t4_vm/gpu", "t4_vm/gpu/test_failure_report.json",
                   "tpu_vm/tpu", "tpu_vm/tpu/test_failure_report.json"),
    # JAX: one report (a T4 run) for both devices.
    "jax": ("jax_timings", "t4_vm/gpu", "t4_vm/gpu/test_failure_report.json",
            "tpu_vm/tpu", "t4_vm/gpu/test_failure_report.json"),
}
TOKENS = {"gpu": ("CUDA", "cuda"), "tpu": ("XLA", "xla")}


def load(path):
    with open(path) as f:
        return json.load(f)


def replace_token(name, token, new):
    """`name` with its last `_<token>` (ending the name, or followed by `_` or `[`) replaced by
    `new`; None when there is none."""
    needle = "_" + token
    end = len(name)
    while True:
        i = name.rfind(needle, 0, end)
        if i < 0:
            return None
        after = name[i + len(needle):]
        if after == "" or after[0] in "_[":
            return name[:i] + new + after
        end = i


def strip_token(name, token):
    return replace_token(name, token, "")


def split_nodeid(nodeid):
    parts = nodeid.split("::")
    file = os.path.basename(parts[0])
    cls = parts[1] if len(parts) == 3 else None
    return file, cls, parts[-1]


def is_cpu_copy(framework, cls, name):
    return framework == "torch" and cls is not None and cls.endswith("CPU") and len(cls) > 3 \
        and strip_token(name, "cpu") is not None


def status(framework, report, device):
    tests = [t for t in report["tests"] if t["outcome"] != "rerun"]
    outcome_of = {}
    for t in tests:
        outcome_of[t["nodeid"]] = t["outcome"]
    suffix, token = TOKENS[device]
    per_file = {}
    for t in tests:
        file, cls, name = split_nodeid(t["nodeid"])
        if is_cpu_copy(framework, cls, name) or t["outcome"] == "skipped":
            continue
        failed = t["outcome"] in ("failed", "error")
        if failed and framework == "torch" and cls and cls.endswith(suffix):
            base = t["nodeid"].split("::")[0]
            twin_name = replace_token(name, token, "_cpu")
            if twin_name is not None:
                twin = "%s::%sCPU::%s" % (base, cls[: -len(suffix)], twin_name)
                if outcome_of.get(twin) in ("failed", "error"):
                    continue  # excused: the CPU copy failed too
        per_file.setdefault(file, []).append(failed)
    counts = {"functions": 0, "success": 0, "partial": 0, "complete_failure": 0}
    for fails in per_file.values():
        counts["functions"] += 1
        if not any(fails):
            counts["success"] += 1
        elif all(fails):
            counts["complete_failure"] += 1
        else:
            counts["partial"] += 1
    return counts


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    root = sys.argv[1]
    out = {"status": {}}
    for framework, (folder, gpu_dir, gpu_report, tpu_dir, tpu_report) in RUNS.items():
        base = os.path.join(root, folder)
        out["status"][framework] = {"gpu": status(framework, load(os.path.join(base, gpu_report)), "gpu")}
        if tpu_report != gpu_report:
            out["status"][framework]["tpu"] = status(framework, load(os.path.join(base, tpu_report)), "tpu")
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
