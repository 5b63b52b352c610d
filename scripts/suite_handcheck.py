"""By hand, outside mlport: for each (OpInfo name, variant, dtype) given, what OpInfo declares for
a device type, and whether the OpInfo's first sample (generated on the CPU, moved to the device)
runs there. Usage: python scripts/suite_handcheck.py DEVICE_TYPE DEVICE JSON_LIST, e.g.
    python scripts/suite_handcheck.py cpu cpu '[["cumsum", "", "bool"]]'
(docs/results/2026-12-07-suites.md). Needs expecttest; for xla, the torch-xla stack and PJRT_DEVICE=CPU."""
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
from torch.testing._internal.common_methods_invocations import op_db
dev_type, device, items = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if dev_type == "xla":
    import torch_xla, torch_xla.core.xla_model as xm
    dev = xm.xla_device()
    sync = torch_xla.sync
else:
    dev = torch.device(device)
    sync = lambda: None
out = []
for name, variant, dtype in items:
    op = next(o for o in op_db if o.name == name and o.variant_test_name == variant)
    d = getattr(torch, dtype)
    declared = d in op.supported_dtypes(dev_type)
    s = next(iter(op.sample_inputs("cpu", d)))
    mv = lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t
    try:
        if dev_type == "xla":
            import torch_xla.debug.metrics as met
            met.clear_all()
        y = op(mv(s.input), *[mv(a) for a in s.args], **{k: mv(v) for k, v in s.kwargs.items()})
        sync()
        ran = "runs"
        if dev_type == "xla" and met.executed_fallback_ops():
            ran = "runs on the host (PyTorch/XLA CPU fallback: " + ", ".join(met.executed_fallback_ops()) + ")"
    except Exception as e:
        ran = "fails: " + str(e).strip().splitlines()[0][:90]
    out.append({"entry": f"{name}{'.' + variant if variant else ''}", "dtype": dtype, "declared": declared, "sample 0": ran})
for o in out:
    print(json.dumps(o))
