"""Probe: ResNet-18 (torchvision, weights=None, seed 0) forward, batch 2 at 64x64, on cpu:
eager float32, eager float32 again, float64 golden, torch.compile float32; prints the numbers
the whole-model rule reads (src/agreement/whole_model.rs), and a perturbed test double."""
import copy, sys, time, resource
import numpy as np, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(2, 3, 64, 64)
with torch.no_grad():
    t0 = time.perf_counter(); e = m(x).double().numpy().ravel(); first = time.perf_counter() - t0
    e2 = m(x).double().numpy().ravel()
    g = copy.deepcopy(m).double()(x.double()).numpy().ravel()
    c = torch.compile(m)
    t0 = time.perf_counter(); cc = c(x).double().numpy().ravel(); cfirst = time.perf_counter() - t0
    ts = []
    for _ in range(10):
        t0 = time.perf_counter(); m(x); ts.append(time.perf_counter() - t0)
    tc = []
    for _ in range(10):
        t0 = time.perf_counter(); c(x); tc.append(time.perf_counter() - t0)
    p = copy.deepcopy(m)  # test double: noise on one layer
    p.layer3[0].conv1.weight.add_(torch.randn_like(p.layer3[0].conv1.weight) * 1e-3)
    pp = p(x).double().numpy().ravel()
rm = lambda a, b: float(np.sqrt(np.mean((a - b) ** 2)))
tol = lambda a: bool(np.all(np.abs(a - g) <= 1e-5 + 1.3e-6 * np.abs(g)))
print("numel", g.size, "eager==eager2", bool(np.array_equal(e, e2)))
for name, a in [("eager", e), ("compiled", cc), ("perturbed", pp)]:
    print(name, "allclose_f32", tol(a), "rmse", rm(a, g), "ratio", rm(a, g) / rm(e, g))
print("first_call_s eager %.4f compiled %.2f; steady median_s eager %.4f compiled %.4f; samples/s eager %.1f" % (
    first, cfirst, np.median(ts), np.median(tc), 2 / np.median(ts)))
print("peak_rss_MiB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
