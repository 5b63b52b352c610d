"""The Python baseline for `cargo bench --bench scan`: an ast-based scanner doing the job of
`mlport scan` (alias resolution and qualified call counting) on one or more folders.

Imports (`import a.b as c`, `from a import b as c`, relative imports against the file's
package) bind names for the whole file; every call whose callee is a dotted chain rooted
in a bound name is counted under its qualified name when that is a torch, tensorflow, jax
or numpy name. Usage: python py_scanner.py [--jobs N] DIR... ; prints one JSON line with
files, bytes, seconds, calls and distinct functions.
"""

import ast
import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

ROOTS = {"torch", "tensorflow", "jax", "numpy"}


def module_of(path):
    parts = []
    d = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    while os.path.isfile(os.path.join(d, "__init__.py")):
        parts.insert(0, os.path.basename(d))
        d = os.path.dirname(d)
    return parts, stem == "__init__", stem


def dotted(node):
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
        return ".".join(reversed(names))
    return None


def scan_file(path):
    with open(path, "rb") as f:
        src = f.read()
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return len(src), None
    package, is_pkg, stem = module_of(path)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package)
                for _ in range(node.level - 1):
                    if base:
                        base.pop()
                if not base:
                    continue
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            for a in node.names:
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{mod}.{a.name}"
    calls = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            chain = dotted(node.func)
            if chain:
                root, _, rest = chain.partition(".")
                base = aliases.get(root)
                if base:
                    q = f"{base}.{rest}" if rest else base
                    if q.split(".")[0] in ROOTS:
                        calls[q] += 1
    return len(src), calls


def files_under(dirs):
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in sorted(names):
                if n.endswith(".py"):
                    yield os.path.join(root, n)


def main():
    args = sys.argv[1:]
    jobs = 1
    if args[:1] == ["--jobs"]:
        jobs = int(args[1])
        args = args[2:]
    files = list(files_under(args))
    start = time.perf_counter()
    total = Counter()
    size = 0
    unparsable = 0
    if jobs == 1:
        results = map(scan_file, files)
    else:
        pool = ProcessPoolExecutor(jobs)
        results = pool.map(scan_file, files, chunksize=16)
    for n, calls in results:
        size += n
        if calls is None:
            unparsable += 1
        else:
            total.update(calls)
    secs = time.perf_counter() - start
    print(json.dumps({"files": len(files), "bytes": size, "seconds": secs, "calls": sum(total.values()),
                      "functions": len(total), "unparsable": unparsable, "jobs": jobs}))


if __name__ == "__main__":
    main()
