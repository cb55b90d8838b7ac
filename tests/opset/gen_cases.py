#!/usr/bin/env python3
"""Generate per-opset test cases for onnxgrad's op list, in the ONNX backend layout.

For each op of tests/backend/og_backend_test.c (supported_ops) and each since-version v of it
with 7 <= v <= 21 (the version in force at opset 7 too), plus opset 21 where the op's latest
version is older, build small single-node models importing that opset and exercising that
version's form (attributes that became inputs, changed defaults).  Expected outputs come from
onnxruntime (CPU), or onnx.reference.ReferenceEvaluator where onnxruntime refuses the model.

usage: gen_cases.py OUT_DIR      writes OUT_DIR/test_<op>_v<opset>_<variant>/...
"""

import os
import re
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as onh
from onnx import TensorProto as TP

warnings.filterwarnings("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_
RNG = np.random.default_rng(20261130)


# ----------------------------------------------------------------------------- op list


def supported_ops():
    src = open(os.path.join(ROOT, "tests/backend/og_backend_test.c")).read()
    body = src[src.index("supported_ops[]") : src.index("NULL};")]
    return re.findall(r'"(\w+)"', body)


def since_table():
    inc = open(os.path.join(ROOT, "src/ops/since.inc")).read()
    return {
        m.group(1): [int(x) for x in m.group(2).split(",") if int(x.strip())]
        for m in re.finditer(r"og_since_(\w+)\[\] = \{([^}]*)\}", inc)
    }


def model_opsets(op, since):
    """Opsets to test: each since-version in 7..21 (the one in force at 7 maps to 7), and 21."""
    vs = since[op]
    out = sorted({7 if v < 7 else v for v in vs if v <= 21})
    if 21 not in out:
        out.append(21)
    return out


def active(op, opset, since):
    """The since-version in force for op at opset."""
    return max(v for v in since[op] if v <= opset)


# ----------------------------------------------------------------------------- data helpers


def rand(shape, dtype=F32, lo=-2.0, hi=2.0):
    if dtype in (I32, I64):
        return RNG.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    if dtype == BOOL:
        return RNG.integers(0, 2, size=shape).astype(BOOL)
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def away(shape, dtype=F32, lo=0.1, hi=2.0):
    """Nonzero values of both signs with |x| in [lo, hi] (away from kinks at 0)."""
    mag = RNG.uniform(lo, hi, size=shape)
    sign = np.where(RNG.integers(0, 2, size=shape) == 1, 1.0, -1.0)
    return (mag * sign).astype(dtype)


def frac(shape, dtype=F32):
    """Values away from integers and half-integers (Floor, Ceil, Round)."""
    k = RNG.integers(-3, 4, size=shape)
    return (k + RNG.uniform(0.1, 0.4, size=shape) * np.where(RNG.integers(0, 2, size=shape), 1, -1) + 0.0).astype(dtype)


def distinct(shape, dtype=F32):
    """Distinct values (TopK, ArgMax, MaxPool: no ties)."""
    n = int(np.prod(shape))
    v = RNG.permutation(n).astype(np.float64) * 0.25 - n * 0.1
    return v.reshape(shape).astype(dtype)


def i64(*v):
    return np.array(v, dtype=I64)


NP2TP = {
    np.dtype(F32): TP.FLOAT,
    np.dtype(F64): TP.DOUBLE,
    np.dtype(I32): TP.INT32,
    np.dtype(I64): TP.INT64,
    np.dtype(BOOL): TP.BOOL,
    np.dtype(np.uint8): TP.UINT8,
    np.dtype(np.int8): TP.INT8,
    np.dtype(np.float16): TP.FLOAT16,
    np.dtype(np.uint16): TP.UINT16,
    np.dtype(np.int16): TP.INT16,
}

# ----------------------------------------------------------------------------- case building


def value_info(name, v):
    """A graph input or output for a value: a list of arrays is a sequence of tensors (its
    items' dtype; no shape), an array a tensor (numpy strings are string tensors)."""
    if isinstance(v, list):
        dt = NP2TP[np.asarray(v[0]).dtype] if v else TP.FLOAT
        return oh.make_tensor_sequence_value_info(name, dt, None)
    v = np.asarray(v)
    dt = TP.STRING if v.dtype.kind in "OUS" else NP2TP[v.dtype]
    return oh.make_tensor_value_info(name, dt, list(v.shape))


def proto_of(v, name):
    """TensorProto, or SequenceProto for a list of arrays."""
    if isinstance(v, list):
        return onh.from_list([np.asarray(a) for a in v], name)
    v = np.asarray(v)
    if v.dtype.kind == "U":
        v = v.astype(object)
    return onh.from_array(v, name)

CASES = []  # (name, opset, node, input value infos, output names, feeds, fix, initializers)
NAMES = set()


def ir_for(opset):
    return {1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3, 7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9}.get(opset, 10)


REF_ONLY = set()  # cases onnxruntime must not see (it crashes on them)
ORACLES = {}  # case name -> function(feeds) giving the expected outputs (for forms onnxruntime lacks)


def case(op, opset, variant, inputs, attrs=None, n_out=1, out_names=None, fix=None, ref_only=False,
         oracle=None, node_inputs=None):
    """One single-node case.  inputs: list of (name, array) or None for an omitted optional.
    fix: optional function(outputs) -> outputs correcting a known onnxruntime deviation.
    oracle: optional function(feeds) -> outputs computing the expected outputs instead.
    node_inputs: how many of the inputs the node takes (the others are graph inputs only,
    which subgraphs read from the enclosing graph); all when None."""
    name = "test_%s_v%d_%s" % (op.lower(), opset, variant)
    assert name not in NAMES, name
    NAMES.add(name)
    if ref_only:
        REF_ONLY.add(name)
    if oracle:
        ORACLES[name] = oracle
    in_names, vis, feeds = [], [], {}
    for i, item in enumerate(inputs):
        if item is None:
            in_names.append("")
            continue
        nm, arr = item
        in_names.append(nm)
        vis.append(value_info(nm, arr))
        feeds[nm] = arr if isinstance(arr, list) else np.asarray(arr)
    outs = out_names or (["y"] if n_out == 1 else ["y%d" % i for i in range(n_out)])
    if node_inputs is not None:
        in_names = in_names[:node_inputs]
    node = oh.make_node(op, in_names, outs, **(attrs or {}))
    # An empty output name omits an optional output; the graph lists the others.
    CASES.append((name, opset, node, vis, [o for o in outs if o], feeds, fix, []))


def make_model(opset, node, vis, out_vis, inits):
    g = oh.make_graph([node], "g", vis, out_vis, initializer=inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)], producer_name="onnxgrad-opset")
    # IR 3 wants initializers listed as graph inputs too; IR 4 lets them stand alone.
    m.ir_version = max(ir_for(opset), 4) if inits else ir_for(opset)
    return m


def compute(opset, node, vis, outs, feeds, fix=None, inits=(), ref_only=False, oracle=None):
    """Expected outputs: the case's oracle, else onnxruntime, else the reference evaluator.
    Returns (arrays, model, source) or (None, None, why)."""
    untyped = []
    for o in outs:
        v = onnx.ValueInfoProto()
        v.name = o
        untyped.append(v)
    m = make_model(opset, node, vis, untyped, inits)
    res, err = None, None
    try:
        if ref_only:
            raise RuntimeError("onnxruntime skipped")
        if oracle:
            res = oracle({**feeds, **{i.name: onh.to_array(i) for i in inits}})
        else:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.log_severity_level = 4
            s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
            res = s.run(None, feeds)
        src = "ort"
    except Exception as e:  # onnxruntime refuses: fall back
        err = str(e).splitlines()[0][:200]
        try:
            from onnx.reference import ReferenceEvaluator

            res = ReferenceEvaluator(m).run(None, feeds)
            src = "ref"
        except Exception as e2:
            return None, None, "ort: %s; ref: %s" % (err, str(e2).splitlines()[0][:200])
    res = [[np.asarray(a) for a in r] if isinstance(r, list) else np.asarray(r) for r in res]
    if fix:
        res = fix(res)
    if src == "ort" and os.environ.get("OG_OPSET_CROSSCHECK"):
        try:
            from onnx.reference import ReferenceEvaluator

            ref = ReferenceEvaluator(m).run(None, feeds)
            for a, b in zip(res, ref):
                b = np.asarray(b)
                if a.shape != b.shape or a.dtype != b.dtype or not np.allclose(a, b, 1e-3, 1e-6, equal_nan=True):
                    print("  crosscheck: %s/%s differs from the reference evaluator" % (node.op_type, outs))
        except Exception as e:
            print("  crosscheck: %s: reference evaluator fails: %s" % (node.op_type, str(e).splitlines()[0][:100]))
    typed = [value_info(o, r) for o, r in zip(outs, res)]
    return res, make_model(opset, node, vis, typed, inits), src


# ----------------------------------------------------------------------------- families

SINCE = since_table()
OPS = supported_ops()
SKIP_OPS = {"Upsample"}  # deprecated, not asked for


def vers(op):
    return model_opsets(op, SINCE)


def act(op, opset):
    return active(op, opset, SINCE)


UNARY = {
    # op: (input generator, opset from which int32/int64 cases are made, or None)
    "Abs": (away, 7), "Neg": (away, 7), "Ceil": (frac, None), "Floor": (frac, None),
    "Round": (frac, None), "Cos": (rand, None), "Sin": (rand, None), "Tan": (lambda s: rand(s, lo=-1.2, hi=1.2), None),
    "Erf": (rand, None), "Exp": (rand, None), "Log": (lambda s: rand(s, lo=0.1, hi=3), None),
    "Reciprocal": (away, None), "Relu": (away, 14), "Sigmoid": (rand, None), "Sign": (away, 9),
    "Sqrt": (lambda s: rand(s, lo=0.1, hi=3), None), "Tanh": (rand, None), "Atan": (rand, None),
    "Asin": (lambda s: rand(s, lo=-0.9, hi=0.9), None), "Acos": (lambda s: rand(s, lo=-0.9, hi=0.9), None),
    "Sinh": (rand, None), "Cosh": (rand, None), "Asinh": (rand, None), "Acosh": (lambda s: rand(s, lo=1.1, hi=3), None),
    "Atanh": (lambda s: rand(s, lo=-0.9, hi=0.9), None), "Softplus": (rand, None), "Softsign": (rand, None),
    "HardSwish": (lambda s: away(s, lo=0.1, hi=4), None), "Mish": (rand, None),
}


def gen_unary():
    for op, (g, int_from) in UNARY.items():
        for v in vers(op):
            case(op, v, "f32", [("x", g((3, 4)))])
            if int_from and v >= int_from and act(op, v) >= 6:
                case(op, v, "i32", [("x", rand((2, 5), I32, -5, 5))])
                case(op, v, "i64", [("x", rand((2, 5), I64, -5, 5))])
        case(op, vers(op)[-1], "f64_3d", [("x", g((2, 3, 4)).astype(F64))])


ACTIV = {
    "Elu": [({}, "default"), ({"alpha": 0.5}, "alpha")],
    "HardSigmoid": [({}, "default"), ({"alpha": 0.3, "beta": 0.4}, "alpha_beta")],
    "LeakyRelu": [({}, "default"), ({"alpha": 0.2}, "alpha")],
    "Selu": [({}, "default"), ({"alpha": 1.5, "gamma": 2.5}, "alpha_gamma")],
    "ThresholdedRelu": [({}, "default"), ({"alpha": 0.5}, "alpha")],
    "Celu": [({}, "default"), ({"alpha": 2.0}, "alpha")],
    "Shrink": [({}, "default"), ({"lambd": 0.7, "bias": 0.3}, "lambd_bias")],
}


def gen_activations():
    for op, variants in ACTIV.items():
        for v in vers(op):
            for attrs, vn in variants:
                x = away((3, 4), lo=0.05, hi=2.5)
                if op in ("ThresholdedRelu", "Shrink"):  # keep away from the thresholds
                    x = np.where(np.abs(np.abs(x) - 1.0) < 0.1, x * 1.3, x)
                    x = np.where(np.abs(np.abs(x) - 0.5) < 0.1, x * 1.5, x)
                    x = np.where(np.abs(np.abs(x) - 0.7) < 0.1, x * 1.5, x).astype(F32)
                case(op, v, vn, [("x", x)], attrs)
    for v in vers("Shrink"):
        case("Shrink", v, "i32", [("x", i64(-5, -2, 0, 1, 4).astype(I32))], {"lambd": 1.5, "bias": 1.0})
    for v in vers("Gelu"):
        case("Gelu", v, "default", [("x", rand((3, 4), lo=-3, hi=3))])
        case("Gelu", v, "tanh", [("x", rand((3, 4), lo=-3, hi=3))], {"approximate": "tanh"})
    for v in vers("IsNaN"):
        x = np.array([1.0, np.nan, -np.inf, np.inf, 0.0, np.nan], F32)
        case("IsNaN", v, "f32", [("x", x)])
        case("IsNaN", v, "f64", [("x", x.astype(F64))])
    for v in vers("IsInf"):
        x = np.array([1.0, np.nan, -np.inf, np.inf, 0.0, -2.0], F32)
        case("IsInf", v, "default", [("x", x)])
        case("IsInf", v, "neg_only", [("x", x)], {"detect_positive": 0})
        case("IsInf", v, "pos_only", [("x", x.astype(F64))], {"detect_negative": 0})


BINARY = ["Add", "Sub", "Mul", "Div"]


def gen_binary():
    for op in BINARY:
        for v in vers(op):
            case(op, v, "same", [("a", rand((3, 4))), ("b", away((3, 4)))])
            case(op, v, "bcast", [("a", rand((2, 3, 4))), ("b", away((4,)))])
            case(op, v, "bcast_both", [("a", rand((2, 1, 4))), ("b", away((3, 1)))])
            case(op, v, "i32", [("a", rand((3, 4), I32, -9, 9)), ("b", RNG.choice([-3, -2, -1, 1, 2, 5], (3, 4)).astype(I32))])
            case(op, v, "i64_bcast", [("a", rand((2, 3), I64, -9, 9)), ("b", i64(2, -3, 7))])
            case(op, v, "f64", [("a", rand((2, 3), F64)), ("b", away((1,), F64))])
    for v in vers("Pow"):
        case("Pow", v, "f32", [("a", rand((3, 4), lo=0.2, hi=2)), ("b", rand((3, 4), lo=-2, hi=2))])
        case("Pow", v, "bcast", [("a", rand((2, 3), lo=0.2, hi=2)), ("b", np.array([2.0, 0.5, 3.0], F32))])
        if act("Pow", v) >= 12:
            case("Pow", v, "f32_i64exp", [("a", away((2, 3))), ("b", i64(2, 3, 0))])
            case("Pow", v, "i64_i64", [("a", rand((2, 3), I64, -4, 4)), ("b", i64(0, 1, 3))])
            case("Pow", v, "i32_f32", [("a", rand((2, 3), I32, -4, 4)), ("b", np.array([2.0, 1.0, 3.0], F32))])
    for v in vers("Mod"):
        a = np.array([[-7, 5, 9, -4], [13, -13, 8, 0]], I64)
        b = np.array([3, -3, 4, 5], I64)
        case("Mod", v, "i64", [("a", a), ("b", b)])
        case("Mod", v, "i32", [("a", a.astype(I32)), ("b", b.astype(I32))])
        case("Mod", v, "i64_fmod", [("a", a), ("b", b)], {"fmod": 1})
        fa = np.array([[-7.3, 5.2, 9.7, -4.4], [13.1, -13.1, 8.6, 0.3]], F32)
        case("Mod", v, "f32_fmod", [("a", fa), ("b", np.array([3.0, -3.0, 4.0, 5.0], F32))], {"fmod": 1})
    for op in ("And", "Or", "Xor"):
        for v in vers(op):
            case(op, v, "same", [("a", rand((3, 4), BOOL)), ("b", rand((3, 4), BOOL))])
            case(op, v, "bcast", [("a", rand((2, 3, 4), BOOL)), ("b", rand((4,), BOOL))])
    for v in vers("Not"):
        case("Not", v, "bool", [("x", rand((3, 4), BOOL))])
    for op in ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"):
        for v in vers(op):
            a = rand((3, 4), I32, -2, 2)
            b = rand((4,), I32, -2, 2)
            if op not in ("Greater", "Less") or act(op, v) >= 9:  # float only at 7
                case(op, v, "i32_bcast", [("a", a), ("b", b)])
                case(op, v, "i64", [("a", a.astype(I64)), ("b", rand((3, 4), I64, -2, 2))])
            fa = rand((3, 4), F32, -2, 2).round(0)
            if op != "Equal" or act(op, v) >= 11:
                case(op, v, "f32", [("a", fa), ("b", rand((3, 1), F32, -2, 2).round(0))])
                case(op, v, "f64", [("a", fa.astype(F64)), ("b", rand((4,), F64).round(0))])
            if op == "Equal":
                case(op, v, "bool", [("a", rand((3, 4), BOOL)), ("b", rand((3, 4), BOOL))])
    for v in vers("PRelu"):
        case("PRelu", v, "same", [("x", away((3, 4))), ("slope", rand((3, 4), lo=0.05, hi=0.5))])
        case("PRelu", v, "channel", [("x", away((2, 3, 4, 2))), ("slope", rand((3, 1, 1), lo=0.05, hi=0.5))])
        case("PRelu", v, "scalar", [("x", away((2, 3))), ("slope", np.array([0.25], F32))])
        if act("PRelu", v) >= 9:
            case("PRelu", v, "i32", [("x", rand((2, 3), I32, -5, 5)), ("slope", i64(2, 3, 1).astype(I32))])
            case("PRelu", v, "i64", [("x", rand((2, 3), I64, -5, 5)), ("slope", i64(2, 3, 1))])
    for op in ("Max", "Min", "Mean", "Sum"):
        for v in vers(op):
            case(op, v, "one", [("a", rand((3, 4)))])
            case(op, v, "three", [("a", rand((3, 4))), ("b", rand((3, 4))), ("c", rand((3, 4)))])
            if act(op, v) >= 8:
                case(op, v, "bcast", [("a", rand((2, 3, 4))), ("b", rand((4,))), ("c", rand((3, 1)))])
            if op in ("Max", "Min") and act(op, v) >= 12:
                case(op, v, "i32", [("a", rand((3, 4), I32, -9, 9)), ("b", rand((4,), I32, -9, 9))])
                case(op, v, "i64", [("a", rand((3, 4), I64, -9, 9)), ("b", rand((3, 4), I64, -9, 9))])
            case(op, v, "f64", [("a", rand((2, 3), F64)), ("b", rand((2, 3), F64))])


REDUCE = ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
          "ReduceProd", "ReduceSum", "ReduceSumSquare", "ReduceLogSum"]


NOOP = {"ReduceL1": np.abs, "ReduceL2": np.abs, "ReduceLogSum": np.log, "ReduceSumSquare": np.square}


def noop_elementwise(op):
    return NOOP.get(op, lambda a: a)


def gen_reduce():
    for op in REDUCE:
        axes_input_from = 13 if op == "ReduceSum" else 18
        pos = op in ("ReduceLogSum",)
        for v in vers(op):
            def x(shape=(2, 3, 4), dt=F32):
                return rand(shape, dt, lo=0.2 if pos else -1.5, hi=1.5)
            a = act(op, v)
            case(op, v, "all_default", [("x", x())])
            case(op, v, "all_keep0", [("x", x())], {"keepdims": 0})
            if a < axes_input_from:
                case(op, v, "axes_attr", [("x", x())], {"axes": [1]})
                case(op, v, "axes_attr_keep0", [("x", x())], {"axes": [0, 2], "keepdims": 0})
                if a >= 11:
                    case(op, v, "axes_attr_neg", [("x", x())], {"axes": [-1]})
            else:
                case(op, v, "axes_input", [("x", x()), ("axes", i64(1))])
                case(op, v, "axes_input_keep0", [("x", x()), ("axes", i64(0, 2))], {"keepdims": 0})
                case(op, v, "axes_input_neg", [("x", x()), ("axes", i64(-1, -3))])
                case(op, v, "axes_empty", [("x", x()), ("axes", np.zeros((0,), I64))])
                # No axes with noop_with_empty_axes: the element-wise part of the reduction alone,
                # as the spec reads since onnx PR 7137 (onnxruntime before 1.23 returns the input).
                xa, xb = x(), x()
                case(op, v, "noop_empty", [("x", xa), ("axes", np.zeros((0,), I64))], {"noop_with_empty_axes": 1},
                     fix=lambda r, xa=xa, op=op: [noop_elementwise(op)(xa)])
                case(op, v, "noop_no_axes", [("x", xb)], {"noop_with_empty_axes": 1}, fix=lambda r, xb=xb, op=op: [noop_elementwise(op)(xb)])
            if op in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean", "ReduceL1", "ReduceSumSquare"):
                xi = rand((2, 3, 4), I32, -3, 3)
                if a < axes_input_from:
                    case(op, v, "i32", [("x", xi)], {"axes": [1]})
                    case(op, v, "i64", [("x", xi.astype(I64))], {"axes": [0], "keepdims": 0})
                else:
                    case(op, v, "i32", [("x", xi), ("axes", i64(1))])
                    case(op, v, "i64", [("x", xi.astype(I64)), ("axes", i64(0))], {"keepdims": 0})
            if op in ("ReduceMax", "ReduceMin") and a >= 20:
                case(op, v, "bool", [("x", rand((3, 4), BOOL)), ("axes", i64(1))])
            case(op, v, "f64", [("x", x((3, 5), F64))], {"keepdims": 0} if a >= axes_input_from else {"axes": [1]})
    for op in ("ArgMax", "ArgMin"):
        for v in vers(op):
            x = distinct((3, 4, 5))
            case(op, v, "default", [("x", x)])
            case(op, v, "axis1_keep0", [("x", x)], {"axis": 1, "keepdims": 0})
            if act(op, v) >= 11:
                case(op, v, "neg_axis", [("x", x)], {"axis": -1})
            if act(op, v) >= 12:
                t = np.array([[1, 3, 3, 0], [2, 2, 1, 1]], F32)
                case(op, v, "last_index", [("x", t)], {"axis": 1, "select_last_index": 1})
                case(op, v, "first_index", [("x", t)], {"axis": 1, "select_last_index": 0})
            case(op, v, "i32", [("x", distinct((3, 4)).astype(I32))], {"axis": 1})
            case(op, v, "i64", [("x", distinct((3, 4)).astype(I64))], {"axis": 0})
    for op in ("Softmax", "LogSoftmax"):
        for v in vers(op):
            x = rand((2, 3, 4), lo=-3, hi=3)
            case(op, v, "default", [("x", x)])
            case(op, v, "axis0", [("x", x)], {"axis": 0})
            case(op, v, "axis1", [("x", x)], {"axis": 1})
            case(op, v, "axis2", [("x", x)], {"axis": 2})
            if act(op, v) >= 11:
                case(op, v, "axis_neg", [("x", x)], {"axis": -2})
            case(op, v, "f64_2d", [("x", x.reshape(6, 4).astype(F64))])
    for v in vers("CumSum"):
        x = rand((3, 4), lo=-2, hi=2)
        for nm, at in [("default", {}), ("exclusive", {"exclusive": 1}), ("reverse", {"reverse": 1}),
                       ("excl_rev", {"exclusive": 1, "reverse": 1})]:
            case("CumSum", v, nm, [("x", x), ("axis", np.array(1, I64))], at)
        case("CumSum", v, "axis0_i32", [("x", rand((3, 4), I32, -5, 5)), ("axis", np.array(0, I32))])
        case("CumSum", v, "neg_axis_i64", [("x", rand((2, 3, 4), I64, -5, 5)), ("axis", np.array(-2, I64))])
        case("CumSum", v, "f64", [("x", rand((5,), F64)), ("axis", np.array(0, I64))])
    for v in vers("TopK"):
        x = distinct((3, 6))
        a = act("TopK", v)
        if a < 10:
            case("TopK", v, "k_attr", [("x", x)], {"k": 2}, n_out=2)
            case("TopK", v, "k_attr_axis0", [("x", x)], {"k": 2, "axis": 0}, n_out=2)
        else:
            case("TopK", v, "k_input", [("x", x), ("k", i64(3))], n_out=2)
            case("TopK", v, "k_input_axis0", [("x", x), ("k", i64(2))], {"axis": 0}, n_out=2)
        if a >= 11:
            case("TopK", v, "smallest", [("x", x), ("k", i64(3))], {"largest": 0}, n_out=2)
            case("TopK", v, "neg_axis", [("x", distinct((2, 3, 4))), ("k", i64(2))], {"axis": -2}, n_out=2)
            case("TopK", v, "i64", [("x", distinct((2, 5)).astype(I64)), ("k", i64(2))], n_out=2)
            case("TopK", v, "i32_smallest", [("x", distinct((2, 5)).astype(I32)), ("k", i64(4))], {"largest": 0}, n_out=2)
            case("TopK", v, "f64", [("x", distinct((4, 3), F64)), ("k", i64(1))], n_out=2)


def gen_shape_ops():
    x234 = lambda dt=F32: rand((2, 3, 4), dt, -9, 9) if dt != F32 else rand((2, 3, 4))
    for v in vers("Reshape"):
        case("Reshape", v, "basic", [("x", x234()), ("shape", i64(4, 6))])
        case("Reshape", v, "minus1", [("x", x234()), ("shape", i64(-1, 2))])
        case("Reshape", v, "zero_copy", [("x", x234()), ("shape", i64(0, 12))])
        case("Reshape", v, "i64", [("x", x234(I64)), ("shape", i64(3, 8))])
        case("Reshape", v, "to_scalar", [("x", np.array([2.5], F32)), ("shape", np.zeros((0,), I64))])
        case("Reshape", v, "bool", [("x", rand((2, 3, 4), BOOL)), ("shape", i64(24))])
        if act("Reshape", v) >= 14:
            case("Reshape", v, "allowzero", [("x", np.zeros((0, 3, 4), F32)), ("shape", i64(3, 4, 0))], {"allowzero": 1})
            case("Reshape", v, "allowzero0", [("x", x234()), ("shape", i64(0, 3, 4))], {"allowzero": 0})
    for v in vers("Flatten"):
        case("Flatten", v, "default", [("x", x234())])
        case("Flatten", v, "axis0", [("x", x234())], {"axis": 0})
        case("Flatten", v, "axis3", [("x", x234())], {"axis": 3})
        if act("Flatten", v) >= 11:
            case("Flatten", v, "neg_axis", [("x", x234())], {"axis": -1})
        if act("Flatten", v) >= 9:
            case("Flatten", v, "i32", [("x", x234(I32))], {"axis": 2})
    for v in vers("Squeeze"):
        x = rand((1, 3, 1, 4))
        if act("Squeeze", v) < 13:
            case("Squeeze", v, "axes_attr", [("x", x)], {"axes": [0]})
            case("Squeeze", v, "all", [("x", x)])
            if act("Squeeze", v) >= 11:
                case("Squeeze", v, "neg_axes", [("x", x)], {"axes": [-2, 0]})
        else:
            case("Squeeze", v, "axes_input", [("x", x), ("axes", i64(0))])
            case("Squeeze", v, "all", [("x", x)])
            case("Squeeze", v, "neg_axes", [("x", x), ("axes", i64(-2, 0))])
            case("Squeeze", v, "i64", [("x", rand((1, 3, 1), I64, -5, 5)), ("axes", i64(2))])
    for v in vers("Unsqueeze"):
        x = rand((3, 4))
        if act("Unsqueeze", v) < 13:
            case("Unsqueeze", v, "axes_attr", [("x", x)], {"axes": [0]})
            case("Unsqueeze", v, "two_axes", [("x", x)], {"axes": [1, 3]})
            if act("Unsqueeze", v) >= 11:
                case("Unsqueeze", v, "neg_axes", [("x", x)], {"axes": [-1]})
        else:
            case("Unsqueeze", v, "axes_input", [("x", x), ("axes", i64(0))])
            case("Unsqueeze", v, "two_axes", [("x", x), ("axes", i64(3, 1))])
            case("Unsqueeze", v, "neg_axes", [("x", x), ("axes", i64(-1))])
            case("Unsqueeze", v, "bool", [("x", rand((2,), BOOL)), ("axes", i64(0))])
    for v in vers("Transpose"):
        case("Transpose", v, "default", [("x", x234())])
        case("Transpose", v, "perm", [("x", x234())], {"perm": [1, 2, 0]})
        case("Transpose", v, "i64_4d", [("x", rand((2, 3, 2, 2), I64, -9, 9))], {"perm": [0, 2, 3, 1]})
        case("Transpose", v, "bool", [("x", rand((3, 2), BOOL))])
    for v in vers("Concat"):
        case("Concat", v, "axis0", [("a", rand((2, 3))), ("b", rand((1, 3)))], {"axis": 0})
        case("Concat", v, "axis1_three", [("a", rand((2, 3))), ("b", rand((2, 1))), ("c", rand((2, 2)))], {"axis": 1})
        if act("Concat", v) >= 11:
            case("Concat", v, "neg_axis", [("a", rand((2, 3, 2))), ("b", rand((2, 3, 1)))], {"axis": -1})
        case("Concat", v, "i64", [("a", rand((2, 3), I64, -9, 9)), ("b", rand((2, 3), I64, -9, 9))], {"axis": 1})
        case("Concat", v, "bool", [("a", rand((2,), BOOL)), ("b", rand((3,), BOOL))], {"axis": 0})
    for v in vers("Split"):
        x = rand((6, 4))
        a = act("Split", v)
        if a < 13:
            case("Split", v, "equal", [("x", x)], {"axis": 0}, n_out=3)
            case("Split", v, "split_attr", [("x", x)], {"axis": 0, "split": [1, 2, 3]}, n_out=3)
            case("Split", v, "axis1", [("x", x)], {"axis": 1, "split": [3, 1]}, n_out=2)
            if a >= 11:
                case("Split", v, "neg_axis", [("x", x)], {"axis": -1}, n_out=2)
        else:
            case("Split", v, "equal", [("x", x)], {"axis": 0} if a < 18 else {"axis": 0, "num_outputs": 3}, n_out=3)
            case("Split", v, "split_input", [("x", x), ("split", i64(1, 2, 3))], {"axis": 0}, n_out=3)
            case("Split", v, "neg_axis", [("x", x), ("split", i64(3, 1))], {"axis": -1}, n_out=2)
            case("Split", v, "i64", [("x", rand((4, 2), I64, -9, 9)), ("split", i64(2, 2))], n_out=2)
            if a >= 18:
                case("Split", v, "num_outputs_uneven", [("x", rand((7, 2)))], {"axis": 0, "num_outputs": 3}, n_out=3)
                case("Split", v, "num_outputs_axis1", [("x", rand((2, 5)))], {"axis": 1, "num_outputs": 2}, n_out=2)
    for v in vers("Slice"):
        x = rand((4, 5, 3))
        if act("Slice", v) < 10:
            case("Slice", v, "attrs", [("x", x)], {"starts": [1, 0], "ends": [3, 4], "axes": [0, 1]})
            case("Slice", v, "no_axes", [("x", x)], {"starts": [1], "ends": [1000]})
            case("Slice", v, "neg", [("x", x)], {"starts": [-3], "ends": [-1], "axes": [1]})
        else:
            case("Slice", v, "inputs", [("x", x), ("starts", i64(1, 0)), ("ends", i64(3, 4)), ("axes", i64(0, 1))])
            case("Slice", v, "no_axes", [("x", x), ("starts", i64(1)), ("ends", i64(1000))])
            case("Slice", v, "steps", [("x", x), ("starts", i64(0, 4)), ("ends", i64(5, 0)), ("axes", i64(1, 0)), ("steps", i64(2, -1))])
            case("Slice", v, "steps_no_axes", [("x", x), ("starts", i64(3, 0)), ("ends", i64(0, 5)), None, ("steps", i64(-1, 2))])
            case("Slice", v, "neg_step_end", [("x", x), ("starts", i64(-1)), ("ends", i64(-1000)), ("axes", i64(1)), ("steps", i64(-2))])
            case("Slice", v, "i32_idx", [("x", x), ("starts", np.array([1], I32)), ("ends", np.array([-1], I32)), ("axes", np.array([2], I32))])
            if act("Slice", v) >= 11:
                case("Slice", v, "neg_axes", [("x", x), ("starts", i64(1)), ("ends", i64(3)), ("axes", i64(-2))])
            case("Slice", v, "i64_data", [("x", rand((4, 3), I64, -9, 9)), ("starts", i64(1)), ("ends", i64(3))])
    for v in vers("Tile"):
        case("Tile", v, "basic", [("x", rand((2, 3))), ("repeats", i64(2, 3))])
        case("Tile", v, "i32_3d", [("x", rand((2, 1, 2), I32, -9, 9)), ("repeats", i64(1, 3, 2))])
        case("Tile", v, "bool", [("x", rand((2,), BOOL)), ("repeats", i64(3))])
    for v in vers("Expand"):
        case("Expand", v, "basic", [("x", rand((3, 1))), ("shape", i64(2, 3, 4))])
        case("Expand", v, "smaller_shape", [("x", rand((2, 3, 1))), ("shape", i64(1, 5))])
        case("Expand", v, "i64", [("x", rand((1, 3), I64, -9, 9)), ("shape", i64(4, 1))])
        case("Expand", v, "bool", [("x", rand((3,), BOOL)), ("shape", i64(2, 3))])
    for v in vers("Gather"):
        x = rand((5, 4))
        case("Gather", v, "axis0", [("x", x), ("idx", i64(0, 4, 2))])
        case("Gather", v, "axis1_2d_idx", [("x", x), ("idx", np.array([[0, 3], [1, 1]], I64))], {"axis": 1})
        case("Gather", v, "i32_idx", [("x", rand((3, 4, 2), I64, -9, 9)), ("idx", np.array([2, 0], I32))], {"axis": 1})
        case("Gather", v, "scalar_idx", [("x", x), ("idx", np.array(3, I64))])
        if act("Gather", v) >= 11:
            case("Gather", v, "neg_idx", [("x", x), ("idx", i64(-1, -5, 0))])
            case("Gather", v, "neg_axis", [("x", x), ("idx", i64(1))], {"axis": -1})
    for v in vers("GatherElements"):
        x = rand((3, 4))
        case("GatherElements", v, "axis0", [("x", x), ("idx", np.array([[0, 2, 1, 0], [2, 2, 0, 1]], I64))])
        case("GatherElements", v, "axis1_neg_idx", [("x", x), ("idx", np.array([[0, -1], [3, 1], [-4, 2]], I64))], {"axis": 1})
        case("GatherElements", v, "neg_axis_i32", [("x", rand((2, 3), I32, -9, 9)), ("idx", np.array([[1, 0], [2, 2]], I32))], {"axis": -1})
    for v in vers("GatherND"):
        x = rand((2, 3, 4))
        case("GatherND", v, "full", [("x", x), ("idx", np.array([[0, 1, 2], [1, 2, 3]], I64))])
        case("GatherND", v, "slices", [("x", x), ("idx", np.array([[1], [0]], I64))])
        case("GatherND", v, "i64_data", [("x", rand((3, 3), I64, -9, 9)), ("idx", np.array([[[0, 1]], [[2, 2]]], I64))])
        if act("GatherND", v) >= 12:
            case("GatherND", v, "batch_dims1", [("x", x), ("idx", np.array([[1], [2]], I64))], {"batch_dims": 1})
            case("GatherND", v, "batch_dims1_elem", [("x", x), ("idx", np.array([[[1, 0]], [[2, 3]]], I64))], {"batch_dims": 1})
            case("GatherND", v, "neg_idx", [("x", x), ("idx", np.array([[-1, -1]], I64))])
    for op in ("ScatterElements", "Scatter"):
        for v in vers(op):
            if op == "Scatter" and v > 10:
                continue  # deprecated at 11
            x = rand((3, 4))
            idx = np.array([[1, 0, 2, 0], [0, 2, 1, 1]], I64)
            upd = rand((2, 4))
            case(op, v, "axis0", [("x", x), ("idx", idx), ("upd", upd)])
            case(op, v, "axis1", [("x", x), ("idx", np.array([[3], [1], [0]], I64)), ("upd", rand((3, 1)))], {"axis": 1})
            case(op, v, "i32_idx", [("x", rand((3, 3), I64, -9, 9)), ("idx", np.array([[2, 0]], I32)), ("upd", i64(7, 8).reshape(1, 2))], {"axis": 1})
            if op == "ScatterElements" and v >= 11:
                case(op, v, "neg_idx", [("x", x), ("idx", np.array([[-1, 0, -3, 1]], I64)), ("upd", rand((1, 4)))])
                case(op, v, "neg_axis", [("x", x), ("idx", np.array([[0, 3]], I64)), ("upd", rand((1, 2)))], {"axis": -1})
                a = act(op, v)
                dup = np.array([[1, 0, 1, 0], [1, 2, 1, 1]], I64)
                reds = ["add", "mul"] if a >= 16 else []
                reds += ["max", "min"] if a >= 18 else []
                for r in reds:
                    case(op, v, "red_" + r, [("x", x), ("idx", dup), ("upd", rand((2, 4)))], {"reduction": r})
                if a >= 16:
                    case(op, v, "red_add_i64", [("x", rand((3, 4), I64, -9, 9)), ("idx", dup), ("upd", rand((2, 4), I64, -9, 9))], {"reduction": "add"})
    for v in vers("ScatterND"):
        x = rand((4, 3))
        case("ScatterND", v, "rows", [("x", x), ("idx", np.array([[2], [0]], I64)), ("upd", rand((2, 3)))])
        case("ScatterND", v, "elems", [("x", x), ("idx", np.array([[0, 1], [3, 2]], I64)), ("upd", rand((2,)))])
        case("ScatterND", v, "i64_3d", [("x", rand((2, 3, 2), I64, -9, 9)), ("idx", np.array([[1, 2]], I64)), ("upd", i64(5, 6).reshape(1, 2))])
        a = act("ScatterND", v)
        reds = (["add", "mul"] if a >= 16 else []) + (["max", "min"] if a >= 18 else [])
        for r in reds:
            case("ScatterND", v, "red_" + r, [("x", x), ("idx", np.array([[1], [1], [3]], I64)), ("upd", rand((3, 3)))], {"reduction": r})
    for v in vers("Pad"):
        x = rand((2, 3))
        a = act("Pad", v)
        if a < 11:
            case("Pad", v, "constant", [("x", x)], {"pads": [0, 1, 1, 2], "value": 1.5})
            case("Pad", v, "default", [("x", x)], {"pads": [1, 0, 0, 1]})
            case("Pad", v, "reflect", [("x", rand((3, 4)))], {"pads": [1, 2, 1, 2], "mode": "reflect"})
            case("Pad", v, "edge", [("x", x)], {"pads": [2, 1, 1, 0], "mode": "edge"})
            case("Pad", v, "negative", [("x", rand((3, 4)))], {"pads": [-1, 1, 0, -2]})
        else:
            case("Pad", v, "constant", [("x", x), ("pads", i64(0, 1, 1, 2)), ("cv", np.array(1.5, F32))])
            case("Pad", v, "default", [("x", x), ("pads", i64(1, 0, 0, 1))])
            case("Pad", v, "reflect", [("x", rand((3, 4))), ("pads", i64(1, 2, 1, 2))], {"mode": "reflect"})
            case("Pad", v, "edge", [("x", x), ("pads", i64(2, 1, 1, 0))], {"mode": "edge"})
            case("Pad", v, "negative", [("x", rand((3, 4))), ("pads", i64(-1, 1, 0, -2))])
            case("Pad", v, "i64", [("x", rand((2, 3), I64, -9, 9)), ("pads", i64(1, 1, 1, 1)), ("cv", np.array(7, I64))])
            case("Pad", v, "i32_edge", [("x", rand((2, 3), I32, -9, 9)), ("pads", i64(0, 2, 0, 1))], {"mode": "edge"})
            if a >= 18:
                case("Pad", v, "axes", [("x", rand((2, 3, 4))), ("pads", i64(1, 2)), ("cv", np.array(-1.0, F32)), ("axes", i64(2))])
                case("Pad", v, "axes_neg_i32", [("x", rand((2, 3, 4))), ("pads", i64(1, 0, 1, 2)), None, ("axes", np.array([0, -1], I32))])
            if a >= 19:
                case("Pad", v, "wrap", [("x", rand((3, 4))), ("pads", i64(1, 2, 2, 1))], {"mode": "wrap"})
            if a >= 13:
                case("Pad", v, "bool", [("x", rand((2, 2), BOOL)), ("pads", i64(1, 0, 0, 1))])
    for v in vers("Shape"):
        case("Shape", v, "basic", [("x", x234())])
        case("Shape", v, "i64_scalar", [("x", np.array(3, I64))])
        if act("Shape", v) >= 15:
            case("Shape", v, "start", [("x", rand((2, 3, 4, 5)))], {"start": 1})
            case("Shape", v, "start_end_neg", [("x", rand((2, 3, 4, 5)))], {"start": -3, "end": -1})
            case("Shape", v, "clamped", [("x", rand((2, 3)))], {"start": -10, "end": 10})
    for v in vers("Size"):
        case("Size", v, "basic", [("x", x234())])
        case("Size", v, "bool", [("x", rand((3, 0), BOOL))])
        case("Size", v, "i32_scalar", [("x", np.array(5, I32))])
    for v in vers("Identity"):
        case("Identity", v, "f32", [("x", x234())])
        case("Identity", v, "i64", [("x", x234(I64))])
        case("Identity", v, "bool", [("x", rand((4,), BOOL))])
    for v in vers("Where"):
        c = rand((3, 4), BOOL)
        case("Where", v, "same", [("c", c), ("a", rand((3, 4))), ("b", rand((3, 4)))])
        case("Where", v, "bcast", [("c", rand((4,), BOOL)), ("a", rand((3, 1))), ("b", rand((1,)))])
        case("Where", v, "i64", [("c", c), ("a", rand((3, 4), I64, -9, 9)), ("b", rand((4,), I64, -9, 9))])
        case("Where", v, "i32", [("c", c), ("a", rand((3, 4), I32, -9, 9)), ("b", rand((3, 4), I32, -9, 9))])
    for v in vers("Trilu"):
        x = rand((2, 3, 4))
        case("Trilu", v, "upper", [("x", x)])
        case("Trilu", v, "lower", [("x", x)], {"upper": 0})
        case("Trilu", v, "upper_k", [("x", x), ("k", np.array(1, I64))])
        case("Trilu", v, "lower_kneg", [("x", rand((4, 3))), ("k", np.array(-1, I64))], {"upper": 0})
        case("Trilu", v, "i64", [("x", rand((3, 3), I64, -9, 9))])
    for v in vers("Range"):
        case("Range", v, "f32", [("s", np.array(1.0, F32)), ("l", np.array(5.5, F32)), ("d", np.array(0.75, F32))])
        case("Range", v, "i64_neg", [("s", np.array(10, I64)), ("l", np.array(2, I64)), ("d", np.array(-3, I64))])
        case("Range", v, "i32", [("s", np.array(-2, I32)), ("l", np.array(4, I32)), ("d", np.array(1, I32))])
        case("Range", v, "empty", [("s", np.array(5, I64)), ("l", np.array(2, I64)), ("d", np.array(1, I64))])
        case("Range", v, "f64", [("s", np.array(0.0, F64)), ("l", np.array(1.0, F64)), ("d", np.array(0.3, F64))])
    for v in vers("OneHot"):
        case("OneHot", v, "default", [("idx", i64(0, 2, 1)), ("depth", np.array(4, I64)), ("vals", np.array([0.0, 1.0], F32))])
        case("OneHot", v, "axis0", [("idx", np.array([[1, 3], [0, 2]], I64)), ("depth", np.array(4, I64)), ("vals", np.array([-1, 5], I64))], {"axis": 0})
        case("OneHot", v, "i32_idx_f32_depth", [("idx", np.array([1, 2], I32)), ("depth", np.array([3.0], F32)), ("vals", np.array([2.0, 7.0], F32))])
        if act("OneHot", v) >= 11:
            case("OneHot", v, "neg_idx", [("idx", i64(-1, 0, -3)), ("depth", np.array(3, I64)), ("vals", np.array([0.0, 1.0], F32))], {"axis": -2})
    for v in vers("Einsum"):
        case("Einsum", v, "matmul", [("a", rand((2, 3))), ("b", rand((3, 4)))], {"equation": "ij,jk->ik"})
        case("Einsum", v, "batch", [("a", rand((2, 3, 4))), ("b", rand((2, 4, 2)))], {"equation": "bij,bjk->bik"})
        case("Einsum", v, "transpose", [("a", rand((2, 3)))], {"equation": "ij->ji"})
        case("Einsum", v, "sum_implicit", [("a", rand((2, 3))), ("b", rand((3,)))], {"equation": "ij,j"})
        case("Einsum", v, "trace", [("a", rand((3, 3)))], {"equation": "ii"})
        case("Einsum", v, "ellipsis", [("a", rand((2, 2, 3))), ("b", rand((3, 4)))], {"equation": "...j,jk->...k"})
        case("Einsum", v, "i64_outer", [("a", rand((2,), I64, -5, 5)), ("b", rand((3,), I64, -5, 5))], {"equation": "i,j->ij"})


def gen_edges():
    """Empty tensors and scalars at the latest opset: shapes with zero extents."""
    v = 21
    case("Add", v, "edge_empty", [("a", np.zeros((0, 3), F32)), ("b", rand((3,)))])
    case("Relu", v, "edge_scalar", [("x", np.array(-1.5, F32))])
    case("Mul", v, "edge_scalar_bcast", [("a", np.array(2.0, F32)), ("b", rand((2, 3)))])
    case("ReduceSum", v, "edge_empty_axis", [("x", np.zeros((0, 3), F32)), ("axes", i64(0))])
    case("ReduceSum", v, "edge_empty_keep0", [("x", np.zeros((2, 0), F32)), ("axes", i64(0))], {"keepdims": 0})
    case("ReduceProd", v, "edge_empty_axis", [("x", np.zeros((0, 3), F32)), ("axes", i64(0))])
    case("Concat", v, "edge_with_empty", [("a", rand((2, 3))), ("b", np.zeros((0, 3), F32))], {"axis": 0})
    case("Slice", v, "edge_to_empty", [("x", rand((4, 3))), ("starts", i64(3)), ("ends", i64(1))])
    case("Transpose", v, "edge_empty", [("x", np.zeros((2, 0, 3), F32))], {"perm": [2, 0, 1]})
    case("MatMul", v, "edge_empty_k", [("a", np.zeros((2, 0), F32)), ("b", np.zeros((0, 3), F32))])
    case("Gather", v, "edge_empty_idx", [("x", rand((4, 3))), ("idx", np.zeros((0,), I64))])
    case("Softmax", v, "edge_scalar_row", [("x", rand((3, 1)))])
    case("Where", v, "edge_scalars", [("c", np.array(True)), ("a", np.array(1.0, F32)), ("b", rand((2,)))])


def avgpool2d_incl_pad(x, k, st, pad, out_hw):
    """AveragePool, count_include_pad=1, square kernel/stride/pads: the divisor counts the
    window's cells inside the padded input."""
    n, c, h, w = x.shape
    y = np.zeros((n, c) + tuple(out_hw), np.float64)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            h0, w0 = i * st - pad, j * st - pad
            h1, w1 = min(h0 + k, h + pad), min(w0 + k, w + pad)
            win = x[:, :, max(h0, 0) : min(h1, h), max(w0, 0) : min(w1, w)]
            y[:, :, i, j] = win.sum(axis=(2, 3)) / ((h1 - h0) * (w1 - w0))
    return y.astype(x.dtype)


def gen_details():
    """Spec details that small random data misses: ties, exact halves, padding interplay."""
    for v in vers("Round"):
        case("Round", v, "halves_even", [("x", np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.0], F32))])
    for v in vers("TopK"):
        if act("TopK", v) >= 10:
            x = np.array([[3, 1, 3, 2, 3, 1], [0, 0, 5, 5, 1, 0]], F32)
            case("TopK", v, "ties_lower_index_first", [("x", x), ("k", i64(4))], n_out=2)
            if act("TopK", v) >= 11:
                case("TopK", v, "ties_smallest", [("x", x), ("k", i64(3))], {"largest": 0}, n_out=2)
    for v in vers("Trilu"):
        case("Trilu", v, "k_beyond", [("x", rand((3, 4))), ("k", np.array(5, I64))])
        case("Trilu", v, "lower_k_beyond_neg", [("x", rand((3, 4))), ("k", np.array(-4, I64))], {"upper": 0})
    for v in vers("ConstantOfShape"):
        case("ConstantOfShape", v, "scalar", [("s", np.zeros((0,), I64))], {"value": onh.from_array(np.array([2.5], F32), "v")})
    for v in vers("Einsum"):
        case("Einsum", v, "diagonal", [("a", rand((3, 3)))], {"equation": "ii->i"})
        case("Einsum", v, "bij_bkj", [("a", rand((2, 3, 4))), ("b", rand((2, 5, 4)))], {"equation": "bij,bkj->bik"})
        case("Einsum", v, "three_operands", [("a", rand((2, 3))), ("b", rand((3, 4))), ("c", rand((4,)))], {"equation": "ij,jk,k->i"})
    for v in vers("GatherND"):
        if act("GatherND", v) >= 12:
            case("GatherND", v, "batch_dims2", [("x", rand((2, 3, 4, 5))), ("idx", RNG.integers(0, 4, (2, 3, 1)).astype(I64))], {"batch_dims": 2})
    for v in vers("MaxPool"):
        if act("MaxPool", v) >= 10:
            case("MaxPool", v, "ceil_pads", [("x", distinct((1, 1, 6, 6)))], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1})
        if act("MaxPool", v) >= 8:
            case("MaxPool", v, "indices_pads", [("x", distinct((2, 2, 5, 5)))], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}, n_out=2)
    for v in vers("AveragePool"):
        case("AveragePool", v, "same_lower", [("x", rand((1, 1, 5, 5)))], {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"})
        if act("AveragePool", v) >= 10:
            # The last window runs past the padded input: those cells are not counted (onnxruntime
            # since PR 29629 at every opset, PyTorch); older onnxruntime divides by the kernel size.
            x = rand((1, 1, 6, 6))
            case("AveragePool", v, "ceil_incl_pad", [("x", x)],
                 {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
                 fix=lambda r, x=x: [avgpool2d_incl_pad(x, 3, 2, 1, r[0].shape[2:])])
    for v in vers("Conv"):
        case("Conv", v, "same_lower", [("x", rand((1, 2, 6, 6))), ("w", rand((2, 2, 2, 3)))], {"auto_pad": "SAME_LOWER"})
    for v in vers("Resize"):
        a = act("Resize", v)
        if a < 11:
            continue
        r = ("roi", np.array([], F32)) if a < 13 else None
        x = rand((1, 1, 4, 5))
        case("Resize", v, "nearest_prefer_ceil", [("x", x), r, ("scales", np.array([1, 1, 1.5, 0.6], F32))], {"nearest_mode": "round_prefer_ceil"})
        case("Resize", v, "nearest_align_up", [("x", x), r, ("scales", np.array([1, 1, 2, 1.6], F32))],
             {"coordinate_transformation_mode": "align_corners"})
        if a >= 18:
            case("Resize", v, "cubic_antialias", [("x", rand((1, 1, 8, 8))), None, ("scales", np.array([1, 1, 0.5, 0.6], F32))],
                 {"mode": "cubic", "antialias": 1})
            case("Resize", v, "nearest_sizes_axes", [("x", x), None, None, ("sizes", i64(7, 3))], {"axes": [3, 2]})


def gen_dtypes():
    """bool data through the data-movement ops and float64 through float ops not covered above,
    at each op's latest version."""
    def at(op, variant, inputs, attrs=None, n_out=1):
        case(op, latest(op), variant, inputs, attrs, n_out=n_out)

    b = lambda shape: rand(shape, BOOL)
    at("Gather", "bool", [("x", b((4, 3))), ("idx", i64(3, 0))], {"axis": 0})
    at("GatherElements", "bool", [("x", b((3, 3))), ("idx", np.array([[2, 0, 1]], I64))])
    at("GatherND", "bool", [("x", b((3, 3))), ("idx", np.array([[1], [2]], I64))])
    at("ScatterElements", "bool", [("x", b((3, 3))), ("idx", np.array([[2, 0, 1]], I64)), ("upd", b((1, 3)))])
    at("ScatterND", "bool", [("x", b((3, 2))), ("idx", np.array([[1]], I64)), ("upd", b((1, 2)))])
    at("Slice", "bool", [("x", b((4, 5))), ("starts", i64(1)), ("ends", i64(4)), ("axes", i64(1))])
    at("Split", "bool", [("x", b((4, 2))), ("split", i64(1, 3))], n_out=2)
    at("Squeeze", "bool", [("x", b((1, 3, 1))), ("axes", i64(0))])
    at("Flatten", "bool", [("x", b((2, 3, 2)))], {"axis": 2})
    at("Tile", "bool_2d", [("x", b((2, 2))), ("repeats", i64(2, 1))])
    at("Trilu", "bool", [("x", b((3, 3)))])
    at("Where", "bool_data", [("c", b((3,))), ("a", b((2, 3))), ("b", b((3,)))])
    at("Identity", "f64", [("x", rand((3,), F64))])

    d = lambda shape, lo=-2.0, hi=2.0: rand(shape, F64, lo, hi)
    for op, variants in ACTIV.items():
        x = away((3, 4), F64, lo=0.1, hi=2.5)
        x = np.where(np.abs(np.abs(x) - 1.0) < 0.1, x * 1.3, x)
        at(op, "f64", [("x", x)], variants[-1][0])
    at("Gelu", "f64_tanh", [("x", d((3, 4)))], {"approximate": "tanh"})
    at("ConvTranspose", "f64", [("x", d((1, 2, 3, 3))), ("w", d((2, 3, 3, 3))), ("b", d((3,)))], {"strides": [2, 2]})
    at("AveragePool", "f64", [("x", d((1, 2, 5, 5)))], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
    at("InstanceNormalization", "f64", [("x", d((2, 3, 4))), ("s", d((3,))), ("b", d((3,)))])
    at("Resize", "f64_linear", [("x", d((1, 1, 3, 3))), None, ("scales", np.array([1, 1, 2, 1.5], F32))], {"mode": "linear"})
    at("SoftmaxCrossEntropyLoss", "f64", [("x", d((3, 4))), ("t", i64(0, 3, 1))])
    at("Where", "f64", [("c", b((2, 3))), ("a", d((2, 3))), ("b", d((1,)))])
    at("Pow", "f64", [("a", d((2, 3), 0.2, 2)), ("b", d((3,)))])
    at("Mod", "f64_fmod", [("a", np.array([5.5, -7.25, 3.0], F64)), ("b", np.array([2.0, 2.5, -1.75], F64))], {"fmod": 1})
    at("Einsum", "f64", [("a", d((2, 3))), ("b", d((3, 2)))], {"equation": "ij,jk->ik"})
    at("Trilu", "f64", [("x", d((3, 4)))], None)
    at("Expand", "f64", [("x", d((3, 1))), ("shape", i64(3, 4))])
    at("Tile", "f64", [("x", d((2, 2))), ("repeats", i64(1, 2))])
    at("Transpose", "f64", [("x", d((2, 3, 4)))], {"perm": [2, 1, 0]})
    at("Gather", "f64", [("x", d((4, 3))), ("idx", i64(1, 1))], {"axis": 1})
    at("Pad", "f64_reflect", [("x", d((3, 4))), ("pads", i64(1, 1, 1, 1))], {"mode": "reflect"})
    at("Concat", "f64", [("a", d((2, 2))), ("b", d((2, 1)))], {"axis": 1})
    at("Split", "f64", [("x", d((4, 2))), ("split", i64(3, 1))], n_out=2)
    at("Slice", "f64", [("x", d((4, 5))), ("starts", i64(-2)), ("ends", i64(-1000)), ("axes", i64(1)), ("steps", i64(-1))])
    at("ScatterND", "f64_add", [("x", d((4, 2))), ("idx", np.array([[1], [1]], I64)), ("upd", d((2, 2)))], {"reduction": "add"})
    at("ScatterElements", "f64_max", [("x", d((3, 3))), ("idx", np.array([[2, 2, 0]], I64)), ("upd", d((1, 3)))], {"reduction": "max"})
    at("Sign", "f64", [("x", away((5,), F64))])
    at("Neg", "f64", [("x", d((5,)))])
    at("Equal", "f64_exact", [("a", np.array([1.0, 2.5, -3.0], F64)), ("b", np.array([1.0, 2.0, -3.0], F64))])
    at("ArgMax", "f64", [("x", distinct((3, 5), F64))], {"axis": 1})
    at("ConstantOfShape", "f64", [("s", i64(2, 2))], {"value": onh.from_array(np.array([0.1], F64), "v")})
    at("Cast", "f64_to_i32", [("x", np.array([-2.7, 0.5, 9.9], F64))], {"to": TP.INT32})
    at("Cast", "bool_to_i64", [("x", b((5,)))], {"to": TP.INT64})
    at("Cast", "i32_to_bool", [("x", np.array([0, -3, 7, 0], I32))], {"to": TP.BOOL})
    at("Cast", "i64_to_f64", [("x", np.array([-(2**40), 5, 0], I64))], {"to": TP.DOUBLE})


def gen_big():
    """Larger shapes at each op's latest version, to reach the kernels' blocked, vectorized and
    threaded paths (odd extents leave tails).  Positive data where sums could cancel, biases
    that keep normalized outputs away from zero: the comparison is relative."""
    pos = lambda shape, dt=F32: rand(shape, dt, lo=0.1, hi=1.0)

    def big(op, variant, inputs, attrs=None, n_out=1):
        case(op, latest(op), "big_" + variant, inputs, attrs, n_out=n_out)

    big("Add", "bcast", [("a", rand((64, 1, 129))), ("b", rand((1, 33, 129)))])
    big("Mul", "bcast_mid", [("a", rand((17, 33, 65))), ("b", rand((33, 1)))])
    big("Div", "rows", [("a", rand((129, 257))), ("b", away((257,)))])
    big("Sub", "i64", [("a", rand((65, 129), I64, -99, 99)), ("b", rand((129,), I64, -99, 99))])
    big("Pow", "f32", [("a", pos((33, 257))), ("b", rand((257,), lo=-2, hi=2))])
    big("Where", "bcast", [("c", rand((65, 1, 33), BOOL)), ("a", rand((17, 33))), ("b", rand((65, 17, 1)))])
    for op in ("Relu", "Sigmoid", "Exp", "Tanh", "Erf", "Abs", "Sqrt", "Log"):
        big(op, "f32", [("x", pos((3, 10007)) if op in ("Sqrt", "Log") else rand((3, 10007)))])
    big("Cast", "f32_to_i64", [("x", frac((5, 2003)))], {"to": TP.INT64})
    big("Clip", "f32", [("x", rand((7, 3001))), ("mn", np.array(-0.5, F32)), ("mx", np.array(0.7, F32))])
    for axis in (0, 1, -1):
        big("Softmax", "axis%d" % axis, [("x", rand((33, 65, 17), lo=-4, hi=4))], {"axis": axis})
        big("LogSoftmax", "axis%d" % axis, [("x", rand((33, 65, 17), lo=-4, hi=4))], {"axis": axis})
    case("Softmax", 11, "big_coerced", [("x", rand((9, 65, 33), lo=-4, hi=4))], {"axis": 1})
    for nm, axes in (("a0", [0]), ("a1", [1]), ("a2", [2]), ("a02", [0, 2]), ("all", None)):
        for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"):
            ins = [("x", pos((33, 65, 17)))] + ([("axes", i64(*axes))] if axes else [])
            big(op, nm, ins, {"keepdims": 0})
    big("ReduceSum", "i64_a1", [("x", rand((33, 65, 17), I64, -99, 99)), ("axes", i64(1))])
    big("ArgMax", "a1", [("x", distinct((17, 513, 3)))], {"axis": 1})
    big("ArgMin", "last", [("x", distinct((17, 1029)))], {"axis": -1})
    big("CumSum", "a1", [("x", pos((65, 513))), ("axis", np.array(1, I64))])
    big("CumSum", "a0_rev", [("x", pos((513, 9))), ("axis", np.array(0, I64))], {"reverse": 1})
    big("TopK", "k10", [("x", distinct((5, 1003))), ("k", i64(10))], n_out=2)
    big("MatMul", "2d", [("a", pos((65, 129))), ("b", pos((129, 67)))])
    big("MatMul", "batch", [("a", pos((3, 1, 33, 65))), ("b", pos((5, 65, 31)))])
    big("Gemm", "transB", [("a", pos((65, 129))), ("b", pos((67, 129))), ("c", pos((67,)))], {"transB": 1, "alpha": 0.5})
    big("Conv", "pads", [("x", pos((2, 8, 33, 33))), ("w", pos((16, 8, 3, 3))), ("b", pos((16,)))], {"pads": [1, 1, 1, 1]})
    big("Conv", "strided_group", [("x", pos((1, 16, 35, 35))), ("w", pos((32, 4, 5, 5)))], {"group": 4, "strides": [2, 2]})
    big("Conv", "depthwise", [("x", pos((1, 32, 32, 32))), ("w", pos((32, 1, 3, 3)))], {"group": 32, "pads": [1, 1, 1, 1]})
    big("Conv", "pointwise", [("x", pos((2, 64, 17, 17))), ("w", pos((48, 64, 1, 1)))])
    big("ConvTranspose", "s2", [("x", pos((1, 16, 17, 17))), ("w", pos((16, 8, 4, 4)))], {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    big("MaxPool", "k3s2", [("x", distinct((2, 16, 33, 33)))], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    big("AveragePool", "k3", [("x", pos((2, 16, 33, 33)))], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
    big("GlobalAveragePool", "2d", [("x", pos((2, 64, 33, 33)))])
    C = 32
    big("BatchNormalization", "infer", [("x", rand((4, C, 17, 17))), ("s", pos((C,))), ("b", rand((C,), lo=4, hi=6)),
                                          ("m", rand((C,))), ("v", pos((C,)))])
    big("LayerNormalization", "last", [("x", rand((64, 513))), ("s", pos((513,))), ("b", rand((513,), lo=4, hi=6))])
    big("InstanceNormalization", "4d", [("x", rand((2, C, 17, 17))), ("s", pos((C,))), ("b", rand((C,), lo=4, hi=6))])
    big("Transpose", "perm201", [("x", rand((17, 33, 65)))], {"perm": [2, 0, 1]})
    big("Transpose", "4d", [("x", rand((5, 16, 17, 9)))], {"perm": [0, 2, 3, 1]})
    big("Gather", "a1", [("x", rand((33, 513))), ("idx", RNG.integers(-513, 513, (100,)).astype(I64))], {"axis": 1})
    big("Concat", "a1", [("a", rand((65, 129))), ("b", rand((65, 3))), ("c", rand((65, 257)))], {"axis": 1})
    big("Slice", "steps", [("x", rand((65, 257))), ("starts", i64(1, 250)), ("ends", i64(64, 2)), ("axes", i64(0, 1)), ("steps", i64(3, -5))])
    big("Resize", "linear", [("x", pos((1, 3, 33, 33))), None, ("scales", np.array([1, 1, 2, 2], F32))], {"mode": "linear"})
    big("Resize", "cubic_down", [("x", rand((1, 3, 64, 64), lo=1, hi=2)), None, ("scales", np.array([1, 1, 0.5, 0.5], F32))],
        {"mode": "cubic"})
    big("Pad", "reflect", [("x", rand((3, 65, 129))), ("pads", i64(0, 3, 5, 0, 4, 2))], {"mode": "reflect"})
    big("Expand", "bcast", [("x", rand((65, 1))), ("shape", i64(3, 65, 257))])
    big("Tile", "rep", [("x", rand((33, 17))), ("repeats", i64(5, 9))])


def latest(op):
    """The model opset that first has op's newest version."""
    return min(v for v in vers(op) if act(op, v) == act(op, 21))


def gen_cast():
    vals = np.array([[-2.7, -0.4, 0.0, 1.6], [3.2, 100.9, -7.5, 0.2]], F32)
    for v in vers("Cast"):
        for src, dst in [(F32, TP.INT32), (F32, TP.INT64), (F32, TP.DOUBLE), (F32, TP.BOOL),
                         (I64, TP.FLOAT), (I32, TP.INT64), (BOOL, TP.FLOAT), (F64, TP.FLOAT), (I64, TP.BOOL)]:
            if src == BOOL:
                x = rand((2, 4), BOOL)
            elif src in (I32, I64):
                x = rand((2, 4), src, -50, 50)
            else:
                x = vals.astype(src)
            name = "%s_to_%s" % (np.dtype(src).name, TP.DataType.Name(dst).lower())
            case("Cast", v, name, [("x", x)], {"to": dst})


def gen_constants():
    for v in vers("Constant"):
        a = act("Constant", v)
        case("Constant", v, "tensor", [], {"value": onh.from_array(rand((2, 3)), "c")})
        case("Constant", v, "tensor_i64", [], {"value": onh.from_array(i64(3, -1, 4), "c")})
        if a >= 12:
            case("Constant", v, "value_float", [], {"value_float": 2.5})
            case("Constant", v, "value_floats", [], {"value_floats": [1.0, -2.0, 3.5]})
            case("Constant", v, "value_int", [], {"value_int": 7})
            case("Constant", v, "value_ints", [], {"value_ints": [4, 5, -6]})
    for v in vers("ConstantOfShape"):
        case("ConstantOfShape", v, "default", [("s", i64(2, 3))])
        case("ConstantOfShape", v, "f32", [("s", i64(3,))], {"value": onh.from_array(np.array([1.5], F32), "v")})
        case("ConstantOfShape", v, "i64", [("s", i64(2, 1, 2))], {"value": onh.from_array(np.array([-4], I64), "v")})
        case("ConstantOfShape", v, "i32", [("s", i64(4,))], {"value": onh.from_array(np.array([9], I32), "v")})
        case("ConstantOfShape", v, "bool", [("s", i64(2, 2))], {"value": onh.from_array(np.array([True]), "v")})
        case("ConstantOfShape", v, "empty", [("s", i64(0, 3))])


def gen_misc():
    for v in vers("Clip"):
        x = rand((3, 4), lo=-3, hi=3)
        x = np.where(np.abs(np.abs(x) - 1.0) < 0.05, x * 1.2, x).astype(F32)
        a = act("Clip", v)
        if a < 11:
            case("Clip", v, "attrs", [("x", x)], {"min": -1.0, "max": 1.0})
            case("Clip", v, "min_only", [("x", x)], {"min": -1.0})
            case("Clip", v, "default", [("x", x)])
        else:
            case("Clip", v, "inputs", [("x", x), ("mn", np.array(-1.0, F32)), ("mx", np.array(1.0, F32))])
            case("Clip", v, "max_only", [("x", x), None, ("mx", np.array(1.0, F32))])
            case("Clip", v, "min_only", [("x", x), ("mn", np.array(-1.0, F32))])
            case("Clip", v, "default", [("x", x)])
            if a >= 12:
                case("Clip", v, "i32", [("x", rand((3, 4), I32, -9, 9)), ("mn", np.array(-3, I32)), ("mx", np.array(4, I32))])
                case("Clip", v, "i64_max", [("x", rand((3, 4), I64, -9, 9)), None, ("mx", np.array(2, I64))])
                case("Clip", v, "f64", [("x", x.astype(F64)), ("mn", np.array(-0.5, F64)), ("mx", np.array(0.5, F64))])
    for v in vers("Dropout"):
        x = rand((3, 4))
        a = act("Dropout", v)
        if a < 12:
            case("Dropout", v, "default", [("x", x)])
            case("Dropout", v, "ratio", [("x", x)], {"ratio": 0.3})
            # onnxruntime's opset 7/10 Dropout returns an all-zero mask at inference; nothing is
            # dropped, so the mask is all ones (as at opset 12+ and in the reference evaluator).
            case("Dropout", v, "mask", [("x", x)], {"ratio": 0.2}, n_out=2, fix=lambda r: [r[0], np.ones_like(r[1])])
        else:
            case("Dropout", v, "default", [("x", x)])
            case("Dropout", v, "ratio_input", [("x", x), ("r", np.array(0.4, F32))])
            case("Dropout", v, "mask", [("x", x)], n_out=2)
            case("Dropout", v, "train_ratio0", [("x", x), ("r", np.array(0.0, F32)), ("t", np.array(True))], n_out=2)
            case("Dropout", v, "train_false", [("x", x), ("r", np.array(0.5, F32)), ("t", np.array(False))], n_out=2)
            case("Dropout", v, "f64", [("x", x.astype(F64))])
            case("Dropout", v, "train_no_ratio", [("x", x), None, ("t", np.array(False))], n_out=2)
            case("Dropout", v, "seed", [("x", x), ("r", np.array(0.3, F32))], {"seed": 5})


def gen_nn():
    for v in vers("Gemm"):
        a = act("Gemm", v)
        A, B = rand((3, 4)), rand((4, 5))
        case("Gemm", v, "c_full", [("a", A), ("b", B), ("c", rand((3, 5)))])
        case("Gemm", v, "c_bcast", [("a", A), ("b", B), ("c", rand((5,)))], {"alpha": 0.5, "beta": 2.0})
        case("Gemm", v, "c_scalar", [("a", A), ("b", B), ("c", rand((1,)))])
        case("Gemm", v, "transA", [("a", rand((4, 3))), ("b", B), ("c", rand((3, 1)))], {"transA": 1})
        case("Gemm", v, "transB", [("a", A), ("b", rand((5, 4))), ("c", rand((1, 5)))], {"transB": 1, "alpha": 1.5})
        if a >= 11:
            case("Gemm", v, "no_c", [("a", A), ("b", B)])
        if a >= 13:
            case("Gemm", v, "i64", [("a", rand((2, 3), I64, -3, 3)), ("b", rand((3, 2), I64, -3, 3)), ("c", rand((2,), I64, -3, 3))])
            case("Gemm", v, "i32_trans", [("a", rand((3, 2), I32, -3, 3)), ("b", rand((2, 3), I32, -3, 3))], {"transA": 1, "transB": 1})
        case("Gemm", v, "f64", [("a", A.astype(F64)), ("b", B.astype(F64)), ("c", rand((3, 5), F64))])
    for v in vers("MatMul"):
        case("MatMul", v, "2d", [("a", rand((3, 4))), ("b", rand((4, 5)))])
        case("MatMul", v, "batch_bcast", [("a", rand((2, 1, 3, 4))), ("b", rand((3, 4, 2)))])
        case("MatMul", v, "vec_mat", [("a", rand((4,))), ("b", rand((2, 4, 3)))])
        case("MatMul", v, "mat_vec", [("a", rand((2, 3, 4))), ("b", rand((4,)))])
        if act("MatMul", v) >= 9:
            case("MatMul", v, "i32", [("a", rand((2, 3), I32, -4, 4)), ("b", rand((3, 2), I32, -4, 4))])
            case("MatMul", v, "i64", [("a", rand((2, 3), I64, -4, 4)), ("b", rand((3, 2), I64, -4, 4))])
        case("MatMul", v, "f64", [("a", rand((3, 4), F64)), ("b", rand((4, 2), F64))])
    for v in vers("Conv"):
        x = rand((1, 2, 5, 5))
        w = rand((3, 2, 3, 3))
        case("Conv", v, "basic", [("x", x), ("w", w)])
        case("Conv", v, "pads_bias", [("x", x), ("w", w), ("b", rand((3,)))], {"pads": [1, 1, 1, 1]})
        case("Conv", v, "strides_dil", [("x", rand((1, 2, 7, 7))), ("w", w)], {"strides": [2, 2], "dilations": [2, 1], "pads": [1, 0, 2, 1]})
        case("Conv", v, "group", [("x", rand((2, 4, 4, 4))), ("w", rand((4, 2, 2, 2)))], {"group": 2})
        case("Conv", v, "same_upper", [("x", x), ("w", w)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]})
        case("Conv", v, "1d", [("x", rand((2, 3, 7))), ("w", rand((2, 3, 3))), ("b", rand((2,)))], {"pads": [2, 1]})
        case("Conv", v, "3d_valid", [("x", rand((1, 1, 4, 4, 4))), ("w", rand((2, 1, 2, 2, 2)))], {"auto_pad": "VALID"})
        case("Conv", v, "f64", [("x", x.astype(F64)), ("w", w.astype(F64))], {"kernel_shape": [3, 3]})
        case("Conv", v, "depthwise", [("x", rand((1, 3, 5, 5))), ("w", rand((3, 1, 3, 3)))], {"group": 3, "pads": [1, 1, 1, 1]})
    for v in vers("ConvTranspose"):
        x = rand((1, 2, 3, 3))
        w = rand((2, 3, 3, 3))
        case("ConvTranspose", v, "basic", [("x", x), ("w", w)])
        case("ConvTranspose", v, "strides_bias", [("x", x), ("w", w), ("b", rand((3,)))], {"strides": [2, 2]})
        case("ConvTranspose", v, "pads_outpad", [("x", x), ("w", w)], {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]})
        case("ConvTranspose", v, "output_shape", [("x", x), ("w", w)], {"strides": [2, 2], "output_shape": [6, 7]})
        case("ConvTranspose", v, "group_dil", [("x", rand((1, 4, 3, 3))), ("w", rand((4, 1, 2, 2)))], {"group": 2, "dilations": [2, 2]})
        case("ConvTranspose", v, "1d", [("x", rand((2, 2, 4))), ("w", rand((2, 1, 3)))], {"strides": [3]})
        case("ConvTranspose", v, "same_upper", [("x", x), ("w", w)], {"strides": [2, 2], "auto_pad": "SAME_UPPER"})
    for v in vers("AveragePool"):
        a = act("AveragePool", v)
        x = rand((1, 2, 6, 6))
        case("AveragePool", v, "basic", [("x", x)], {"kernel_shape": [2, 2]})
        case("AveragePool", v, "pads_excl", [("x", x)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})
        case("AveragePool", v, "pads_incl", [("x", x)], {"kernel_shape": [3, 3], "pads": [1, 0, 1, 2], "count_include_pad": 1})
        case("AveragePool", v, "same_upper", [("x", rand((1, 1, 5, 5)))], {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]})
        case("AveragePool", v, "1d", [("x", rand((2, 3, 7)))], {"kernel_shape": [3], "strides": [2]})
        if a >= 10:
            case("AveragePool", v, "ceil", [("x", rand((1, 1, 5, 5)))], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})
        if a >= 19:
            case("AveragePool", v, "dilations", [("x", rand((1, 1, 6, 6)))], {"kernel_shape": [2, 2], "dilations": [2, 2]})
    for v in vers("MaxPool"):
        a = act("MaxPool", v)
        x = distinct((1, 2, 6, 6))
        case("MaxPool", v, "basic", [("x", x)], {"kernel_shape": [2, 2]})
        case("MaxPool", v, "pads_strides", [("x", x)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})
        case("MaxPool", v, "same_lower", [("x", distinct((1, 1, 5, 5)))], {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"})
        case("MaxPool", v, "1d", [("x", distinct((2, 2, 7)))], {"kernel_shape": [3], "strides": [2]})
        if a >= 8:
            case("MaxPool", v, "indices", [("x", x)], {"kernel_shape": [2, 2], "strides": [2, 2]}, n_out=2)
            case("MaxPool", v, "indices_colmajor", [("x", x)], {"kernel_shape": [3, 3], "storage_order": 1}, n_out=2)
        if a >= 10:
            case("MaxPool", v, "ceil", [("x", distinct((1, 1, 5, 5)))], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})
            case("MaxPool", v, "dilations", [("x", distinct((1, 1, 6, 6)))], {"kernel_shape": [2, 2], "dilations": [2, 2]})
        case("MaxPool", v, "f64_3d", [("x", distinct((1, 1, 4, 4, 4), F64))], {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]})
    for op in ("GlobalAveragePool", "GlobalMaxPool"):
        for v in vers(op):
            case(op, v, "2d", [("x", rand((2, 3, 4, 5)))])
            case(op, v, "1d", [("x", rand((2, 3, 4)))])
            case(op, v, "3d", [("x", rand((1, 2, 2, 3, 2)))])
            case(op, v, "f64", [("x", rand((1, 2, 3, 2), F64))])
    for v in vers("BatchNormalization"):
        a = act("BatchNormalization", v)
        C = 3
        x = rand((2, C, 2, 3))
        sc, b, mean = rand((C,)), rand((C,)), rand((C,))
        var = rand((C,), lo=0.5, hi=2)
        ins = [("x", x), ("s", sc), ("b", b), ("m", mean), ("v", var)]
        case("BatchNormalization", v, "infer", ins)
        case("BatchNormalization", v, "eps", ins, {"epsilon": 0.01})
        case("BatchNormalization", v, "2d_input", [("x", rand((4, C)))] + ins[1:])
        if a < 9:
            case("BatchNormalization", v, "spatial1", ins, {"spatial": 1, "momentum": 0.8})
            # spatial=0: statistics per activation (C, H, W) rather than per channel
            per = [("s", rand((C, 2, 3))), ("b", rand((C, 2, 3))), ("m", rand((C, 2, 3))), ("v", rand((C, 2, 3), lo=0.5, hi=2))]
            case("BatchNormalization", v, "spatial0", [("x", x)] + per, {"spatial": 0})
        if a >= 14:
            case("BatchNormalization", v, "training", ins, {"training_mode": 1, "momentum": 0.8}, n_out=3)
            case("BatchNormalization", v, "training_y_only", ins, {"training_mode": 1})
            case("BatchNormalization", v, "training_skip_mean", ins, {"training_mode": 1, "momentum": 0.5}, out_names=["y", "", "rv"],
                 ref_only=True)  # onnxruntime 1.32 crashes (SIGSEGV) on the omitted output
        case("BatchNormalization", v, "f64", [(n, t.astype(F64)) for n, t in ins])
    for v in vers("InstanceNormalization"):
        case("InstanceNormalization", v, "4d", [("x", rand((2, 3, 2, 4))), ("s", rand((3,))), ("b", rand((3,)))])
        case("InstanceNormalization", v, "3d_eps", [("x", rand((2, 2, 5))), ("s", rand((2,))), ("b", rand((2,)))], {"epsilon": 0.1})
    for v in vers("LayerNormalization"):
        x = rand((2, 3, 4))
        case("LayerNormalization", v, "default", [("x", x), ("s", rand((4,))), ("b", rand((4,)))])
        case("LayerNormalization", v, "axis1", [("x", x), ("s", rand((3, 4))), ("b", rand((3, 4)))], {"axis": 1, "epsilon": 0.01})
        case("LayerNormalization", v, "no_bias_mean_rstd", [("x", x), ("s", rand((4,)))], n_out=3)
        case("LayerNormalization", v, "axis_neg2_stats", [("x", x), ("s", rand((3, 4))), ("b", rand((3, 4)))], {"axis": -2}, n_out=3)
        case("LayerNormalization", v, "skip_mean", [("x", x), ("s", rand((4,))), ("b", rand((4,)))], out_names=["y", "", "istd"])
        case("LayerNormalization", v, "f64", [("x", x.astype(F64)), ("s", rand((4,), F64))])
    for v in vers("Resize"):
        a = act("Resize", v)
        x = rand((1, 1, 2, 3))
        sc = np.array([1, 1, 2, 2], F32)
        if a == 10:
            case("Resize", v, "nearest", [("x", x), ("scales", sc)])
            case("Resize", v, "linear", [("x", x), ("scales", sc)], {"mode": "linear"})
            case("Resize", v, "nearest_down", [("x", rand((1, 1, 4, 6))), ("scales", np.array([1, 1, 0.5, 0.5], F32))])
            continue
        roi = np.array([], F32)
        r = ("roi", roi) if a < 13 else None
        case("Resize", v, "nearest_scales", [("x", x), r, ("scales", sc)])
        case("Resize", v, "linear_half_pixel", [("x", x), r, ("scales", sc)], {"mode": "linear"})
        case("Resize", v, "linear_align", [("x", x), r, ("scales", sc)], {"mode": "linear", "coordinate_transformation_mode": "align_corners"})
        case("Resize", v, "linear_asym_sizes", [("x", x), r, ("scales", np.array([], F32)) if a < 13 else None, ("sizes", i64(1, 1, 3, 5))],
             {"mode": "linear", "coordinate_transformation_mode": "asymmetric"})
        case("Resize", v, "nearest_floor_asym", [("x", x), r, ("scales", np.array([1, 1, 1.5, 2.5], F32))],
             {"nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"})
        case("Resize", v, "nearest_ceil", [("x", rand((1, 1, 4, 4))), r, ("scales", np.array([1, 1, 0.75, 1.5], F32))], {"nearest_mode": "ceil"})
        case("Resize", v, "cubic", [("x", rand((1, 1, 4, 4))), r, ("scales", sc)], {"mode": "cubic"})
        case("Resize", v, "cubic_exclude", [("x", rand((1, 1, 4, 4))), r, ("scales", np.array([1, 1, 0.6, 1.4], F32))],
             {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1})
        case("Resize", v, "linear_pytorch_down", [("x", rand((1, 1, 5, 4))), r, ("scales", np.array([1, 1, 0.6, 0.5], F32))],
             {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"})
        case("Resize", v, "tf_crop", [("x", rand((1, 1, 4, 4))), ("roi", np.array([0, 0, 0.2, 0.3, 1, 1, 0.8, 0.9], F32)), ("scales", sc)],
             {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 0.5})
        case("Resize", v, "i32_nearest", [("x", rand((1, 1, 2, 2), I32, -9, 9)), r, ("scales", sc)])
        if a == 11:  # removed at 13
            case("Resize", v, "tf_half_pixel_nn", [("x", rand((1, 1, 4, 4))), r, ("scales", np.array([1, 1, 0.75, 1.5], F32))],
                 {"coordinate_transformation_mode": "tf_half_pixel_for_nn"})
        if a >= 13:
            case("Resize", v, "3d_linear_sizes", [("x", rand((1, 2, 4))), None, None, ("sizes", i64(1, 2, 7))], {"mode": "linear"})
        if a >= 18:
            case("Resize", v, "axes_scales", [("x", x), None, ("scales", np.array([2, 3], F32))], {"axes": [2, 3], "mode": "linear"})
            case("Resize", v, "keep_ratio_smaller", [("x", rand((1, 1, 4, 6))), None, None, ("sizes", i64(3, 3))],
                 {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"})
            case("Resize", v, "keep_ratio_larger", [("x", rand((1, 1, 4, 6))), None, None, ("sizes", i64(1, 1, 3, 3))],
                 {"keep_aspect_ratio_policy": "not_larger", "mode": "linear"})
            case("Resize", v, "antialias_down", [("x", rand((1, 1, 8, 8))), None, ("scales", np.array([1, 1, 0.5, 0.375], F32))],
                 {"mode": "linear", "antialias": 1})
            if a >= 19:
                case("Resize", v, "half_pixel_symmetric", [("x", x), None, ("scales", np.array([1, 1, 1.7, 2.3], F32))],
                     {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"})
    for v in vers("NegativeLogLikelihoodLoss"):
        x = rand((3, 4, 2))
        t = np.array([[0, 3], [2, 1], [1, 1]], I64)
        case("NegativeLogLikelihoodLoss", v, "mean", [("x", x), ("t", t)])
        case("NegativeLogLikelihoodLoss", v, "none", [("x", x), ("t", t)], {"reduction": "none"})
        case("NegativeLogLikelihoodLoss", v, "sum_weight", [("x", x), ("t", t), ("w", rand((4,), lo=0.1, hi=1))], {"reduction": "sum"})
        case("NegativeLogLikelihoodLoss", v, "mean_weight_ii", [("x", x), ("t", t), ("w", rand((4,), lo=0.1, hi=1))], {"ignore_index": 1})
        case("NegativeLogLikelihoodLoss", v, "2d_f64", [("x", rand((3, 5), F64)), ("t", i64(4, 0, 2))])
    for v in vers("SoftmaxCrossEntropyLoss"):
        x = rand((3, 4, 2))
        t = np.array([[0, 3], [2, 1], [1, 1]], I64)
        case("SoftmaxCrossEntropyLoss", v, "mean", [("x", x), ("t", t)])
        case("SoftmaxCrossEntropyLoss", v, "none_logprob", [("x", x), ("t", t)], {"reduction": "none"}, n_out=2)
        case("SoftmaxCrossEntropyLoss", v, "sum_weight", [("x", x), ("t", t), ("w", rand((4,), lo=0.1, hi=1))], {"reduction": "sum"})
        case("SoftmaxCrossEntropyLoss", v, "mean_weight_ii", [("x", x), ("t", t), ("w", rand((4,), lo=0.1, hi=1))], {"ignore_index": 2})
        case("SoftmaxCrossEntropyLoss", v, "2d_i32", [("x", rand((3, 5))), ("t", np.array([4, 0, 2], I32))])


# ----------------------------------------------------------------------------- main


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    gen_unary()
    gen_activations()
    gen_binary()
    gen_reduce()
    gen_shape_ops()
    gen_cast()
    gen_edges()
    gen_big()
    gen_details()
    gen_dtypes()
    gen_constants()
    gen_misc()
    gen_nn()
    import gen_nnops  # the ops of issue 12's nn part, in their own file
    import gen_recurrent  # and of its recurrent and control-flow parts

    gen_nnops.generate(sys.modules[__name__])
    gen_recurrent.generate(sys.modules[__name__])
    import gen_miscops  # the ops of issue 12's "rest of the op set" part, in their own file

    gen_miscops.generate(sys.modules[__name__])
    import gen_oldopset  # models of opsets 1 to 6, upgraded at load

    gen_oldopset.generate(sys.modules[__name__])

    # Opset 21 for an op whose latest version is older only checks that the version resolves:
    # two cases suffice there, the rest would repeat the latest version's cases.
    kept, seen21 = [], {}
    for c in CASES:
        op, opset = c[2].op_type, c[1]
        if opset == 21 and act(op, 21) < 21 and "_edge_" not in c[0]:
            seen21[op] = seen21.get(op, 0) + 1
            if seen21[op] > 2:
                continue
        kept.append(c)

    # Parameters as initializers: the first case of each (op, opset) with integer inputs after
    # the first (axes, pads, shape, starts, k, sizes, ...) again with those as initializers,
    # whose values are known when the model loads (a different inference path).
    done, extra = set(), []
    for name, opset, node, vis, outs, feeds, fix, _ in kept:
        key = (node.op_type, opset)
        params = [v.name for v in vis[1:] if isinstance(feeds[v.name], np.ndarray)
                  and feeds[v.name].dtype in (np.dtype(I64), np.dtype(I32))]
        if key in done or not params or node.op_type in ("Range", "Mod", "Pow") or "_big_" in name:
            continue
        done.add(key)
        inits = [onh.from_array(feeds[p], p) for p in params]
        rest = [v for v in vis if v.name not in params]
        if not rest:
            continue
        extra.append((name + "_init", opset, node, rest, outs, {v.name: feeds[v.name] for v in rest}, fix, inits))
    kept += extra

    covered = set()
    made, dropped, via_ref = 0, [], 0
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for name, opset, node, vis, outs, feeds, fix, inits in kept:
        base = name.replace("_init", "")
        res, model, src = compute(opset, node, vis, outs, feeds, fix, inits, base in REF_ONLY,
                                  ORACLES.get(base))
        if os.environ.get("OG_OPSET_VERBOSE"):
            print("%s %s" % (src if res is not None else "dropped", name))
        if res is None:
            dropped.append("%s: %s" % (name, src))
            continue
        via_ref += src == "ref"
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(model, os.path.join(d, "model.onnx"))
        for i, v in enumerate(vis):
            with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
                f.write(proto_of(feeds[v.name], v.name).SerializeToString())
        for i, (o, r) in enumerate(zip(outs, res)):
            with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
                f.write(proto_of(r, o).SerializeToString())
        made += 1
        covered.add((node.op_type, act(node.op_type, opset)))

    want = set()
    for op in OPS:
        if op in SKIP_OPS or op not in SINCE:
            continue
        for v in vers(op):
            if op == "Scatter" and v > 10:
                continue
            want.add((op, act(op, v)))
    missing = sorted(want - covered)
    print("%d cases (%d from the reference evaluator), %d dropped; %d of %d (op, since-version) pairs covered"
          % (made, via_ref, len(dropped), len(want & covered), len(want)))
    for d in dropped:
        print("  dropped %s" % d)
    for op, v in missing:
        print("  not covered: %s-%d" % (op, v))


if __name__ == "__main__":
    main()
