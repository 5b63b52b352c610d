#!/usr/bin/env python3
"""Fills the generated tables of the README and docs/*.md from a store, so they are mlport's output, not typed.

    python3 scripts/readme_tables.py MLPORT_BINARY STORE.db [BLOCK ...]

Each `<!-- mlport:NAME -->` ... `<!-- /mlport:NAME -->` block (in README.md or one page of docs/) is replaced by the output
of the `mlport report` command named below (rows filtered where said); with BLOCK names, only
those (the eager-vs-compiled block comes from a run with `--modes eager,compiled`, the others
from an eager run; `onnxruntime-dtypes` from `mlport run --framework onnxruntime`).
"""
import glob
import re
import subprocess
import sys

DTYPES_ONLY = ("numpy.cumsum,torch.cumsum,jax.numpy.cumsum,tf.math.cumsum,numpy.sum,torch.sum,jax.numpy.sum,"
               "tf.math.reduce_sum,torch.linalg.svd,jax.numpy.linalg.svd,tf.linalg.svd")
FRAMEWORKS_ONLY = "cumsum,sum,softmax,layer_norm,conv2d"


def report(binary, db, *args):
    return subprocess.run([binary, "report", "--db", db, *args], check=True, capture_output=True, text=True).stdout


def dtypes(binary, db):
    text = report(binary, db, "--dtypes", "--format", "markdown", "--only", DTYPES_ONLY)
    lines = [l for l in text.splitlines() if l.startswith("|")]
    legend = next(l for l in text.splitlines() if l.startswith("✓ passed"))
    return "\n".join(lines) + "\n\n" + legend


def frameworks(binary, db):
    text = report(binary, db, "--frameworks", "--format", "markdown", "--only", FRAMEWORKS_ONLY)
    rows = [l for l in text.splitlines() if l.startswith("|")]
    keep = rows[:2] + [r for r in rows[2:] if r.split("|")[3].strip() in ("float16", "bfloat16", "float32")]
    return "\n".join(keep)


def summary(binary, db):
    text = report(binary, db, "--frameworks", "--format", "table")
    lines = [l for l in text.splitlines() if re.match(r"^(\d+ ops|numpy:|torch:|jax:|tensorflow:)", l)]
    return "\n".join(f"- {l}" for l in lines)


def summary_table(binary, db):
    text = report(binary, db, "--format", "markdown")
    return "\n".join(l for l in text.splitlines() if l.startswith("|"))


EXCERPT = ("torch.linalg.svd", "jax.core.get_aval", "numpy.cumsum", "tf.math.cumsum")


def functions_excerpt(binary, db):
    text = report(binary, db, "--functions", "--format", "markdown")
    rows = [l for l in text.splitlines() if l.startswith("|")]
    at = next(i for i, r in enumerate(rows) if r.startswith("| function |"))
    head = rows[at:at + 2]
    keep = [r for r in rows if any(r.startswith(f"| `{name}` |") for name in EXCERPT)]
    return "\n".join(head + keep)


def modes(binary, db):
    """The eager-vs-compiled table and the histograms of compiled/eager ratios."""
    text = report(binary, db, "--modes", "--format", "markdown")
    lines = text.splitlines()
    table = []
    for l in lines:
        if l.startswith("|"):
            table.append(l)
        elif table:
            break
    fence = [i for i, l in enumerate(lines) if l.startswith("```")]
    histograms = "\n".join(lines[fence[0]:fence[1] + 1]) if len(fence) >= 2 else ""
    eager_only = [l for l in lines if l.startswith("- ") and "eager only" in l]
    return "\n".join(table + [""] + eager_only + ["", histograms]).rstrip()


def onnxruntime_dtypes(binary, db):
    """The whole dtype matrix of the ONNX Runtime operator catalogue, legend included."""
    text = report(binary, db, "--dtypes", "--format", "markdown")
    lines = [l for l in text.splitlines() if l.startswith("|")]
    legend = next(l for l in text.splitlines() if l.startswith("✓ passed"))
    return "\n".join(lines) + "\n\n" + legend


BLOCKS = {"onnxruntime-dtypes": onnxruntime_dtypes, "summary": summary_table, "functions": functions_excerpt, "dtypes": dtypes, "frameworks": frameworks,
          "frameworks-summary": summary, "modes": modes}


def main():
    binary, db = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or ["summary", "functions", "dtypes", "frameworks", "frameworks-summary"]
    pages = {path: open(path, encoding="utf-8").read() for path in ["README.md", *sorted(glob.glob("docs/*.md"))]}
    for name, make in ((n, BLOCKS[n]) for n in names):
        body = make(binary, db)
        pattern = re.compile(rf"(<!-- mlport:{name} -->\n).*?(<!-- /mlport:{name} -->)", re.S)
        found = 0
        for path, text in pages.items():
            pages[path], n = pattern.subn(lambda m: m.group(1) + body + "\n" + m.group(2), text)
            found += n
        assert found == 1, f"block {name} is in {found} pages (README.md, docs/*.md), not one"
    for path, text in pages.items():
        open(path, "w", encoding="utf-8").write(text)


if __name__ == "__main__":
    main()
