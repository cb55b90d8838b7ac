#!/usr/bin/env python3
"""The ai.onnx.ml ops against onnxruntime: one-node models over every attribute variant the
spec has (post transforms, binary and multi-class cases, int and string labels, base values,
aggregate functions, missing-value tracks, tensor attributes, ...), run by `onnxgrad run`
and compared with onnxruntime (one thread), or with onnx.reference where onnxruntime lacks
the case (each such case says why).  There is no ONNX backend data for most of these ops.

Usage: ml_ops.py ONNXGRAD_CLI [-k SUBSTRING] [-v]"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ort.set_default_logger_severity(3)
CLI = sys.argv[1]
ONLY = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
VERBOSE = "-v" in sys.argv
rng = np.random.RandomState(7)
ELEM = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
        np.int32: TensorProto.INT32, np.str_: TensorProto.STRING, np.int16: TensorProto.INT16}
cases = []  # (name, model, feeds, oracle, oracle_model, loose_dtype): oracle "ort" or "ref: why"


def case(name, op, inputs, outputs, ml=1, oracle="ort", oracle_attrs=None, loose_dtype=False,
         **attrs):
    """oracle_attrs: attributes the oracle's copy of the node takes instead (where it reads
    one differently); loose_dtype: the oracle's output dtype is wrong, compare values."""
    """inputs: {name: array}; outputs: [(name, elem_type or TypeProto)]."""
    node = helper.make_node(op, list(inputs), [o[0] for o in outputs], domain="ai.onnx.ml",
                            **attrs)
    ins = [helper.make_tensor_value_info(k, ELEM[v.dtype.type], None) for k, v in inputs.items()]
    outs = [helper.make_value_info(n, t) if isinstance(t, onnx.TypeProto)
            else helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    g = helper.make_graph([node], name, ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("ai.onnx.ml", ml)])
    m.ir_version = 8 if ml < 4 else 9
    om = m
    if oracle_attrs:
        om = onnx.ModelProto()
        om.CopyFrom(m)
        for a in om.graph.node[0].attribute:
            if a.name in oracle_attrs:
                a.CopyFrom(helper.make_attribute(a.name, oracle_attrs[a.name]))
    cases.append((name, m, inputs, oracle, om, loose_dtype))


F = TensorProto.FLOAT
X23 = rng.randn(6, 4).astype(np.float32)
POSTS = ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"]

# ---- LinearRegressor ---------------------------------------------------------------------
for targets in (1, 3):
    for post in POSTS:
        coef = (rng.rand(targets * 4) * 0.1).astype(np.float32).tolist()
        inter = (0.3 + 0.1 * rng.rand(targets)).astype(np.float32).tolist()
        x = (rng.rand(6, 4) * 0.5).astype(np.float32)  # scores in (0, 1): PROBIT is defined
        case(f"linreg_t{targets}_{post}", "LinearRegressor", {"X": x}, [("Y", F)],
             coefficients=coef, intercepts=inter, targets=targets, post_transform=post)
case("linreg_no_intercepts", "LinearRegressor", {"X": X23}, [("Y", F)],
     coefficients=rng.randn(8).astype(np.float32).tolist(), targets=2)
case("linreg_1d", "LinearRegressor", {"X": X23[0]}, [("Y", F)],
     coefficients=rng.randn(4).astype(np.float32).tolist(), intercepts=[0.5])
case("linreg_int64", "LinearRegressor", {"X": rng.randint(-5, 5, (5, 4)).astype(np.int64)},
     [("Y", F)], oracle="ort on float: onnxruntime's LinearRegressor takes float only",
     coefficients=rng.randn(4).astype(np.float32).tolist(), intercepts=[0.5])

# ---- LinearClassifier --------------------------------------------------------------------
def lin_clf(name, x, t, labels, post, multi=1, oracle="ort", **kw):
    lab = ({"classlabels_strings": labels} if isinstance(labels[0], str)
           else {"classlabels_ints": labels})
    yt = TensorProto.STRING if isinstance(labels[0], str) else TensorProto.INT64
    case(name, "LinearClassifier", {"X": x}, [("Y", yt), ("Z", F)], oracle=oracle,
         coefficients=rng.randn(t * x.shape[-1]).astype(np.float32).tolist(),
         intercepts=rng.randn(t).astype(np.float32).tolist(), post_transform=post,
         multi_class=multi, **lab, **kw)


for post in POSTS:
    if post != "PROBIT":  # probit of unbounded scores is NaN
        lin_clf(f"linclf_3_{post}_ints", X23, 3, [4, 5, 9], post)
        lin_clf(f"linclf_3_{post}_strings", X23, 3, ["a", "b", "c"], post)
    if post not in ("PROBIT",):  # onnxruntime leaves half of a binary PROBIT Z unwritten
        lin_clf(f"linclf_binary_{post}", X23, 1, [3, 7], post)
        lin_clf(f"linclf_binary_{post}_strings", X23, 1, ["no", "yes"], post)
    lin_clf(f"linclf_2cols_{post}", X23 * 0.1, 2, [0, 1], post if post != "PROBIT" else "NONE")
# one column of scores needs two labels (onnxruntime refuses the model too); a binary
# PROBIT is not compared: onnxruntime packs its N values into an [N, 2] output
lin_clf("linclf_one_col_3labels", X23, 1, [1, 2, 3], "NONE",
        oracle="error: needs two class labels")
lin_clf("linclf_one_col_3labels_strings", X23, 1, ["x", "y", "z"], "LOGISTIC",
        oracle="error: needs two class labels")
lin_clf("linclf_1d", X23[1], 3, [0, 1, 2], "SOFTMAX")
for dt in (np.int64, np.int32, np.float64):
    lin_clf(f"linclf_{dt.__name__}", (X23 * 3).astype(dt), 3, [0, 1, 2], "SOFTMAX")

# ---- ArrayFeatureExtractor ---------------------------------------------------------------
words = np.array([["w%d%s" % (i, "x" * j) for j in range(5)] for i in range(3)])
for name, x in (("f32", X23), ("f64", X23.astype(np.float64)), ("i64", (X23 * 9).astype(np.int64)),
                ("i32", (X23 * 9).astype(np.int32)), ("str", words),
                ("3d", rng.randn(2, 3, 5).astype(np.float32)), ("1d", X23[0])):
    idx = np.array([0, 2, 2] if x.shape[-1] > 2 else [1], np.int64)
    case(f"afe_{name}", "ArrayFeatureExtractor", {"X": x, "Y": idx},
         [("Z", ELEM[x.dtype.type])])
case("afe_2d_indices", "ArrayFeatureExtractor",
     {"X": X23, "Y": np.array([[3, 0], [1, 1]], np.int64)}, [("Z", F)])

# ---- ZipMap ------------------------------------------------------------------------------
for keys, kt in ((dict(classlabels_int64s=[10, 20, 30, 40]), TensorProto.INT64),
                 (dict(classlabels_strings=["a", "b", "c", "d"]), TensorProto.STRING)):
    t = helper.make_sequence_type_proto(helper.make_map_type_proto(
        kt, helper.make_tensor_type_proto(F, None)))
    case(f"zipmap_{kt}", "ZipMap", {"X": X23}, [("Z", t)], **keys)
    case(f"zipmap_{kt}_1d", "ZipMap", {"X": X23[2]}, [("Z", t)], **keys)

# ---- Normalizer, Scaler, Binarizer, Imputer ----------------------------------------------
xn = X23.copy()
xn[2] = 0
for norm in ("MAX", "L1", "L2"):
    case(f"normalizer_{norm}", "Normalizer", {"X": xn}, [("Y", F)], norm=norm)
    case(f"normalizer_{norm}_int64", "Normalizer", {"X": (xn * 5).astype(np.int64)}, [("Y", F)],
         norm=norm)
    case(f"normalizer_{norm}_1d", "Normalizer", {"X": xn[0]}, [("Y", F)], norm=norm)
case("normalizer_neg_max", "Normalizer", {"X": -np.abs(X23)}, [("Y", F)], norm="MAX")
case("scaler_per_feature", "Scaler", {"X": X23}, [("Y", F)], offset=[0.1, -0.2, 0.3, 0.0],
     scale=[2.0, 0.5, 1.5, -1.0])
case("scaler_one", "Scaler", {"X": X23}, [("Y", F)], offset=[0.25], scale=[3.0])
case("scaler_int64", "Scaler", {"X": (X23 * 10).astype(np.int64)}, [("Y", F)], offset=[1.0],
     scale=[0.5])
case("scaler_f64", "Scaler", {"X": X23.astype(np.float64)}, [("Y", F)], offset=[1.0], scale=[0.5])
case("scaler_1d", "Scaler", {"X": X23[0]}, [("Y", F)], offset=[0.1, 0.2, 0.3, 0.4],
     scale=[1.0, 2.0, 3.0, 4.0])
for dt in (np.float32, np.float64, np.int64, np.int32):
    case(f"binarizer_{dt.__name__}", "Binarizer", {"X": (X23 * 3).astype(dt)},
         [("Y", ELEM[dt])], threshold=0.5,
         oracle="ort" if dt == np.float32 else "ref: onnxruntime's Binarizer takes float only")
case("binarizer_default", "Binarizer", {"X": X23}, [("Y", F)])
xm = X23.copy()
xm[1, 2] = xm[4, 0] = np.nan
case("imputer_nan_per_feature", "Imputer", {"X": xm}, [("Y", F)],
     imputed_value_floats=[1.0, 2.0, 3.0, 4.0], replaced_value_float=float("nan"))
case("imputer_nan_one", "Imputer", {"X": xm}, [("Y", F)], imputed_value_floats=[-7.0],
     replaced_value_float=float("nan"))
xv = X23.copy()
xv[0, 1] = xv[3, 3] = -1.0
case("imputer_value", "Imputer", {"X": xv}, [("Y", F)], imputed_value_floats=[0.5],
     replaced_value_float=-1.0)
xi = rng.randint(-2, 3, (5, 3)).astype(np.int64)
case("imputer_int64", "Imputer", {"X": xi}, [("Y", TensorProto.INT64)],
     imputed_value_int64s=[7, 8, 9], replaced_value_int64=0)

# ---- OneHotEncoder -----------------------------------------------------------------------
cats = np.array([[1, 3, 5], [7, 3, 2]], np.int64)
case("onehot_int64", "OneHotEncoder", {"X": cats}, [("Y", F)], cats_int64s=[1, 2, 3, 5, 7])
case("onehot_int64_unknown", "OneHotEncoder", {"X": cats}, [("Y", F)], cats_int64s=[1, 3],
     zeros=1)
case("onehot_float", "OneHotEncoder", {"X": cats.astype(np.float32) + 0.25}, [("Y", F)],
     cats_int64s=[1, 2, 3, 5, 7])
case("onehot_double", "OneHotEncoder", {"X": cats.astype(np.float64)}, [("Y", F)],
     cats_int64s=[2, 3])
case("onehot_strings", "OneHotEncoder", {"X": np.array([["a", "b"], ["c", "zz"]])}, [("Y", F)],
     cats_strings=["c", "a", "b"])
case("onehot_1d", "OneHotEncoder", {"X": cats[0]}, [("Y", F)], cats_int64s=[5, 3, 1])

# ---- LabelEncoder, CategoryMapper --------------------------------------------------------
S = TensorProto.STRING
I64 = TensorProto.INT64
case("labelenc1_str_to_int", "LabelEncoder", {"X": np.array(["b", "zz", "a", "b"])}, [("Y", I64)],
     classes_strings=["a", "b", "c"], default_int64=-9, default_string="?")
case("labelenc1_int_to_str", "LabelEncoder", {"X": np.array([2, 0, 7], np.int64)}, [("Y", S)],
     classes_strings=["a", "b", "c"], default_int64=-9, default_string="none")
case("labelenc2_str_int", "LabelEncoder", {"X": np.array([["Amy", "Dori"], ["Sally", "Amy"]])},
     [("Y", I64)], ml=2, keys_strings=["Amy", "Sally"], values_int64s=[5, 6], default_int64=-1)
case("labelenc2_int_str", "LabelEncoder", {"X": np.array([3, 4, 5], np.int64)}, [("Y", S)], ml=2,
     keys_int64s=[3, 5], values_strings=["three", "five"])
case("labelenc2_float_float", "LabelEncoder",
     {"X": np.array([0.5, 1.5, 2.0, -0.0], np.float32)}, [("Y", F)], ml=2,
     keys_floats=[0.5, 2.0, 0.0], values_floats=[10.0, 20.0, 30.0], default_float=-1.0)
case("labelenc2_defaults", "LabelEncoder", {"X": np.array(["q"])}, [("Y", I64)], ml=2,
     keys_strings=["a"], values_int64s=[1])
case("labelenc2_str_default", "LabelEncoder", {"X": np.array([9], np.int64)}, [("Y", S)], ml=2,
     keys_int64s=[1], values_strings=["one"])
def tens(a):
    a = np.asarray(a)
    return numpy_helper.from_array(a.astype(object) if a.dtype.kind == "U" else a)
case("labelenc4_tensors_i32_f64", "LabelEncoder", {"X": np.array([1, 2, 3, 1], np.int32)},
     [("Y", TensorProto.DOUBLE)], ml=4, oracle="ref: onnxruntime lacks int32 -> double", keys_tensor=tens(np.array([1, 3], np.int32)),
     values_tensor=tens(np.array([0.25, 0.75])), default_tensor=tens(np.array([-1.5])))
case("labelenc4_nan_key", "LabelEncoder",
     {"X": np.array([np.nan, 1.0, 2.0], np.float32)}, [("Y", I64)], ml=4,
     keys_floats=[float("nan"), 2.0], values_int64s=[7, 8])
case("labelenc4_i16_str", "LabelEncoder", {"X": np.array([5, 6], np.int16)}, [("Y", S)], ml=4,
     oracle="ref: onnxruntime lacks int16 -> string",
     keys_tensor=tens(np.array([5], np.int16)), values_tensor=tens(np.array(["five"])),
     default_tensor=tens(np.array(["other"])))
case("catmap_str_to_int", "CategoryMapper", {"X": np.array([["cat", "dog"], ["x", "cat"]])},
     [("Y", I64)], cats_strings=["cat", "dog"], cats_int64s=[1, 2], default_int64=-5)
case("catmap_int_to_str", "CategoryMapper", {"X": np.array([2, 1, 0], np.int64)}, [("Y", S)],
     cats_strings=["cat", "dog"], cats_int64s=[1, 2], default_string="?")

# ---- FeatureVectorizer -------------------------------------------------------------------
a = rng.randn(3, 2).astype(np.float32)
b = rng.randint(0, 9, (3, 3)).astype(np.int64)
c = rng.randn(3, 4).astype(np.float64)
bf = b.astype(np.float32)
case("featvec_exact", "FeatureVectorizer", {"A": a, "B": bf}, [("Y", F)], inputdimensions=[2, 3])
case("featvec_pad_cut", "FeatureVectorizer", {"A": a, "B": bf, "C": c.astype(np.float32)},
     [("Y", F)], inputdimensions=[4, 1, 2])
case("featvec_mixed", "FeatureVectorizer", {"A": a, "B": b, "C": c}, [("Y", F)],
     inputdimensions=[2, 3, 4], oracle="ref: onnxruntime wants one input type", loose_dtype=True)
case("featvec_1d", "FeatureVectorizer", {"A": a[0]}, [("Y", F)], inputdimensions=[2])


# ---- trees -------------------------------------------------------------------------------
def random_trees(n_trees, depth, n_features, n_targets, modes=("BRANCH_LEQ",), missing=False,
                 leaf_targets=None, positive=False, sparse_tree_ids=False):
    """Complete binary trees, node ids in breadth-first order, weights on every leaf."""
    nodes = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values",
                             "truenodeids", "falsenodeids", "missing_value_tracks_true")}
    w = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    for t in range(n_trees):
        tid = t * 3 if sparse_tree_ids else t
        n_int = 2 ** depth - 1
        for i in range(2 ** (depth + 1) - 1):
            leaf = i >= n_int
            nodes["treeids"].append(tid)
            nodes["nodeids"].append(i)
            nodes["featureids"].append(0 if leaf else int(rng.randint(n_features)))
            nodes["modes"].append("LEAF" if leaf else modes[rng.randint(len(modes))])
            nodes["values"].append(0.0 if leaf else float(np.float32(rng.randn() * 0.5)))
            nodes["truenodeids"].append(0 if leaf else 2 * i + 1)
            nodes["falsenodeids"].append(0 if leaf else 2 * i + 2)
            nodes["missing_value_tracks_true"].append(int(missing and rng.rand() < 0.5))
            if leaf:
                for target in (leaf_targets if leaf_targets is not None else range(n_targets)):
                    v = rng.rand() if positive else rng.randn()
                    w["treeids"].append(tid)
                    w["nodeids"].append(i)
                    w["ids"].append(target)
                    w["weights"].append(float(np.float32(v)))
    return nodes, w


def tree_attrs(nodes, w, prefix, as_tensor=False):
    a = {"nodes_" + k: v for k, v in nodes.items()}
    if as_tensor:
        a["nodes_values_as_tensor"] = tens(np.array(a.pop("nodes_values"), np.float64))
    for k, v in w.items():
        a[f"{prefix}_{k}"] = v
    if as_tensor:
        a[f"{prefix}_weights_as_tensor"] = tens(np.array(a.pop(f"{prefix}_weights"), np.float64))
    return a


xt = rng.randn(40, 5).astype(np.float32)
xt_nan = xt.copy()
xt_nan[::3, 1] = np.nan
xt_nan[1::4, 3] = np.nan
ALL_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
for agg in ("SUM", "AVERAGE", "MIN", "MAX"):
    for nt in (1, 3):
        nodes, w = random_trees(4, 3, 5, nt, modes=ALL_MODES)
        extra = {"base_values": [0.5] * nt} if agg != "MAX" else {}
        case(f"tree_reg_{agg}_t{nt}", "TreeEnsembleRegressor", {"X": xt}, [("Y", F)], n_targets=nt,
             aggregate_function=agg, **tree_attrs(nodes, w, "target"), **extra)
for post in POSTS:
    nodes, w = random_trees(3, 2, 5, 3)
    case(f"tree_reg_post_{post}", "TreeEnsembleRegressor", {"X": xt}, [("Y", F)], n_targets=3,
         post_transform=post, **tree_attrs(nodes, w, "target"))
nodes, w = random_trees(5, 3, 5, 1, missing=True)
case("tree_reg_missing_tracks", "TreeEnsembleRegressor", {"X": xt_nan}, [("Y", F)], n_targets=1,
     **tree_attrs(nodes, w, "target"))
nodes, w = random_trees(3, 3, 5, 2, missing=True, sparse_tree_ids=True)
case("tree_reg_v3_as_tensor", "TreeEnsembleRegressor", {"X": xt_nan.astype(np.float64)}, [("Y", F)],
     ml=3, n_targets=2,
     base_values_as_tensor=tens(np.array([0.1, -0.2])), **tree_attrs(nodes, w, "target", True))
nodes, w = random_trees(3, 2, 5, 1)
case("tree_reg_probit_one", "TreeEnsembleRegressor", {"X": xt}, [("Y", F)], n_targets=1,
     post_transform="PROBIT", base_values=[0.5], **tree_attrs(
         *random_trees(3, 2, 5, 1, positive=True), "target"))
for dt in (np.float64, np.int64, np.int32):
    nodes, w = random_trees(3, 3, 5, 2)
    case(f"tree_reg_{dt.__name__}", "TreeEnsembleRegressor", {"X": (xt * 3).astype(dt)},
         [("Y", F)], n_targets=2, **tree_attrs(nodes, w, "target"),
         oracle="ort" if dt == np.float64 else "ort on float: onnxruntime takes float only")
case("tree_reg_1d", "TreeEnsembleRegressor", {"X": xt[0]}, [("Y", F)], n_targets=1,
     oracle="ref: onnxruntime reads [F] as F rows of one feature",
     **tree_attrs(*random_trees(2, 2, 5, 1), "target"))


def tree_clf(name, x, labels, leaf_targets=None, positive=False, post="NONE", base=None, ml=1,
             as_tensor=False, oracle="ort", **kw):
    nc = len(labels)
    nodes, w = random_trees(4, 3, x.shape[-1], nc, leaf_targets=leaf_targets, positive=positive,
                            modes=ALL_MODES[:4])
    lab = ({"classlabels_strings": labels} if isinstance(labels[0], str)
           else {"classlabels_int64s": labels})
    yt = S if isinstance(labels[0], str) else I64
    extra = {}
    if base is not None:
        if as_tensor:
            extra["base_values_as_tensor"] = tens(np.array(base, np.float64))
        else:
            extra["base_values"] = base
    case(name, "TreeEnsembleClassifier", {"X": x}, [("Y", yt), ("Z", F)], ml=ml, oracle=oracle,
         post_transform=post, **lab, **tree_attrs(nodes, w, "class", as_tensor), **extra, **kw)


for post in POSTS[:4]:
    tree_clf(f"tree_clf_3_{post}", xt, [2, 4, 6], post=post)
    tree_clf(f"tree_clf_3_{post}_strings", xt, ["r", "g", "b"], post=post, base=[0.1, 0.2, 0.3])
    for base in (None, [0.2], [0.3, -0.1]):
        nb = 0 if base is None else len(base)
        tree_clf(f"tree_clf_bin_pos_{post}_b{nb}", xt, [0, 1], leaf_targets=[1], positive=True,
                 post=post, base=base)
        tree_clf(f"tree_clf_bin_mixed_{post}_b{nb}", xt, [3, 8], leaf_targets=[1], post=post,
                 base=base)
        tree_clf(f"tree_clf_bin_both_{post}_b{nb}", xt, [0, 1], post=post, base=base)
tree_clf("tree_clf_bin_strings", xt, ["neg", "pos"], leaf_targets=[1], positive=True)
tree_clf("tree_clf_v3_as_tensor_f64", xt.astype(np.float64), [0, 1, 2], ml=3, as_tensor=True,
         base=[0.1, 0.0, -0.1])
tree_clf("tree_clf_double", xt.astype(np.float64), [0, 1, 2], post="SOFTMAX")
tree_clf("tree_clf_1d", xt[0], [0, 1, 2], oracle="ref: onnxruntime reads [F] as F rows")


# TreeEnsemble (ai.onnx.ml 5): the same forests in the leaf-list encoding
def tree5(name, x, n_targets, agg=1, post=0, dtype=np.float32, member=False, oracle_attrs=None):
    splits, modes, feat, tn, fn, tl, fl, roots, lt, lw, members = ([] for _ in range(11))
    for t in range(3):
        roots.append(len(splits))
        base = len(splits)
        for i in range(3):  # a root and two children, four leaves
            splits.append(float(rng.randn() * 0.5))
            m = 6 if member and i == 0 else int(rng.randint(6))
            modes.append(m)
            if m == 6:
                members.extend([float(v) for v in rng.randint(-2, 3, 3)])
                members.append(float("nan"))
            feat.append(int(rng.randint(x.shape[-1])))
        tn += [base + 1, len(lw), len(lw) + 2]
        fn += [base + 2, len(lw) + 1, len(lw) + 3]
        tl += [0, 1, 1]
        fl += [0, 1, 1]
        for _ in range(4):
            lt.append(int(rng.randint(n_targets)))
            lw.append(float(rng.randn()))
    attrs = dict(n_targets=n_targets, aggregate_function=agg, post_transform=post,
                 nodes_splits=tens(np.array(splits, dtype)),
                 nodes_modes=tens(np.array(modes, np.uint8)), nodes_featureids=feat,
                 nodes_truenodeids=tn, nodes_falsenodeids=fn, nodes_trueleafs=tl,
                 nodes_falseleafs=fl, tree_roots=roots, leaf_targetids=lt,
                 leaf_weights=tens(np.array(lw, dtype)))
    if members:
        attrs["membership_values"] = tens(np.array(members, dtype))
    case(name, "TreeEnsemble", {"X": x.astype(dtype)}, [("Y", ELEM[dtype])], ml=5,
         oracle_attrs=oracle_attrs, **attrs)


for agg in range(4):
    tree5(f"tree5_agg{agg}", xt, 2, agg=agg)
for post in range(5):
    # onnxruntime 1.32 reads post_transform 1 as LOGISTIC and 2 as SOFTMAX (the spec: 1
    # SOFTMAX, 2 LOGISTIC), and onnx.reference applies none: its copy gets the other code
    tree5(f"tree5_post{post}", xt, 3, post=post,
          oracle_attrs={"post_transform": 3 - post} if post in (1, 2) else None)
tree5("tree5_double", xt, 2, dtype=np.float64)
tree5("tree5_member", np.round(xt * 2), 2, member=True)


# ---- running -----------------------------------------------------------------------------
def reference(model, feeds, oracle):
    if oracle.startswith("ort on float"):  # the same values as float32
        feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
        m = onnx.ModelProto()
        m.CopyFrom(model)
        for i in m.graph.input:
            i.type.tensor_type.elem_type = TensorProto.FLOAT
        model, oracle = m, "ort"
    if oracle == "ort":
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return s.run(None, feeds)
    return ReferenceEvaluator(model).run(None, feeds)


def read_output(d, entry):
    if isinstance(entry, str) and entry.endswith(".json"):
        return json.load(open(os.path.join(d, entry)))
    return np.load(os.path.join(d, entry))


def same(got, ref, path):
    """None if got equals ref (onnxgrad's output as written by run), else why."""
    if isinstance(ref, list):  # a sequence of maps, written as JSON
        if not isinstance(got, list) or len(got) != len(ref):
            return f"{path}: a sequence of {len(ref)}, got {type(got).__name__}"
        for i, (g, r) in enumerate(zip(got, ref)):
            if sorted(map(str, r)) != sorted(g):
                return f"{path}[{i}]: keys {sorted(g)}, expected {sorted(map(str, r))}"
            for k, v in r.items():
                if not np.isclose(g[str(k)], v, rtol=1e-5, atol=1e-6):
                    return f"{path}[{i}][{k}]: {g[str(k)]}, expected {v}"
        return None
    ref = np.asarray(ref)
    if ref.dtype == object:
        ref = ref.astype(str)
    if got.shape != ref.shape:
        return f"{path}: shape {got.shape}, expected {ref.shape}"
    if ref.dtype.kind == "U":
        if got.dtype.kind != "U" or not (got == ref).all():
            return f"{path}: {got.ravel()[:6]}, expected {ref.ravel()[:6]}"
        return None
    if got.dtype != ref.dtype:
        return f"{path}: dtype {got.dtype}, expected {ref.dtype}"
    if ref.dtype.kind == "f":
        if not np.allclose(got, ref, rtol=1e-5, atol=1e-6, equal_nan=True):
            bad = np.argmax(np.abs(np.nan_to_num(got - ref)))
            return (f"{path}: largest difference at {bad}: {got.ravel()[bad]}, expected "
                    f"{ref.ravel()[bad]}")
        return None
    if not (got == ref).all():
        return f"{path}: {got.ravel()[:8]}, expected {ref.ravel()[:8]}"
    return None


def main():
    failed, passed, by_ref = [], 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds, oracle, oracle_model, loose_dtype in cases:
            if ONLY and ONLY not in name:
                continue
            d = os.path.join(tmp, name)
            os.makedirs(d)
            onnx.save(model, os.path.join(d, "model.onnx"))
            args = [CLI, "run", os.path.join(d, "model.onnx"), "--threads", "1", "-o",
                    os.path.join(d, "out")]
            for k, v in feeds.items():
                np.save(os.path.join(d, k + ".npy"), v)
                args += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
            if oracle.startswith("error: "):  # onnxgrad must refuse it, saying why
                r = subprocess.run(args, capture_output=True, text=True)
                if r.returncode != 1 or oracle[7:] not in r.stderr:
                    failed.append(f"{name}: expected a refusal ('{oracle[7:]}'), got exit "
                                  f"{r.returncode}: {r.stderr.strip()}")
                else:
                    passed += 1
                continue
            try:
                ref = reference(oracle_model, feeds, oracle)
            except Exception as e:  # a case the oracle cannot run is a broken test
                failed.append(f"{name}: the oracle ({oracle}) failed: {e}")
                continue
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(f"{name}: onnxgrad run failed: {r.stderr.strip()}")
                continue
            manifest = json.load(open(os.path.join(d, "out", "manifest.json")))
            why = None
            for o, rv in zip(model.graph.output, ref):
                got = read_output(os.path.join(d, "out"), manifest[o.name])
                if loose_dtype and isinstance(rv, np.ndarray):
                    rv = rv.astype(got.dtype)
                why = why or same(got, rv, o.name)
            if why:
                failed.append(f"{name}: {why}")
            else:
                passed += 1
                if oracle != "ort":
                    by_ref.append(f"{name}: {oracle}")
                if VERBOSE:
                    print("ok", name)
    for f in failed:
        print("FAIL", f)
    for r in by_ref:
        print("oracle other than onnxruntime:", r)
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
