"""The comparison side of benches/latency.rs: the same ops timed with
torch.utils.benchmark.Timer.blocked_autorange (min_run_time 0.2 s) at a given thread count,
and the paper's one-call method (one wall-clock call, no warm-up) beside it.

    python latency_timer.py THREADS  ->  JSON {op: {timer_median_ns, timer_iqr_ns, timer_blocks,
                                                 timer_block_size, one_call_ns, runqueue_wait_share,
                                                 threads}}
"""

import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.benchmark import Timer

OPS = {
    # name: (function, input shapes) -- the same inputs mlport builds (normal, float32)
    "add_1e3": (torch.add, [(1000,), (1000,)]),
    "add_1e6": (torch.add, [(1_000_000,), (1_000_000,)]),
    "matmul_256": (torch.matmul, [(256, 256), (256, 256)]),
    "argsort_1e5": (torch.argsort, [(100_000,)]),
}


def runqueue_wait_ns():
    """Run-queue wait of this process's threads, ns (Linux schedstat), as mlport's worker reads it."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            pass
    return total


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    out = {}
    for name, (fn, shapes) in OPS.items():
        args = [torch.from_numpy(np.random.default_rng([0, i]).standard_normal(s).astype(np.float32))
                for i, s in enumerate(shapes)]
        names = [f"a{i}" for i in range(len(args))]
        scope = dict(zip(names, args), fn=fn)
        # Timer as its documentation uses it: the statement calls the op directly (no lambda
        # around it; mlport's worker likewise calls a functools.partial, a C-level call).
        stmt = f"fn({', '.join(names)})"
        t0 = time.perf_counter_ns()
        fn(*args)
        one_call = time.perf_counter_ns() - t0
        w0, t0 = runqueue_wait_ns(), time.perf_counter_ns()
        m = Timer(stmt=stmt, globals=scope, num_threads=threads).blocked_autorange(min_run_time=0.2)
        w1, t1 = runqueue_wait_ns(), time.perf_counter_ns()
        out[name] = {
            "timer_median_ns": m.median * 1e9,
            "timer_iqr_ns": m.iqr * 1e9,
            "timer_blocks": len(m.times),
            "timer_block_size": m.number_per_run,
            "one_call_ns": one_call,
            "runqueue_wait_share": (w1 - w0) / (t1 - t0),
            "threads": torch.get_num_threads(),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
