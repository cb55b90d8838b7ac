"""Gradient cases of the ai.onnx.ml ops: Scaler (per feature, one value, [F] input),
Normalizer (MAX with ties, L1, L2, a zero row), ArrayFeatureExtractor (repeated and 2-D
indices, [F] and 3-D inputs), Imputer (NaN and a value replaced), FeatureVectorizer (columns
padded and cut), and the linear models, differentiated through their lowering to MatMul/Add
(src/grad/ml.c): input gradients and the coefficients and intercepts as trained weights, for
every post transform, one and several targets, multi-class and binary classifiers, int and
string labels.  The piecewise-constant ops (Binarizer) give no gradient."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
import onnxruntime as ort

ort.set_default_logger_severity(3)

from helpers import rand


def ml_model(nodes, inputs, outputs, ml=1, opset=17, consts=None):
    """Like helpers.model, with the ai.onnx.ml domain imported; outputs are float [?...]."""
    consts = consts or {}
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid("ai.onnx.ml", ml)])
    m.ir_version = 8
    # the checker wants output shapes: those of a run of onnxruntime (else of onnx's
    # reference evaluator, for what onnxruntime lacks)
    try:
        ref = ort.InferenceSession(m.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, inputs)
    except Exception:  # noqa: BLE001
        ref = ReferenceEvaluator(m).run(None, inputs)
    for o, r in zip(m.graph.output, ref):
        o.CopyFrom(helper.make_tensor_value_info(o.name, o.type.tensor_type.elem_type,
                                                 list(np.shape(r))))
    return m


def ml(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain="ai.onnx.ml", **attrs)


F = TensorProto.FLOAT
POSTS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def cases():
    out = []
    rng = np.random.default_rng(11)
    x = rand(5, 4)
    # ---- Scaler
    for tag, off, sc, xin in (("per_feature", [0.1, -0.2, 0.3, 0.0], [2.0, 0.5, 1.5, -1.0], x),
                              ("one", [0.25], [3.0], x),
                              ("1d", [0.1, 0.2, 0.3, 0.4], [1.0, 2.0, -3.0, 4.0], x[0])):
        out.append(("ml_scaler_" + tag,
                    ml_model([ml("Scaler", ["x"], ["y"], offset=off, scale=sc)], {"x": xin},
                             [("y", F)]), {"x": xin}))
    # ---- Normalizer: signed and positive rows (a zero row and ties for MAX are corners
    # where it is not differentiable: finite differences cannot check them)
    xn = rand(5, 4)
    xp = rand(4, 3, low=0.2, high=1.0)
    for norm in ("MAX", "L1", "L2"):
        for tag, xin in (("", xn), ("_pos", xp), ("_1d", xp[0])):
            out.append(("ml_normalizer_%s%s" % (norm, tag),
                        ml_model([ml("Normalizer", ["x"], ["y"], norm=norm)], {"x": xin},
                                 [("y", F)]), {"x": xin}))
    # ---- ArrayFeatureExtractor: repeated indices, 2-D indices, [F] and 3-D inputs
    x3 = rand(2, 3, 5)
    for tag, xin, idx in (("2d", x, np.array([3, 0, 3], np.int64)),
                          ("2d_idx2d", x, np.array([[1, 1], [2, 0]], np.int64)),
                          ("1d", x[0], np.array([2, 2, 1], np.int64)),
                          ("3d", x3, np.array([4, 0], np.int64))):
        out.append(("ml_afe_" + tag,
                    ml_model([ml("ArrayFeatureExtractor", ["x", "i"], ["y"])], {"x": xin},
                             [("y", F)], consts={"i": idx}), {"x": xin}))
        # below opset 11 (skl2onnx's 9): the one-hot of the indices against a run-time
        # iota of the last dim (NonZero over ones), not Range
        out.append(("ml_afe_%s_v9" % tag,
                    ml_model([ml("ArrayFeatureExtractor", ["x", "i"], ["y"])], {"x": xin},
                             [("y", F)], opset=9, consts={"i": idx}), {"x": xin}))
    # ---- Imputer: NaN replaced (a replaced number is a jump: finite differences cannot
    # check it)
    xm = rand(5, 4)
    xm[0, 1] = xm[3, 2] = np.nan
    out.append(("ml_imputer_nan", ml_model(
        [ml("Imputer", ["x"], ["y"], imputed_value_floats=[1.0, 2.0, 3.0, 4.0],
            replaced_value_float=float("nan"))], {"x": xm}, [("y", F)]), {"x": xm}))
    # ---- FeatureVectorizer: padded (more dims than columns) and cut (fewer)
    a, bb = rand(3, 2), rand(3, 4)
    out.append(("ml_featvec", ml_model(
        [ml("FeatureVectorizer", ["a", "b"], ["y"], inputdimensions=[3, 2])],
        {"a": a, "b": bb}, [("y", F)]), {"a": a, "b": bb}))
    # ---- Binarizer then Scaler: the Scaler's input gets nothing through the Binarizer, a
    # Mul beside it does
    out.append(("ml_binarizer_none", ml_model(
        [ml("Binarizer", ["x"], ["t"], threshold=0.1), ml("Scaler", ["t"], ["u"], offset=[0.0],
                                                          scale=[2.0]),
         helper.make_node("Mul", ["x", "u"], ["y"])], {"x": x}, [("y", F)]), {"x": x}))

    # ---- linear models (through their lowering): X and the coefficients and intercepts
    def coefs(n):
        return rng.uniform(-1, 1, n).astype(np.float32).tolist()

    xs = rand(6, 4, low=0.0, high=0.5)  # scores in (0, 1) where PROBIT needs them
    for t in (1, 3):
        for post in POSTS:
            if t == 1 and post not in ("NONE", "PROBIT"):
                continue  # onnxruntime applies only PROBIT to one column (ml_params.h)
            c = (np.asarray(coefs(4 * t)) * (0.3 if post == "PROBIT" else 1.0)).tolist()
            inter = [0.3] * t if post == "PROBIT" else coefs(t)
            out.append(("ml_linreg_t%d_%s" % (t, post), ml_model(
                [ml("LinearRegressor", ["x"], ["y"], coefficients=c, intercepts=inter, targets=t,
                    post_transform=post)], {"x": xs}, [("y", F)]), {"x": xs}))
    out.append(("ml_linreg_no_intercepts", ml_model(
        [ml("LinearRegressor", ["x"], ["y"], coefficients=coefs(8), targets=2)], {"x": x},
        [("y", F)]), {"x": x}))
    out.append(("ml_linreg_1d", ml_model(
        [ml("LinearRegressor", ["x"], ["y"], coefficients=coefs(4), intercepts=[0.5])],
        {"x": x[0]}, [("y", F)]), {"x": x[0]}))
    for post in POSTS[:4]:
        for labels in ([3, 5, 9], ["a", "b", "c"]):
            lab = ({"classlabels_strings": labels} if isinstance(labels[0], str)
                   else {"classlabels_ints": labels})
            yt = TensorProto.STRING if isinstance(labels[0], str) else TensorProto.INT64
            tag = "s" if isinstance(labels[0], str) else "i"
            out.append(("ml_linclf_3_%s_%s" % (post, tag), ml_model(
                [ml("LinearClassifier", ["x"], ["y", "z"], coefficients=coefs(12),
                    intercepts=coefs(3), post_transform=post, **lab)],
                {"x": x}, [("y", yt), ("z", F)]), {"x": x}))
    for post in ("NONE", "LOGISTIC"):
        out.append(("ml_linclf_binary_" + post, ml_model(
            [ml("LinearClassifier", ["x"], ["y", "z"], coefficients=coefs(4), intercepts=[0.1],
                post_transform=post, classlabels_ints=[0, 1])],
            {"x": x}, [("y", TensorProto.INT64), ("z", F)]), {"x": x}))
    # a pipeline as skl2onnx writes it: Scaler, LinearClassifier, Normalizer
    out.append(("ml_pipeline", ml_model(
        [ml("Scaler", ["x"], ["s"], offset=[0.1, 0.2, 0.3, 0.4], scale=[1.5, 0.5, 2.0, 1.0]),
         ml("LinearClassifier", ["s"], ["y", "p"], coefficients=coefs(12), intercepts=coefs(3),
            post_transform="LOGISTIC", classlabels_ints=[0, 1, 2], multi_class=0),
         ml("Normalizer", ["p"], ["z"], norm="L1")],
        {"x": x}, [("y", TensorProto.INT64), ("z", F)]), {"x": x}))
    return out
