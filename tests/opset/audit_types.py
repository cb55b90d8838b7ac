#!/usr/bin/env python3
"""Type audit (issue 12): every op of the default domain, every since-version from 7 to 21,
every float type its schema allows (float16, bfloat16, float, double), run through onnxgrad.

For each (op, since-version, type) the script takes a one-node seed model of the op with its
inputs (the ONNX backend test data of the installed onnx package, then the per-opset cases
of tests/opset/gen_cases.py when BUILD_DIR/opset_cases exists), imports the opset of that
since-version (7 for the version in force at 7), retypes the values of the op's float type
constraint to the type (the seed's values rounded to it), and keeps the first seed that the
ONNX checker accepts at that opset and that has a reference: onnxruntime on the retyped model
when it runs the type, else onnxruntime (or onnx's ReferenceEvaluator) on the float32 model
fed the same rounded values, its outputs rounded to the type.  The cases, in the backend
layout, go through BUILD_DIR/tests/og_backend_test (rtol 1e-3, or one ulp for 16-bit types).
Random ops are checked through Sub(y, y) (a value that does not depend on the draws).
Seeds of control flow (If, Loop, Scan, SequenceMap) and of sequence and optional values are
retyped whole: every float32 value of the model, its subgraphs' recursively (inputs, outputs,
initializers, Constant tensors, Cast targets), becomes the type; those seeds are float32 only
in the op's float constraint.  Their reference is onnxruntime on the retyped model, else
onnx's ReferenceEvaluator on it (float16, double: numpy computes in the type, step by step),
else the float32 computation rounded (bfloat16: rounded after every node of the subgraphs).
With --int, the op's own tensors are retyped first (If's condition, SequenceAt's position),
then every float32 value as above.  The versions the spec deprecates (Upsample-10,
Scatter-11) take the version before as their reference, on the same values; Upsample-7,
which the reference evaluator does not run, its Upsample-9 form.  Random ops of bool
outputs are checked through Xor(y, y).

A combination that does not pass must match a line of tests/opset/type_audit_exclusions.txt
(op, versions, types, reason); any other failure fails the test.  Combinations without a
usable seed are counted as unchecked, by reason.

Where neither runs a type in the op's own version, a model of the same meaning in another
version stands in (`equivalent_forms`: ReduceLogSumExp before 18 as 18, Resize-10 as
Resize-13 asymmetric, Resize-11's empty roi omitted); --check-forms proves each such form
gives onnxruntime's values on the types onnxruntime runs in the own version.

usage: audit_types.py BUILD_DIR [-v] [--int] [--ops=OP,OP...] | BUILD_DIR --check-forms
exit 0 pass, 1 fail, 77 skip (no onnx/onnxruntime); --ops: those ops only
--int: the integer types and bool instead of the float types, with the exclusions of
tests/opset/type_audit_int_exclusions.txt (CTest opset_type_audit_int)
--check-forms: the equivalent forms against onnxruntime (CTest opset_type_audit_forms)
"""

import collections
import copy
import glob
import os
import re
import subprocess
import sys
import warnings

warnings.filterwarnings("ignore")
try:
    import numpy as np
    import onnx
    import onnx.helper as oh
    import onnx.numpy_helper as onh
    import onnxruntime as ort
    from onnx import TensorProto as TP
except ImportError:
    print("audit_types.py: python onnx and onnxruntime are needed; skipped", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
TYPES = {"float16": TP.FLOAT16, "bfloat16": TP.BFLOAT16, "float": TP.FLOAT, "double": TP.DOUBLE}
# --int: the integer types and bool instead (CTest opset_type_audit_int)
INT_TYPES = {"int8": TP.INT8, "int16": TP.INT16, "int32": TP.INT32, "int64": TP.INT64,
             "uint8": TP.UINT8, "uint16": TP.UINT16, "uint32": TP.UINT32, "uint64": TP.UINT64,
             "bool": TP.BOOL}
NP_OF = {TP.FLOAT16: np.float16, TP.FLOAT: np.float32, TP.DOUBLE: np.float64,
         TP.INT8: np.int8, TP.INT16: np.int16, TP.INT32: np.int32, TP.INT64: np.int64,
         TP.UINT8: np.uint8, TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64,
         TP.BOOL: np.bool_}
IS_INT = set(INT_TYPES.values())
RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Bernoulli", "Multinomial"}
ort.set_default_logger_severity(4)


# ----------------------------------------------------------------------------- bfloat16


def bf16_bits(x):
    """float32 values rounded to bfloat16 (nearest, ties to even), as uint16 bit patterns."""
    x = np.asarray(x, dtype=np.float32)
    b = x.reshape(-1).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x.reshape(-1)), np.uint16(0x7FC0), r).reshape(x.shape)


def bf16_values(bits):
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(bits.shape)


def round_to(x, t):
    """Array x rounded to type t, returned as a float64/float32/float16 array of its values."""
    x = np.asarray(x)
    if t == TP.BOOL:
        return x != 0
    if t in IS_INT:
        info = np.iinfo(NP_OF[t])
        return np.clip(np.round(x.astype(np.float64)), info.min, info.max).astype(NP_OF[t])
    if t == TP.BFLOAT16:
        return bf16_values(bf16_bits(x.astype(np.float32)))
    return x.astype(NP_OF[t])


def to_proto(v, t, name):
    """TensorProto of values v in type t (bfloat16 as raw bit patterns)."""
    if t == TP.BFLOAT16:
        p = TP()
        p.name = name
        p.data_type = TP.BFLOAT16
        p.dims.extend(np.asarray(v).shape)
        p.raw_data = bf16_bits(np.asarray(v, dtype=np.float32)).tobytes()
        return p
    return onh.from_array(np.asarray(v).astype(NP_OF[t]) if t in NP_OF else np.asarray(v), name)


def from_proto(p):
    if p.data_type == TP.BFLOAT16:
        if p.raw_data:
            bits = np.frombuffer(p.raw_data, dtype=np.uint16)
        else:
            bits = np.array(p.int32_data, dtype=np.uint16)
        return bf16_values(bits).reshape(tuple(p.dims))
    return onh.to_array(p)


# ----------------------------------------------------------------------------- schemas


def float_types(allowed):
    return [n for n in TYPES if "tensor(%s)" % n in allowed]


def main_constraint(schema):
    """(type_param_str, [float types]) of the first constraint (in the order of the inputs,
    then the outputs) that allows a float type; None when none does."""
    cons = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    for f in list(schema.inputs) + list(schema.outputs):
        allowed = cons.get(f.type_str, [f.type_str])
        fl = float_types(allowed)
        if fl:
            return f.type_str, fl
    return None


def formal(params, i):
    if i < len(params):
        return params[i]
    if params and params[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return params[-1]
    return None


def combos():
    """[(op, since_version, opset, schema)] for the default domain, versions in force 7..21."""
    by_op = collections.defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx") and s.since_version <= 21:
            by_op[s.name].append(s)
    out = []
    for op in sorted(by_op):
        ss = sorted(by_op[op], key=lambda s: s.since_version)
        for i, s in enumerate(ss):
            nxt = ss[i + 1].since_version if i + 1 < len(ss) else 22
            if nxt <= 7:
                continue  # replaced before opset 7
            out.append((op, s.since_version, max(7, s.since_version), s))
    return out


# ----------------------------------------------------------------------------- seeds


def backend_seeds():
    root = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node")
    return sorted(glob.glob(os.path.join(root, "test_*")))


def read_value(pb, tp):
    """The value of a .pb file: an array for a tensor, a list of arrays for a sequence,
    ("optional", value or None) for an optional; None when unusable (maps)."""
    with open(pb, "rb") as f:
        data = f.read()
    if tp.HasField("tensor_type"):
        p = TP()
        p.ParseFromString(data)
        return onh.to_array(p) if p.data_type == TP.STRING else from_proto(p)
    if tp.HasField("sequence_type"):
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        if p.elem_type != onnx.SequenceProto.TENSOR:
            return None
        return [from_proto(x) for x in p.tensor_values]
    if tp.HasField("optional_type"):
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        if p.elem_type == onnx.OptionalProto.TENSOR:
            return ("optional", from_proto(p.tensor_value))
        if p.elem_type == onnx.OptionalProto.SEQUENCE:
            return ("optional", [from_proto(x) for x in p.sequence_value.tensor_values])
        return ("optional", None)
    return None


def load_seed(d):
    """(model, {input name: value}) of a one-node case folder (tensor, sequence of tensors
    or optional values), None if unusable."""
    try:
        m = onnx.load(os.path.join(d, "model.onnx"))
    except Exception:
        return None
    g = m.graph
    if len(g.node) != 1 or g.node[0].domain not in ("", "ai.onnx"):
        return None
    vals = {}
    for i, vi in enumerate(g.input):
        pb = os.path.join(d, "test_data_set_0", "input_%d.pb" % i)
        if not os.path.exists(pb):
            return None
        v = read_value(pb, vi.type)
        if v is None:
            return None
        vals[vi.name] = v
    for o in g.output:
        if not (o.type.HasField("tensor_type") or o.type.HasField("sequence_type")
                or o.type.HasField("optional_type")):
            return None
    return m, vals


def opset_case_dir(build):
    """The per-opset cases of tests/opset/gen_cases.py: BUILD_DIR/opset_cases when the CTest
    entry opset_cases made it, else generated once into BUILD_DIR/type_audit_seeds."""
    d = os.path.join(build, "opset_cases")
    if os.path.exists(os.path.join(d, ".stamp")):
        return d
    d = os.path.join(build, "type_audit_seeds")
    if not os.path.exists(os.path.join(d, ".done")):
        subprocess.run(["rm", "-rf", d], check=True)
        r = subprocess.run([sys.executable, os.path.join(HERE, "gen_cases.py"), d],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("audit_types.py: gen_cases.py failed:\n" + r.stderr[-2000:], file=sys.stderr)
            sys.exit(1)
        open(os.path.join(d, ".done"), "w").close()
    return d


def seed_index(build):
    """{op: [case folder]}: the backend's, then gen_cases.py's."""
    idx = collections.defaultdict(list)
    dirs = backend_seeds() + sorted(glob.glob(os.path.join(opset_case_dir(build), "test_*")))
    for d in dirs:
        if "training" in os.path.basename(d) or "_expanded" in d:
            continue
        try:
            m = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
        except Exception:
            continue
        if len(m.graph.node) == 1 and m.graph.node[0].domain in ("", "ai.onnx"):
            idx[m.graph.node[0].op_type].append(d)
    return idx


def _one_node(op, inputs, attrs, outputs, opset=21):
    """A one-node model of op at opset: inputs {name: array}, outputs [(name, elem type,
    shape)]."""
    ins = [oh.make_tensor_value_info(k, oh.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in inputs.items()]
    outs = [oh.make_tensor_value_info(n, t, shape) for n, t, shape in outputs]
    node = oh.make_node(op, list(inputs), [n for n, _, _ in outputs], **attrs)
    g = oh.make_graph([node], op, ins, outs)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)]), dict(inputs)


def _optional_seed(x):
    node = oh.make_node("Optional", ["x"], ["y"])
    out = oh.make_value_info("y", oh.make_optional_type_proto(
        oh.make_tensor_type_proto(TP.FLOAT, x.shape)))
    g = oh.make_graph([node], "Optional", [oh.make_tensor_value_info("x", TP.FLOAT, x.shape)],
                      [out])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 18)]), {"x": x}


def _scan_identity_seed(xs):
    """Scan (opset 11) over axis 0 of xs (3x4x4): the state passes through, the scan output
    is each slice; float32, for the audit to retype."""
    F = TP.FLOAT
    body = oh.make_graph(
        [oh.make_node("Identity", ["s"], ["s2"]), oh.make_node("Identity", ["x"], ["y"])],
        "body", [oh.make_tensor_value_info("s", F, [4]), oh.make_tensor_value_info("x", F, [4, 4])],
        [oh.make_tensor_value_info("s2", F, [4]), oh.make_tensor_value_info("y", F, [4, 4])])
    node = oh.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], body=body, num_scan_inputs=1)
    g = oh.make_graph([node], "Scan", [oh.make_tensor_value_info("s0", F, [4]),
                                       oh.make_tensor_value_info("xs", F, xs.shape)],
                      [oh.make_tensor_value_info("s_final", F, [4]),
                       oh.make_tensor_value_info("ys", F, xs.shape)])
    return (oh.make_model(g, opset_imports=[oh.make_opsetid("", 11)]),
            {"s0": xs[0, 0] * 3.0, "xs": xs * 3.0})


def generated_seeds():
    """Seeds of the ops that the backend data has none of (or none with tensor values)."""
    rng = np.random.default_rng(20261202)
    x = rng.uniform(-2, 2, (2, 3, 4, 4)).astype(np.float32)
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]], np.float32)
    rois = np.array([[0, 0, 0, 2, 2], [0, 1, 1, 3, 3]], np.float32)
    F = TP.FLOAT
    return {
        "RandomNormal": [_one_node("RandomNormal", {}, {"shape": [2, 3], "seed": 1.0},
                                   [("y", F, [2, 3])])],
        "RandomUniform": [_one_node("RandomUniform", {}, {"shape": [2, 3], "seed": 1.0},
                                    [("y", F, [2, 3])])],
        "RandomNormalLike": [_one_node("RandomNormalLike", {"x": x}, {"seed": 1.0},
                                       [("y", F, x.shape)])],
        "RandomUniformLike": [_one_node("RandomUniformLike", {"x": x}, {"seed": 1.0},
                                        [("y", F, x.shape)])],
        "Multinomial": [_one_node("Multinomial", {"p": np.log(p)}, {"sample_size": 4, "seed": 1.0,
                                                                   "dtype": TP.INT32},
                                  [("y", TP.INT32, [2, 4])])],
        "LpNormalization": [_one_node("LpNormalization", {"x": x}, {"axis": 1, "p": 2},
                                      [("y", F, x.shape)])],
        "GlobalLpPool": [_one_node("GlobalLpPool", {"x": x}, {"p": 2}, [("y", F, [2, 3, 1, 1])])],
        "GridSample": [_one_node("GridSample", {"x": x, "grid": rng.uniform(-1, 1, (2, 3, 3, 2))
                                                .astype(np.float32)},
                                 {"mode": "bilinear"}, [("y", F, [2, 3, 3, 3])], opset=16)],
        # Upsample-7 takes its scales as an attribute (the data's seeds are of opset 9)
        "Upsample": [_one_node("Upsample", {"x": x}, {"scales": [1.0, 1.0, 2.0, 3.0],
                                                     "mode": "nearest"},
                               [("y", F, [2, 3, 8, 12])], opset=7)],
        # Scan with a body of Identity (any type): the data's bodies add, which Add-7 refuses
        # for 8- and 16-bit integers and bool
        "Scan": [_scan_identity_seed(x[0])],
        # Optional of a tensor: the data's seeds are of optional inputs or no input
        "Optional": [_optional_seed(x)],
        "MaxRoiPool": [_one_node("MaxRoiPool", {"x": x, "rois": rois},
                                 {"pooled_shape": [2, 2]}, [("y", F, [2, 3, 2, 2])])],
    }


def seed_opset(m):
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


# ----------------------------------------------------------------------------- retyping


def has_subgraph(node):
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in node.attribute)


def is_tensor_value(v):
    return isinstance(v, np.ndarray)


def type_has(tp, t):
    """True when TypeProto tp is a tensor of t, or a sequence or optional of one."""
    if tp.HasField("tensor_type"):
        return tp.tensor_type.elem_type == t
    if tp.HasField("sequence_type"):
        return type_has(tp.sequence_type.elem_type, t)
    if tp.HasField("optional_type"):
        return type_has(tp.optional_type.elem_type, t)
    return False


def retype_type(tp, t):
    """TypeProto tp with every float32 element type (inside sequences and optionals too) made
    t; True when one was."""
    if tp.HasField("tensor_type"):
        if tp.tensor_type.elem_type == TP.FLOAT:
            tp.tensor_type.elem_type = t
            return True
        return False
    if tp.HasField("sequence_type"):
        return retype_type(tp.sequence_type.elem_type, t)
    if tp.HasField("optional_type"):
        return retype_type(tp.optional_type.elem_type, t)
    return False


def retype_value(v, t):
    """A seed value (array, list of arrays, ("optional", value)) with its float32 values
    rounded to t."""
    if isinstance(v, tuple):
        return ("optional", None if v[1] is None else retype_value(v[1], t))
    if isinstance(v, list):
        return [retype_value(x, t) for x in v]
    v = np.asarray(v)
    return round_to(v.astype(np.float64), t) if v.dtype == np.float32 else v


def retype_graph(g, t):
    """Every float32 value of graph g made t, subgraphs included: inputs, outputs, value_info,
    initializers, Constant tensors and the float32 element types of Cast, CastLike's targets,
    the dtype attributes."""
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        retype_type(vi.type, t)
    for k, init in enumerate(g.initializer):
        if init.data_type == TP.FLOAT:
            g.initializer[k].CopyFrom(to_proto(round_to(from_proto(init).astype(np.float64), t),
                                               t, init.name))
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TP.FLOAT:
                a.t.CopyFrom(to_proto(round_to(from_proto(a.t).astype(np.float64), t), t,
                                      a.t.name))
            elif (a.type == onnx.AttributeProto.INT and a.name in ("to", "dtype")
                  and a.i == TP.FLOAT):
                a.i = t
            elif a.type == onnx.AttributeProto.GRAPH:
                retype_graph(a.g, t)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    retype_graph(sg, t)
            elif a.type == onnx.AttributeProto.TYPE_PROTO:
                retype_type(a.tp, t)


def retype_all(m, vals, t):
    """Seeds of control flow (subgraphs) and of sequence and optional values: every float32
    value, the subgraphs' recursively, made t.  The audit's float32 seeds hold the op's float
    type constraint in float32 only, so this retypes that constraint and nothing else."""
    retype_graph(m.graph, t)
    nvals = {k: retype_value(v, t) for k, v in vals.items()}
    main_out = {o.name for o in m.graph.output if type_has(o.type, t)}
    return m, nvals, main_out


def retype(m, vals, schema, opset, param, t, mode=None):
    """The seed retyped to t at opset: (model, {name: values}, {output: is main-typed}), or
    None when a value of the main constraint is not a numeric tensor.  mode "node": the
    tensors of the op's main constraint only; "all": every float32 value (retype_all); None:
    "all" for seeds with subgraphs or sequence or optional values, else "node"."""
    m = copy.deepcopy(m)
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    if m.ir_version > 9:
        m.ir_version = 9
    g = m.graph
    node = g.node[0]
    if mode is None and (has_subgraph(node) or not all(
            is_tensor_value(v) for v in vals.values()) or not all(
            o.type.HasField("tensor_type") for o in g.output)):
        mode = "all"
    if mode == "all":
        if node.op_type in RANDOM_OPS:
            return None  # their draws are checked through Sub(y, y), in "node" mode
        return retype_all(m, vals, t)
    main_in = set()
    for i, name in enumerate(node.input):
        f = formal(list(schema.inputs), i)
        if name and f is not None and f.type_str == param:
            main_in.add(name)
    main_out = set()
    for i, name in enumerate(node.output):
        f = formal(list(schema.outputs), i)
        if name and f is not None and f.type_str == param:
            main_out.add(name)
    nvals = dict(vals)
    if not all(vi.type.HasField("tensor_type") for vi in list(g.input) + list(g.output)
               if vi.name in main_in or vi.name in main_out):
        return None
    for vi in g.input:
        if vi.name in main_in:
            v = np.asarray(vals[vi.name])
            if v.dtype.kind not in "fiub":
                return None
            vi.type.tensor_type.elem_type = t
            nvals[vi.name] = round_to(v.astype(np.float64), t)
    for k, init in enumerate(g.initializer):
        if init.name in main_in:
            v = from_proto(init).astype(np.float64)
            g.initializer[k].CopyFrom(to_proto(round_to(v, t), t, init.name))
    for vi in g.output:
        if vi.name in main_out:
            vi.type.tensor_type.elem_type = t
    del g.value_info[:]
    for a in node.attribute:
        if a.name in ("dtype", "output_datatype") and main_out and not main_in:
            a.i = t
        if a.type == onnx.AttributeProto.TENSOR and node.op_type in ("Constant", "ConstantOfShape"):
            v = from_proto(a.t).astype(np.float64)
            a.t.CopyFrom(to_proto(round_to(v, t), t, a.t.name))
    if node.op_type in RANDOM_OPS:
        if node.op_type != "Multinomial":  # its dtype is the samples' integer type
            # the *Like ops' integer input (their main constraint in --int) draws float32
            out_t = TP.FLOAT if t in IS_INT and node.op_type.endswith("Like") else t
            for a in list(node.attribute):
                if a.name == "dtype":
                    node.attribute.remove(a)
            node.attribute.append(oh.make_attribute("dtype", out_t))
            g.output[0].type.tensor_type.elem_type = out_t
            if out_t == t:
                main_out.add(g.output[0].name)
        # the draws differ between implementations: check y - y (y xor y for bool) instead
        y = g.output[0]
        zero = "Xor" if y.type.tensor_type.elem_type == TP.BOOL else "Sub"
        g.node.append(oh.make_node(zero, [y.name, y.name], [y.name + "_zero"]))
        y.name = y.name + "_zero"
    return m, nvals, main_out


def ort_run(m, vals):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    if not all(vi.type.HasField("tensor_type") for vi in list(m.graph.input) +
               list(m.graph.output)):
        # sequences (lists of arrays) and optionals (the value or None); no bfloat16 here
        if any(type_has(vi.type, TP.BFLOAT16) for vi in list(m.graph.input) +
               list(m.graph.output)):
            raise RuntimeError("bfloat16 sequences through onnxruntime's Python API")
        feeds = {}
        for vi in m.graph.input:
            if vi.name in vals:
                v = vals[vi.name]
                feeds[vi.name] = v[1] if isinstance(v, tuple) else v
        return s.run(None, feeds)
    feeds = {}
    for vi in m.graph.input:
        if vi.name not in vals:
            continue
        v = vals[vi.name]
        et = vi.type.tensor_type.elem_type
        if et == TP.BFLOAT16:
            feeds[vi.name] = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
                bf16_bits(v), onnx_element_type=TP.BFLOAT16)
        else:
            feeds[vi.name] = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v))
    outs = s.run_with_ort_values([o.name for o in m.graph.output], feeds)
    res = []
    for o, vi in zip(outs, m.graph.output):
        a = o.numpy()
        if vi.type.tensor_type.elem_type == TP.BFLOAT16:
            a = bf16_values(a.view(np.uint16))
        res.append(a)
    return res


def ref_run(m, vals):
    from onnx.reference import ReferenceEvaluator

    if any(o.type.HasField("optional_type") for o in m.graph.output):
        # onnx 1.16's evaluator returns test_if_opt's optional sequence with its item
        # reshaped ([1, 5] where the spec and the backend data have [5]): not a reference
        raise RuntimeError("optional outputs through the reference evaluator")
    r = ReferenceEvaluator(m)
    return r.run(None, {k: (v[1] if isinstance(v, tuple) else v) for k, v in vals.items()
                        if k in {i.name for i in m.graph.input}})


def upsample9(m):
    """Upsample-7 (scales an attribute) as the Upsample-9 of the same meaning (scales an
    input), for the reference evaluator, which runs the one and not the other; else None."""
    node = m.graph.node[0]
    if node.op_type != "Upsample" or seed_opset(m) >= 9:
        return None
    m = copy.deepcopy(m)
    node = m.graph.node[0]
    scales = [a for a in node.attribute if a.name == "scales"][0]
    m.graph.initializer.append(onh.from_array(np.array(scales.floats, np.float32), "scales__9"))
    node.attribute.remove(scales)
    node.input.append("scales__9")
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 9
    return m


def _with_opset(m, version):
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = version
    return m


def equivalent_forms(m, vals):
    """[(how, model, values)]: the one-node model m written in another version of the same
    meaning, for the types that neither onnxruntime nor the reference evaluator run in m's
    own version:
    - ReduceLogSumExp before 18 (axes an attribute) as ReduceLogSumExp-18 (axes an input):
      onnxruntime runs uint32 and uint64 at 18 only; the evaluator's integer path fails;
    - Resize-10 as Resize-13 with coordinate_transformation_mode asymmetric and, for nearest,
      Resize-10's rule (floor when every scale is at least 1, ceil when none is above 1; other
      scales have no single nearest_mode and no form), its roi omitted;
    - Resize-11 with an empty roi as the same node with the roi omitted: the evaluator indexes
      an empty roi (IndexError) and runs the omitted one."""
    node = m.graph.node[0]
    forms = []
    sv = onnx.defs.get_schema(node.op_type, seed_opset(m), "").since_version
    if node.op_type == "ReduceLogSumExp" and sv < 18:
        m2 = _with_opset(copy.deepcopy(m), 18)
        n2 = m2.graph.node[0]
        axes = [a for a in n2.attribute if a.name == "axes"]
        if axes:
            m2.graph.initializer.append(onh.from_array(np.array(axes[0].ints, np.int64),
                                                       "axes__18"))
            n2.attribute.remove(axes[0])
            n2.input.append("axes__18")
        forms.append(("ReduceLogSumExp-18", m2, vals))
    if node.op_type == "Resize" and sv == 10:
        m2 = _with_opset(copy.deepcopy(m), 13)
        n2 = m2.graph.node[0]
        scales = vals.get(n2.input[1])
        if scales is None:
            init = {t.name: onh.to_array(t) for t in m2.graph.initializer}
            scales = init.get(n2.input[1])
        mode = [a.s for a in n2.attribute if a.name == "mode"]
        nearest = not mode or mode[0] == b"nearest"
        rule = None
        if scales is not None and nearest:
            sc = np.asarray(scales, np.float64)
            rule = "floor" if (sc >= 1).all() else "ceil" if (sc <= 1).all() else None
        if scales is not None and (rule or not nearest):
            n2.input[:] = [n2.input[0], "", n2.input[1]]
            n2.attribute.append(oh.make_attribute("coordinate_transformation_mode",
                                                  "asymmetric"))
            if rule:
                n2.attribute.append(oh.make_attribute("nearest_mode", rule))
            forms.append(("Resize-13 asymmetric", m2, vals))
    if node.op_type == "Resize" and sv == 11 and len(node.input) > 1:
        roi = vals.get(node.input[1])
        if roi is not None and np.asarray(roi).size == 0:
            m2 = _with_opset(copy.deepcopy(m), 13)
            m2.graph.node[0].input[1] = ""
            keep = [vi for vi in m2.graph.input if vi.name != node.input[1]]
            del m2.graph.input[:]
            m2.graph.input.extend(keep)
            forms.append(("Resize-13, roi omitted", m2,
                          {k: v for k, v in vals.items() if k != node.input[1]}))
    return forms


def checked(m, opset):
    """None when the ONNX checker accepts m, else why not."""
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:
        if not ("inconsistent type" in str(e) and onnx.defs.get_schema(
                m.graph.node[0].op_type, opset, "").has_function):
            return "seed invalid at this opset"
        # onnx 1.16's function body of the op (MeanVarianceNormalization's float32 exponent
        # constant) fails its own type inference for this type: the model itself is valid
        try:
            onnx.checker.check_model(m)
        except Exception:
            return "seed invalid at this opset"
    return None


def reference(seed, schema, opset, param, t, forms=False):
    """(model, inputs, outputs, how) for t, or (None, why); with forms, the equivalent forms
    of the model (`equivalent_forms`) are tried after its own version's references."""
    m0, vals = seed
    special = has_subgraph(m0.graph.node[0])
    # the integer audit's main constraint may be an index or condition (SequenceAt's position,
    # If's cond) beside float32 sequences or subgraphs: the op's tensors first, then every
    # float32 value made the integer type
    modes = ["node", "all"] if t in IS_INT else [None]
    why = None
    for mode in modes:
        r = retype(m0, vals, schema, opset, param, t, mode)
        if r is None:
            why = why or "seed's typed values are not numeric"
            continue
        m, nvals, main_out = r
        why = checked(m, opset)
        if why is None:
            break
    if why:
        return None, why
    try:
        return (m, nvals, ort_run(m, nvals), "onnxruntime"), None
    except Exception:
        pass
    if t == TP.FLOAT or t in IS_INT or (t in (TP.FLOAT16, TP.DOUBLE) and
                                        (special or main_out and not all(
                                            o.type.HasField("tensor_type")
                                            for o in m.graph.output))):
        # numpy computes float16 and double in the type, as the op's subgraphs and sequences
        # do; the evaluator's own types are the reference
        try:
            return (m, nvals, ref_run(m, nvals), "reference evaluator"), None
        except Exception:
            pass
        up = upsample9(m)
        if up is not None:
            try:
                return (m, nvals, ref_run(up, nvals), "reference evaluator, Upsample-9"), None
            except Exception:
                pass
        for how, m2, v2 in equivalent_forms(m, nvals) if forms else ():
            for name, fn in (("onnxruntime", ort_run), ("reference evaluator", ref_run)):
                try:
                    return (m, nvals, fn(m2, v2), "%s, %s" % (name, how)), None
                except Exception:
                    pass
        if t == TP.FLOAT or t in IS_INT:
            return None, "no reference (onnxruntime and the reference evaluator fail)"
    # float32 computation on the same (rounded) values, rounded to t
    r32 = retype(m0, vals, schema, opset, param, TP.FLOAT)
    m32 = r32[0]
    step = ""
    if special and t == TP.BFLOAT16:
        m32, step = round_each_step(m32), " rounded at each step"
    in_t = {vi.name for vi in m.graph.input if type_has(vi.type, t)}
    v32 = {k: (as_f32(nvals[k]) if k in in_t else v) for k, v in r32[1].items()}
    for how, fn in (("onnxruntime float32", ort_run), ("reference evaluator float32", ref_run)):
        try:
            outs = fn(m32, v32)
        except Exception:
            continue
        outs = [round_nested(o, t) if vi.name in main_out or vi.name.endswith("_zero") and
                main_out else o for o, vi in zip(outs, m.graph.output)]
        return (m, nvals, outs, how + step), None
    return None, "no reference (onnxruntime and the reference evaluator fail)"


def round_each_step(m):
    """Model m (float32) with every float32 value that a node makes, in its subgraphs too,
    rounded to bfloat16 and back (Cast, Cast): the bfloat16 computation of a subgraph of
    several ops, each computed in float32 and rounded, as onnxgrad's bfloat16 kernels do."""
    m = onnx.shape_inference.infer_shapes(m)

    def walk(g, known):
        known = dict(known)
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.HasField("tensor_type"):
                known[vi.name] = vi.type.tensor_type.elem_type
        nodes = []
        for node in g.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, known)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        walk(sg, known)
            nodes.append(node)
            for k, o in enumerate(node.output):
                if o and known.get(o) == TP.FLOAT:
                    node.output[k] = o + "__f32"
                    nodes.append(oh.make_node("Cast", [o + "__f32"], [o + "__bf16"],
                                              to=TP.BFLOAT16))
                    nodes.append(oh.make_node("Cast", [o + "__bf16"], [o], to=TP.FLOAT))
        del g.node[:]
        g.node.extend(nodes)
        del g.value_info[:]

    walk(m.graph, {})
    return m


def as_f32(v):
    if isinstance(v, tuple):
        return ("optional", None if v[1] is None else as_f32(v[1]))
    if isinstance(v, list):
        return [as_f32(x) for x in v]
    return np.asarray(v).astype(np.float32)


def round_nested(v, t):
    if v is None:
        return None
    if isinstance(v, list):
        return [round_to(x, t) for x in v]
    return round_to(v, t)


def value_proto(v, tp, name):
    """TensorProto, SequenceProto or OptionalProto of value v declared as TypeProto tp."""
    if tp.HasField("sequence_type"):
        et = tp.sequence_type.elem_type.tensor_type.elem_type
        p = onnx.SequenceProto()
        p.name = name
        p.elem_type = onnx.SequenceProto.TENSOR
        for k, x in enumerate(v):
            p.tensor_values.append(to_proto(np.asarray(x), et, "%s_%d" % (name, k)))
        return p
    if tp.HasField("optional_type"):
        p = onnx.OptionalProto()
        p.name = name
        inner = tp.optional_type.elem_type
        v = v[1] if isinstance(v, tuple) else v
        if inner.HasField("sequence_type"):
            p.elem_type = onnx.OptionalProto.SEQUENCE
            if v is not None:
                p.sequence_value.CopyFrom(value_proto(v, inner, name))
        else:
            p.elem_type = onnx.OptionalProto.TENSOR
            if v is not None:
                p.tensor_value.CopyFrom(value_proto(v, inner, name))
        return p
    return to_proto(v, tp.tensor_type.elem_type, name)


def write_case(d, m, vals, outs):
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    k = 0
    for vi in m.graph.input:
        if vi.name not in vals:
            continue
        p = value_proto(vals[vi.name], vi.type, vi.name)
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(p.SerializeToString())
        k += 1
    for i, (vi, o) in enumerate(zip(m.graph.output, outs)):
        p = value_proto(o, vi.type, vi.name)
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
            f.write(p.SerializeToString())


# ----------------------------------------------------------------------------- exclusions


def parse_set(s, conv):
    if s == "*":
        return None
    out = set()
    for part in s.split(","):
        if "-" in part and conv is int:
            a, b = part.split("-")
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(conv(part))
    return out


def load_exclusions(int_mode):
    ex = []
    name = "type_audit_int_exclusions.txt" if int_mode else "type_audit_exclusions.txt"
    with open(os.path.join(HERE, name)) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            op, vers, types, reason = line.split(None, 3)
            ex.append([op, parse_set(vers, int), parse_set(types, str), reason, 0])
    return ex


def excluded(ex, op, sv, tn):
    for e in ex:
        if e[0] == op and (e[1] is None or sv in e[1]) and (e[2] is None or tn in e[2]):
            return e
    return None


# ----------------------------------------------------------------------------- main


def check_forms(build):
    """--check-forms: the equivalent forms that stand in as references (`equivalent_forms`)
    give what onnxruntime gives on the model's own version, on every seed and type that
    onnxruntime runs there; 1 when one differs or an op with forms was never compared."""
    idx = seed_index(build)
    types = {"int8": TP.INT8, "uint8": TP.UINT8, "int32": TP.INT32, "int64": TP.INT64,
             "float": TP.FLOAT}
    bad, count = [], collections.Counter()
    for op, sv, opset, schema in combos():
        if (op, sv) not in (("Resize", 10), ("Resize", 11), ("ReduceLogSumExp", 1),
                            ("ReduceLogSumExp", 11), ("ReduceLogSumExp", 13)):
            continue
        param = main_constraint(schema)[0]
        for tn, t in types.items():
            if "tensor(%s)" % tn not in {a for c in schema.type_constraints
                                         for a in c.allowed_type_strs}:
                continue
            for d in idx[op]:
                seed = load_seed(d)
                r = seed and retype(seed[0], seed[1], schema, opset, param, t, "node")
                if not r or checked(r[0], opset):
                    continue
                try:
                    own = ort_run(r[0], r[1])
                except Exception:
                    continue
                for how, m2, v2 in equivalent_forms(r[0], r[1]):
                    alt = None
                    for fn in (ort_run, ref_run):
                        try:
                            alt = fn(m2, v2)
                            break
                        except Exception:
                            pass
                    if alt is None:
                        continue
                    same = all(np.shape(a) == np.shape(b) and np.allclose(
                        np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-5,
                        atol=1e-6 if tn == "float" else 0) for a, b in zip(own, alt))
                    count["%s-%d" % (op, sv)] += 1
                    if not same:
                        bad.append("%s-%d %s %s (%s)" % (op, sv, tn, os.path.basename(d), how))
    for k in sorted(count):
        print("forms: %s agrees with onnxruntime on %d seed-and-type pairs" % (k, count[k]))
    for b in bad:
        print("forms: DIFFERS: " + b)
    missing = {"Resize-10", "Resize-11", "ReduceLogSumExp-1", "ReduceLogSumExp-11",
               "ReduceLogSumExp-13"} - set(count)
    for k in sorted(missing):
        print("forms: %s was never compared" % k)
    return 1 if bad or missing else 0


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    if "--check-forms" in sys.argv[2:]:
        return check_forms(build)
    verbose = "-v" in sys.argv[2:]
    if "--int" in sys.argv[2:]:
        TYPES.clear()
        TYPES.update(INT_TYPES)
    runner = os.path.join(build, "tests", "og_backend_test")
    if not os.access(runner, os.X_OK):
        print("audit_types.py: %s not built" % runner, file=sys.stderr)
        return 1
    work = os.path.join(build, "type_audit_int" if "--int" in sys.argv[2:] else "type_audit")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    idx = seed_index(build)
    cache = {}
    for op, lst in generated_seeds().items():
        for i, sd in enumerate(lst):
            key = "generated:%s:%d" % (op, i)
            cache[key], cache[("opset", key)] = sd, seed_opset(sd[0])
            idx[op].append(key)
    unchecked = collections.Counter()
    unchecked_list = collections.defaultdict(list)
    cases = {}  # case name -> (op, sv, type name, how)
    n_float_ops, float_ops = 0, set()
    only = [a.split("=", 1)[1].split(",") for a in sys.argv[2:] if a.startswith("--ops=")]
    for op, sv, opset, schema in combos():
        if only and op not in only[0]:
            continue
        mc = main_constraint(schema)
        if mc is None:
            continue
        n_float_ops += 1
        float_ops.add(op)
        param, fts = mc
        # seeds whose own version is this one first
        seeds = idx.get(op, [])
        seeds = sorted(seeds, key=lambda d: (onnx.defs.get_schema(op, seed_opset_of(d, cache), "")
                                             .since_version != sv))
        for tn in fts:
            t = TYPES[tn]
            why = "no seed model of the op"
            got = None
            # the first 12 seeds, and the generated ones wherever they sort
            # every seed with the op's own references first, then with its equivalent forms
            tries = seeds[:12] + [d for d in seeds[12:] if d.startswith("generated:")]
            for d, forms in [(d, False) for d in tries] + [(d, True) for d in tries]:
                if d not in cache:
                    cache[d] = load_seed(d)
                if cache[d] is None:
                    why = "the seed's values are sequences or optionals (the audit feeds tensors)"
                    continue
                if schema.deprecated:
                    # Upsample-10, Scatter-11: the spec keeps the op's meaning and points to
                    # Resize, ScatterElements; onnxruntime and onnx's checker refuse them.
                    # The reference is the version before, run on the same values.
                    got, why = reference(cache[d], schema, opset - 1, param, t, forms)
                    if got:
                        m = copy.deepcopy(got[0])
                        for o in m.opset_import:
                            if o.domain in ("", "ai.onnx"):
                                o.version = opset
                        got = (m,) + got[1:3] + (got[3] + " at opset %d" % (opset - 1),)
                else:
                    got, why = reference(cache[d], schema, opset, param, t, forms)
                if got:
                    break
            if not got:
                unchecked[why] += 1
                unchecked_list[why].append("%s-%d %s" % (op, sv, tn))
                continue
            name = "test_%s__v%d__%s" % (op, sv, tn)
            write_case(os.path.join(work, name), got[0], got[1], got[2])
            cases[name] = (op, sv, tn, got[3])
    names = sorted(cases)
    results = {}
    for i in range(0, len(names), 100):
        chunk = names[i : i + 100]
        p = subprocess.run([runner] + [os.path.join(work, n) for n in chunk],
                           capture_output=True, text=True)
        for line in p.stdout.splitlines():
            m = re.match(r"(PASS|FAIL|SKIP) (\S+?)(?:: (.*))?$", line)
            if m:
                results[m.group(2)] = (m.group(1), m.group(3) or "")
        for n in chunk:
            if n not in results:
                results[n] = ("FAIL", "runner died (exit %d): %s" % (p.returncode,
                                                                      p.stderr[-300:]))
    ex = load_exclusions("--int" in sys.argv[2:])
    passed, unexpected = 0, []
    excl_by_reason = collections.Counter()
    for n in names:
        op, sv, tn, how = cases[n]
        verdict, msg = results[n]
        if verdict == "PASS":
            passed += 1
            if verbose:
                print("PASS %s (%s)" % (n, how))
            continue
        e = excluded(ex, op, sv, tn)
        if e:
            e[4] += 1
            excl_by_reason[e[3]] += 1
            if verbose:
                print("excluded %s %s: %s" % (verdict, n, msg))
        else:
            unexpected.append("%s %s: %s (reference: %s)" % (verdict, n, msg, how))
    for line in unexpected:
        print(line)
    for why, lst in sorted(unchecked_list.items()):
        print("unchecked (%s): %s" % (why, " ".join(lst)))
    stale = [e for e in ex if e[4] == 0]
    for e in stale:
        print("note: exclusion matches no failure now: %s %s %s" % (e[0], e[1] or "*", e[2] or "*"))
    by_type = collections.Counter(cases[n][2] for n in names)
    n_combos = len(names) + sum(unchecked.values())
    print("type audit: %d ops (%d op versions from 7 to 21) with a type of the set, %d (op, version, "
          "type) combinations; %d checked (%s), %d from %d ops; %d passed, %d excluded, "
          "%d unexpected failures; %d unchecked"
          % (len(float_ops), n_float_ops, n_combos, len(names),
             ", ".join("%s %d" % kv for kv in sorted(by_type.items())), len(names),
             len({c[0] for c in cases.values()}), passed, sum(excl_by_reason.values()),
             len(unexpected), sum(unchecked.values())))
    for r, c in excl_by_reason.most_common():
        print("  excluded %4d: %s" % (c, r))
    for r, c in unchecked.most_common():
        print("  unchecked %4d: %s" % (c, r))
    return 1 if unexpected else 0


def seed_opset_of(d, cache):
    key = ("opset", d)
    if key not in cache:
        try:
            cache[key] = seed_opset(onnx.load(os.path.join(d, "model.onnx")))
        except Exception:
            cache[key] = 21
    return cache[key]


if __name__ == "__main__":
    sys.exit(main())
