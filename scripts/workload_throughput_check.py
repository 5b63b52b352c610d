"""An independent measurement of one workload's throughput and memory, to set beside
`mlport report --workloads` (docs/workloads.md): torchvision's ResNet-18 (weights=None, seed 0),
forward, batch 2 at 64x64, under no_grad, timed by torch.utils.benchmark.Timer's
blocked_autorange (torch's own timer), with the thread count mlport's worker had (argv[1],
default 1: two workers pinned to one core each on a 2-core machine). Prints the median time per
call, samples/s, and the process's peak resident set from getrusage(2).

    python scripts/workload_throughput_check.py [THREADS]
"""
import resource
import sys

import torch
import torch.utils.benchmark as benchmark
import torchvision

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
torch.manual_seed(0)
m = torchvision.models.resnet18(weights=None, num_classes=10).eval()
x = torch.randn(2, 3, 64, 64)


def forward():
    with torch.no_grad():
        return m(x)


t = benchmark.Timer(stmt="forward()", globals={"forward": forward}, num_threads=threads)
r = t.blocked_autorange(min_run_time=3.0)
print(f"ResNet-18 forward, batch 2, {threads} thread(s): median {r.median * 1e3:.2f} ms per call, "
      f"{2 / r.median:.1f} samples/s (IQR {r.iqr * 1e3:.2f} ms over {len(r.times)} blocks)")
print(f"peak RSS (getrusage ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
