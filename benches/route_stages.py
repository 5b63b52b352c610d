"""Export and session-creation times of the ONNX route for benches/ir_routes.rs, measured apart
(mlport stores the route's first call, which holds both and the first run).

Usage: python route_stages.py  (prints one JSON object: op -> {export_ms, session_ms})
Each op is exported with torch.onnx.export(dynamo=True) at the bench catalogue's shapes and
loaded into an onnxruntime.InferenceSession on the CPUExecutionProvider with one intra-op
thread, as mlport's worker does (src/worker/python/mlport_routes.py). One warm-up export
first: the first export in a process pays torch.export's and onnxscript's set-up.
"""

import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

torch.manual_seed(0)
v = torch.rand(4096) + 0.5
m = torch.rand(64, 64)
OPS = {
    "torch.sin": (torch.sin, (v,)),
    "torch.cos": (torch.cos, (v,)),
    "torch.exp": (torch.exp, (v,)),
    "torch.log": (torch.log, (v,)),
    "torch.sqrt": (torch.sqrt, (v,)),
    "torch.tanh": (torch.tanh, (v,)),
    "torch.sigmoid": (torch.sigmoid, (v,)),
    "torch.relu": (torch.relu, (v,)),
    "torch.abs": (torch.abs, (v,)),
    "torch.erf": (torch.erf, (v,)),
    "torch.add": (torch.add, (v, v)),
    "torch.mul": (torch.mul, (v, v)),
    "torch.sub": (torch.sub, (v, v)),
    "torch.div": (torch.div, (v, v)),
    "torch.maximum": (torch.maximum, (v, v)),
    "torch.matmul": (torch.matmul, (m, m)),
    "torch.sum": (torch.sum, (m,)),
    "torch.mean": (torch.mean, (m,)),
    "torch.softmax": (lambda x: torch.softmax(x, 1), (m,)),
    "torch.cumsum": (lambda x: torch.cumsum(x, 1), (m,)),
}


class Wrapped(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *a):
        return self.f(*a)


def export(f, args):
    return torch.onnx.export(Wrapped(f), args, dynamo=True, verbose=False, opset_version=18).model_proto.SerializeToString()


export(torch.neg, (v,))  # warm-up
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.inter_op_num_threads = 1
out = {}
for name, (f, args) in OPS.items():
    t0 = time.perf_counter()
    model = export(f, args)
    t1 = time.perf_counter()
    ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    t2 = time.perf_counter()
    out[name] = {"export_ms": 1e3 * (t1 - t0), "session_ms": 1e3 * (t2 - t1)}
print(json.dumps(out))
