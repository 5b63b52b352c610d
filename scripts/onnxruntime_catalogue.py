"""Writes catalogue/onnxruntime.toml: one [[function]] per ONNX operator (`ai.onnx.<OpType>`), its
dtype sweep the catalogue's usual dtypes intersected with the operator's ONNX schema at the case's
opset (`onnx.defs.get_schema(op, opset).type_constraints`, for every input of the swept dtype), so
a pair the specification refuses (Sin on int32) is never planned.

Run in an environment with onnx (the ir-routes add-on, python/ir-routes.lock):
    python scripts/onnxruntime_catalogue.py > catalogue/onnxruntime.toml
    python scripts/onnxruntime_catalogue.py --numpy    # the block at the end of catalogue/numpy.toml
The float64 references: a NumPy/SciPy callable per case (`reference`), or, where none computes
the operator, the case of the NumPy catalogue's `reference_only` function with op `onnx` whose id
is the operator's (catalogue/numpy.toml, "ONNX operators"), with the same inputs.
"""

import sys

import onnx

USUAL = ["float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool"]
ONNX_NAME = {"float32": "float", "float64": "double"}
FLOATS = {"float32", "float64", "float16", "bfloat16"}
# The newest opset asked of a case: ONNX Runtime 1.32 runs opsets up to 22 for every operator here.
MAX_OPSET = 22
# The oldest opset a case asks for without its own: ORT warns below 7 and its transpose optimiser
# skips models below 13; an operator unchanged since then keeps its schema.
MIN_OPSET = 13

X = "{ shape = [4, 6] }"
POS = '{ shape = [4, 6], dist = "positive" }'
UNIT = '{ shape = [4, 6], dist = "uniform", low = -0.9, high = 0.9 }'
BOOL = '{ shape = [4, 6], dtype = "bool" }'
EQ1 = "{ shape = [4, 6], value = [0, 1, 1, 0, 1, 0] }"
EQ2 = "{ shape = [4, 6], value = [0, 1, 0, 0, 1, 1] }"
CODE = "def build(ctx, *xs, **a): return ctx.ort_op(xs, a, opset={opset})"
AXES1 = "def build(ctx, *xs, **a): return ctx.ort_op(xs + (ctx.np.array([1]),), a, opset={opset})"


def op(name, inputs=(X,), ref=None, rk=None, kw=None, kinds=None, case="default", code=CODE, opset=None,
       extra=(), note=None, refop=None, np=None, args="x"):
    """One case. `kinds`: float, int (no bool) or exact (floats and int64, where NumPy's integer
    sum/product/cumsum widens narrower integers to int64). `refop`/`np`/`args`: the case id of the
    NumPy file's reference_only `onnx` case, the body of its build (NumPy, float64) and its inputs."""
    return dict(name=name, inputs=inputs, ref=ref, rk=rk, kw=kw, kinds=kinds, case=case, code=code, opset=opset,
                extra=extra, note=note, refop=refop, np=np, args=args)


def unary(name, ref, inputs=(X,), **k):
    return op(name, inputs, ref, **k)


def binary(name, ref, inputs=(X, X), **k):
    return op(name, inputs, ref, **k)


def axis1(name, ref, **k):
    return op(name, ref=ref, rk="{ axis = 1 }", kw="{ keepdims = 0 }", code=AXES1, **k)


CONV = """# cross-correlation, zero padding 1, stride 1 (ONNX Conv, NCHW/OIHW)
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(p, (3, 3), axis=(2, 3))
    return lambda: np.einsum("nchwij,ocij->nohw", win, w)"""
LAYER_NORM = """# over the last axis, epsilon 1e-5 (the ONNX default)
    def run():
        mu = x.mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * scale + bias
    return run"""
BATCH_NORM = """# inference mode, epsilon 1e-5 (the ONNX default), per channel (axis 1)
    c = lambda v: v.reshape(1, -1, 1, 1)
    return lambda: (x - c(mean)) / np.sqrt(c(var) + 1e-5) * c(scale) + c(bias)"""
TOP_K = """# the 3 largest per row, largest first, and their int64 indices (ties: the lower index first)
    def run():
        i = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[:, :3]  # -x would wrap for uint8
        return [np.take_along_axis(x, i, axis=-1), i.astype(np.int64)]
    return run"""
NCHW = "{ shape = [2, 3, 8, 8] }"
POOL = "{ kernel_shape = [2, 2], strides = [2, 2] }"

OPS = [
    # Elementwise unary.
    unary("Abs", "numpy.abs"),
    unary("Neg", "numpy.negative"),
    unary("Exp", "numpy.exp"),
    unary("Log", "numpy.log", (POS,)),
    unary("Sqrt", "numpy.sqrt", (POS,)),
    unary("Reciprocal", "numpy.reciprocal", (POS,)),
    unary("Sin", "numpy.sin"),
    unary("Cos", "numpy.cos"),
    unary("Tan", "numpy.tan", (UNIT,)),
    unary("Tanh", "numpy.tanh"),
    unary("Sinh", "numpy.sinh"),
    unary("Cosh", "numpy.cosh"),
    unary("Asin", "numpy.arcsin", (UNIT,)),
    unary("Acos", "numpy.arccos", (UNIT,)),
    unary("Atan", "numpy.arctan"),
    unary("Asinh", "numpy.arcsinh"),
    unary("Acosh", "numpy.arccosh", ('{ shape = [4, 6], dist = "uniform", low = 1.1, high = 3.0 }',)),
    unary("Atanh", "numpy.arctanh", (UNIT,)),
    unary("Floor", "numpy.floor", ("{ shape = [4, 6], std = 4.0 }",)),
    unary("Ceil", "numpy.ceil", ("{ shape = [4, 6], std = 4.0 }",)),
    unary("Round", "numpy.round", ("{ shape = [4, 6], value = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.7] }",),
          note="ONNX Round rounds half to even, as numpy.round"),
    unary("Sign", "numpy.sign"),
    unary("Erf", "scipy.special.erf"),
    unary("Sigmoid", "scipy.special.expit"),
    unary("IsNaN", "numpy.isnan", ("{ shape = [4, 6], value = [1.0, nan, -inf, 0.0, inf, nan] }",)),
    unary("IsInf", "numpy.isinf", ("{ shape = [4, 6], value = [1.0, nan, -inf, 0.0, inf, nan] }",)),
    unary("Identity", "numpy.copy"),
    unary("Not", "numpy.logical_not"),
    unary("BitwiseNot", "numpy.invert"),
    # Activations whose float64 answer the NumPy file writes out (op onnx, case id `refop`).
    op("Relu", refop="relu", np="return lambda: np.maximum(x, np.zeros((), x.dtype))"),
    op("LeakyRelu", kw="{ alpha = 0.1 }", refop="leaky_relu", np="return lambda: np.where(x >= 0, x, 0.1 * x)"),
    op("Elu", kw="{ alpha = 1.0 }", refop="elu", np="return lambda: np.where(x > 0, x, np.expm1(x))"),
    op("HardSigmoid", kw="{ alpha = 0.2, beta = 0.5 }", refop="hard_sigmoid",
       np="return lambda: np.clip(0.2 * x + 0.5, 0.0, 1.0)"),
    op("Softsign", refop="softsign", np="return lambda: x / (1.0 + np.abs(x))"),
    op("Softplus", refop="softplus", np="return lambda: np.logaddexp(x, 0.0)"),
    # Elementwise binary (NumPy broadcasting, as ONNX's).
    binary("Add", "numpy.add"),
    binary("Sub", "numpy.subtract"),
    binary("Mul", "numpy.multiply"),
    binary("Div", "numpy.divide", kinds="float", case="float"),
    binary("Div", "numpy.floor_divide", kinds="int", case="positive_int",
           inputs=('{ shape = [4, 6], dist = "randint", low = 0, high = 100 }',
                   '{ shape = [4, 6], dist = "randint", low = 1, high = 10 }'),
           note="integer Div truncates; on non-negative operands that is numpy.floor_divide"),
    binary("Pow", "numpy.power", kinds="float", inputs=(POS, X), case="float"),
    binary("Max", "numpy.maximum"),
    binary("Min", "numpy.minimum"),
    binary("Sum", "numpy.add"),
    binary("Mod", "numpy.fmod", kinds="float", kw="{ fmod = 1 }", case="fmod",
           inputs=(X, '{ shape = [4, 6], dist = "uniform", low = 0.5, high = 2.0 }')),
    binary("Mod", "numpy.mod", kinds="int", case="int",
           inputs=(X, '{ shape = [4, 6], dist = "randint", low = 1, high = 7 }')),
    binary("Equal", "numpy.equal", inputs=(EQ1, EQ2)),
    binary("Less", "numpy.less"),
    binary("Greater", "numpy.greater"),
    binary("LessOrEqual", "numpy.less_equal", inputs=(EQ1, EQ2)),
    binary("GreaterOrEqual", "numpy.greater_equal", inputs=(EQ1, EQ2)),
    binary("And", "numpy.logical_and"),
    binary("Or", "numpy.logical_or"),
    binary("Xor", "numpy.logical_xor"),
    binary("BitwiseAnd", "numpy.bitwise_and"),
    binary("BitwiseOr", "numpy.bitwise_or"),
    binary("BitwiseXor", "numpy.bitwise_xor"),
    # Reductions over axis 1 (axes an input since opset 18), keepdims off.
    axis1("ReduceSum", "numpy.sum", kinds="exact"),
    axis1("ReduceMean", "numpy.mean", kinds="float"),
    axis1("ReduceMax", "numpy.max"),
    axis1("ReduceMin", "numpy.min"),
    axis1("ReduceProd", "numpy.prod", kinds="exact"),
    axis1("ReduceL2", "numpy.linalg.norm", kinds="float"),
    axis1("ReduceLogSumExp", "scipy.special.logsumexp", kinds="float"),
    op("ArgMax", ref="numpy.argmax", rk="{ axis = 1 }", kw="{ axis = 1, keepdims = 0 }"),
    op("ArgMin", ref="numpy.argmin", rk="{ axis = 1 }", kw="{ axis = 1, keepdims = 0 }"),
    op("CumSum", ref="numpy.cumsum", inputs=(X, '{ value = 1, dtype = "int64", as = "numpy" }'), kinds="exact"),
    # Linear algebra and networks.
    op("MatMul", ref="numpy.matmul", inputs=("{ shape = [4, 6] }", "{ shape = [6, 5] }")),
    op("Gemm", ref="numpy.matmul", inputs=("{ shape = [4, 6] }", "{ shape = [6, 5] }")),
    op("Einsum", kw='{ equation = "ij,jk->ik" }', inputs=("{ shape = [4, 6] }", "{ shape = [6, 5] }"),
       refop="einsum", np='return lambda: np.einsum("ij,jk->ik", a, b)', args="a, b"),
    op("Softmax", ref="scipy.special.softmax", rk="{ axis = -1 }"),
    op("LogSoftmax", ref="scipy.special.log_softmax", rk="{ axis = -1 }"),
    op("Conv", inputs=(NCHW, "{ shape = [4, 3, 3, 3] }"), kw="{ pads = [1, 1, 1, 1] }", refop="conv",
       np=CONV, args="x, w"),
    op("MaxPool", inputs=(NCHW,), kw=POOL, refop="max_pool",
       np="return lambda: x.reshape(2, 3, 4, 2, 4, 2).max(axis=(3, 5))"),
    op("AveragePool", inputs=(NCHW,), kw=POOL, refop="average_pool",
       np="return lambda: x.reshape(2, 3, 4, 2, 4, 2).mean(axis=(3, 5))"),
    op("GlobalAveragePool", inputs=(NCHW,), refop="global_average_pool",
       np="return lambda: x.mean(axis=(2, 3), keepdims=True)"),
    op("LayerNormalization", inputs=("{ shape = [4, 6] }", "{ shape = [6] }", "{ shape = [6] }"),
       refop="layer_norm", np=LAYER_NORM, args="x, scale, bias"),
    op("BatchNormalization",
       inputs=("{ shape = [2, 3, 4, 4] }", "{ shape = [3] }", "{ shape = [3] }", "{ shape = [3] }",
               '{ shape = [3], dist = "positive" }'),
       refop="batch_norm", note="inference mode: the running mean and variance are inputs",
       np=BATCH_NORM, args="x, scale, bias, mean, var"),
    op("TopK", inputs=(X, '{ value = [3], dtype = "int64", as = "numpy" }'), refop="top_k", np=TOP_K,
       args="x, k", code="def build(ctx, *xs, **a): return ctx.ort_op(xs, a, opset={opset}, outputs=2)",
       note="values and int64 indices of the 3 largest per row"),
    # Data movement.
    op("Transpose", ref="numpy.transpose", rk="{ axes = [1, 0, 2] }", kw="{ perm = [1, 0, 2] }",
       inputs=("{ shape = [2, 3, 4] }",)),
    op("Concat", ref="numpy.append", rk="{ axis = 0 }", kw="{ axis = 0 }",
       inputs=("{ shape = [2, 6] }", "{ shape = [3, 6] }")),
    op("Gather", ref="numpy.take", rk="{ axis = 0 }",
       inputs=(X, '{ value = [3, 0, 2, 2], dtype = "int64", as = "numpy" }')),
    op("Reshape", ref="numpy.reshape", inputs=(X, '{ value = [3, 8], dtype = "int64", as = "numpy" }')),
    op("Expand", ref="numpy.broadcast_to",
       inputs=("{ shape = [4, 1] }", '{ value = [4, 6], dtype = "int64", as = "numpy" }')),
    op("Tile", ref="numpy.tile", inputs=(X, '{ value = [2, 1], dtype = "int64", as = "numpy" }')),
    op("Squeeze", ref="numpy.squeeze", rk="{ axis = 1 }", kw="{ axes = [1] }", inputs=("{ shape = [4, 1, 6] }",),
       opset=11, note="opset 11, where axes is an attribute"),
    op("Unsqueeze", ref="numpy.expand_dims", rk="{ axis = 1 }", kw="{ axes = [1] }", opset=11,
       note="opset 11, where axes is an attribute"),
    op("Flatten", ref="numpy.reshape", rk="{ shape = [2, 12] }", kw="{ axis = 1 }", inputs=("{ shape = [2, 3, 4] }",)),
    op("Where", ref="numpy.where", inputs=(BOOL, X, X)),
    op("Clip", ref="numpy.clip", inputs=(X, "{ value = -0.5 }", "{ value = 0.5 }"), kinds="float", case="float"),
    op("Clip", ref="numpy.clip", inputs=(X, "{ value = 1 }", "{ value = 4 }"), kinds="int", case="int"),
    op("Cast", ref="numpy.asarray", rk='{ dtype = "float32" }', kw="{ to = 1 }", extra=('out_dtype = "float32"',),
       note="to float32 (TensorProto.FLOAT = 1)"),
]


def schema_dtypes(name, opset, inputs):
    """The usual dtypes every swept input (one without a fixed `dtype`) may take at `opset`."""
    schema = onnx.defs.get_schema(name, opset)
    out = list(USUAL)
    for i, spec in enumerate(inputs):
        if "dtype =" in spec:
            continue
        param = schema.inputs[min(i, len(schema.inputs) - 1)].type_str
        allowed = next((c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == param), [param])
        out = [d for d in out if f"tensor({ONNX_NAME.get(d, d)})" in allowed]
    return out


def sweep(o):
    """(opset, dtypes) of a case: its own opset or the operator's newest up to MAX_OPSET."""
    opset = o["opset"] or max(MIN_OPSET, onnx.defs.get_schema(o["name"], MAX_OPSET).since_version)
    keep = {
        "float": lambda d: d in FLOATS,
        "int": lambda d: d not in FLOATS and d != "bool",
        "exact": lambda d: d in FLOATS or d == "int64",
    }.get(o["kinds"], lambda d: True)
    return opset, [d for d in schema_dtypes(o["name"], opset, o["inputs"]) if keep(d)]


def onnxruntime_toml():
    print("\n".join("# " + line if line else "#" for line in __doc__.strip().splitlines()))
    print("#\n# Generated by scripts/onnxruntime_catalogue.py: edit that, not this.\n")
    print('format = 1\nframework = "onnxruntime"\nversion = "2026.12.05"\n')
    seen = set()
    for o in OPS:
        opset, dtypes = sweep(o)
        if o["name"] not in seen:
            seen.add(o["name"])
            print("# " + "-" * 93)
            print(f'[[function]]\nname = "ai.onnx.{o["name"]}"')
            if o["refop"]:
                print('op = "onnx"')
        print(f'\n  [[function.case]]\n  id = "{o["refop"] or o["case"]}"')
        if o["note"]:
            print(f"  # {o['note']}")
        print("  dtypes = [" + ", ".join(f'"{d}"' for d in dtypes) + "]")
        print("  inputs = [ " + ", ".join(o["inputs"]) + " ]")
        if o["kw"]:
            print(f"  kwargs = {o['kw']}")
        if o["ref"]:
            print(f'  reference = "{o["ref"]}"')
        if o["rk"]:
            print(f"  reference_kwargs = {o['rk']}")
        for line in o["extra"]:
            print(f"  {line}")
        q = "'" * 3
        print(f"  code = {q}{o['code'].format(opset=opset)}{q}\n")


def numpy_block():
    """The NumPy file's reference_only entries for the operators NumPy has no single function for."""
    print("# " + "-" * 93)
    print("# ONNX operators (catalogue/onnxruntime.toml): float64 answers written out in NumPy, with the")
    print("# same inputs as the operator's case, one case per operator (its id). The name only has to")
    print("# resolve: the code is NumPy array arithmetic. Generated by scripts/onnxruntime_catalogue.py --numpy.")
    print('[[function]]\nname = "numpy.ndarray"\nop = "onnx"\nreference_only = true')
    q = "'" * 3
    for o in OPS:
        if not o["refop"]:
            continue
        print(f'\n  # ONNX {o["name"]} ({o["kw"] or "default attributes"}).')
        print(f'  [[function.case]]\n  id = "{o["refop"]}"\n  dtypes = ["float64"]')
        print("  inputs = [ " + ", ".join(o["inputs"]) + " ]")
        print(f"  code = {q}\ndef build(ctx, {o['args']}):\n    np = ctx.np\n    {o['np']}\n{q}")


if __name__ == "__main__":
    numpy_block() if "--numpy" in sys.argv[1:] else onnxruntime_toml()
