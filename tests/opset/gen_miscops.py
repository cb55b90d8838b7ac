"""Per-opset cases of the ops of issue 12's "rest of the op set" part: the bit ops, the
sequence and optional ops, the signal ops, the string ops and TfIdfVectorizer, Unique,
NonMaxSuppression, the integer products, DeformConv, GlobalLpPool and MaxRoiPool.  Called by
gen_cases.py with itself as `g` (its case, vers, act, rand, ... helpers).  The random ops have
no case here: their draws are onnxgrad's own (tests/unit/test_random.c checks them).

The expected values come from onnxruntime unless a case says ref_only (the ONNX reference
evaluator): DFT and STFT (onnxruntime's float32 FFT leaves ~1e-6 where the transform is exactly
0, beyond the runner's absolute tolerance; numpy's is exact there) and StringSplit (onnxruntime
splits whitespace on ' ' only and gives "" no piece; the spec's "whitespace characters" and the
reference, Python's str.split, split on every whitespace and give "" one empty piece with a
delimiter)."""

import numpy as np
from onnx import TensorProto as TP

U8, U16, U32, U64 = np.uint8, np.uint16, np.uint32, np.uint64
I8, I16 = np.int8, np.int16
INTS = (U8, U16, U32, U64, I8, I16, np.int32, np.int64)


def ints(g, shape, dt):
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return g.RNG.integers(lo, hi + 1, size=shape).astype(dt)


def strs(*v):
    return np.array(v, dtype=object)


def gen_bits(g):
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        for v in g.vers(op):
            for dt in INTS:
                name = np.dtype(dt).name
                g.case(op, v, name, [("a", ints(g, (2, 3, 4), dt)), ("b", ints(g, (4,), dt))])
    for v in g.vers("BitwiseNot"):
        for dt in INTS:
            g.case("BitwiseNot", v, np.dtype(dt).name, [("x", ints(g, (3, 4), dt))])
    for v in g.vers("BitShift"):
        for dt in (U8, U16, U32, U64):
            bits = np.dtype(dt).itemsize * 8
            x = ints(g, (3, 4), dt)
            s = g.RNG.integers(0, bits, size=(4,)).astype(dt)
            for d in ("LEFT", "RIGHT"):
                g.case("BitShift", v, "%s_%s" % (np.dtype(dt).name, d.lower()), [("x", x), ("s", s)],
                       {"direction": d})


def gen_narrow_ints(g):
    """The binary ops and Clip on the integer widths beyond int32/int64 (from the versions
    whose spec lists them), IsNaN/IsInf and Where on 2-byte values, Equal on strings (19)."""
    since = {"Add": 14, "Sub": 14, "Mul": 14, "Div": 14, "Max": 12, "Min": 12, "Mod": 10,
             "Less": 13, "Greater": 13, "Equal": 11}
    for op, first in since.items():
        for v in g.vers(op):
            if g.act(op, v) < first:
                continue
            for dt in (I8, I16, U8, U16, U32, U64):
                a = ints(g, (3, 4), dt)
                b = ints(g, (4,), dt)
                if op in ("Div", "Mod"):
                    b = np.where(b == 0, 1, b).astype(dt)
                g.case(op, v, "narrow_" + np.dtype(dt).name, [("a", a), ("b", b)])
    for v in g.vers("Clip"):  # Clip-12 takes every numeric type
        if g.act("Clip", v) < 12:
            continue
        for dt in (I8, I16, U8, U16, U32, U64):
            x = ints(g, (3, 4), dt)
            lo, hi = np.sort(ints(g, (2,), dt))
            g.case("Clip", v, "narrow_" + np.dtype(dt).name,
                   [("x", x), ("lo", np.array(lo, dt)), ("hi", np.array(hi, dt))])
            g.case("Clip", v, "narrow_max_" + np.dtype(dt).name, [("x", x), None, ("hi", np.array(hi, dt))])
    hx = np.array([np.nan, np.inf, -np.inf, 65504, 6e-8, 0, -1.5], np.float16)
    for v in g.vers("IsNaN"):  # float16 from IsNaN-9
        g.case("IsNaN", v, "f16", [("x", hx)])
    for v in g.vers("IsInf"):
        if g.act("IsInf", v) >= 20:  # float16 from IsInf-20
            g.case("IsInf", v, "f16", [("x", hx)])
            g.case("IsInf", v, "f16_neg", [("x", hx)], {"detect_positive": 0})
    for v in g.vers("Where"):
        if g.act("Where", v) >= 16:
            g.case("Where", v, "f16", [("c", g.rand((2, 3), g.BOOL)), ("x", g.rand((2, 3)).astype(np.float16)),
                                       ("z", g.rand((3,)).astype(np.float16))])
    for v in g.vers("Equal"):
        if g.act("Equal", v) >= 19:
            g.case("Equal", v, "strings", [("a", strs("a", "bc", "", "d").reshape(2, 2)), ("b", strs("bc", ""))])


def gen_sequences(g):
    items = [g.rand((2, 3)), g.rand((1, 3)), g.rand((4, 3))]
    same = [g.rand((2, 3)) for _ in range(3)]
    for v in g.vers("SequenceConstruct"):
        g.case("SequenceConstruct", v, "three", [("a", items[0]), ("b", items[1]), ("c", items[2])])
        g.case("SequenceConstruct", v, "one_i64", [("a", g.rand((2,), g.I64, -9, 9))])
    for v in g.vers("SequenceAt"):
        for p in (0, 2, -1, -3):
            g.case("SequenceAt", v, "p%s" % str(p).replace("-", "m"), [("s", items), ("p", g.i64(p).reshape(()))])
        g.case("SequenceAt", v, "i32pos", [("s", items), ("p", np.array(1, np.int32))])
    for v in g.vers("SequenceInsert"):
        t = g.rand((5, 3))
        g.case("SequenceInsert", v, "back", [("s", items), ("t", t)])
        for p in (0, 3, -1):
            g.case("SequenceInsert", v, "p%s" % str(p).replace("-", "m"),
                   [("s", items), ("t", t), ("p", g.i64(p).reshape(()))])
    for v in g.vers("SequenceErase"):
        g.case("SequenceErase", v, "last", [("s", items)])
        for p in (0, -2):
            g.case("SequenceErase", v, "p%s" % str(p).replace("-", "m"), [("s", items), ("p", g.i64(p).reshape(()))])
    for v in g.vers("SequenceLength"):
        g.case("SequenceLength", v, "three", [("s", items)])
    for v in g.vers("SequenceEmpty"):
        g.case("SequenceEmpty", v, "default", [])
        g.case("SequenceEmpty", v, "i64", [], {"dtype": TP.INT64})
    x = g.rand((3, 5, 2))
    for v in g.vers("SplitToSequence"):
        g.case("SplitToSequence", v, "default", [("x", x)])
        g.case("SplitToSequence", v, "axis1_nokeep", [("x", x)], {"axis": 1, "keepdims": 0})
        g.case("SplitToSequence", v, "scalar_split", [("x", x), ("s", g.i64(2).reshape(()))], {"axis": 1})
        g.case("SplitToSequence", v, "list_split", [("x", x), ("s", g.i64(1, 4))], {"axis": -2})
    for v in g.vers("ConcatFromSequence"):
        g.case("ConcatFromSequence", v, "axis0", [("s", items)], {"axis": 0})
        g.case("ConcatFromSequence", v, "stack1", [("s", same)], {"axis": 1, "new_axis": 1})
        g.case("ConcatFromSequence", v, "stack_last", [("s", same)], {"axis": -1, "new_axis": 1})
    gen_sequence_map(g, items, same)


def gen_sequence_map(g, items, same):
    """SequenceMap: a tensor input passed whole to every item, two sequences walked together
    with two outputs (one of them int64 shapes), and a body reading the top graph's k."""
    import onnx.helper as oh

    def vi(name, dt=TP.FLOAT, shape=None):
        return oh.make_tensor_value_info(name, dt, shape)

    add = oh.make_graph([oh.make_node("Add", ["x", "w"], ["y"])], "body", [vi("x"), vi("w")],
                        [vi("y")])
    two = oh.make_graph([oh.make_node("Mul", ["a", "b"], ["p"]), oh.make_node("Shape", ["a"], ["sh"])],
                        "body", [vi("a"), vi("b")], [vi("p"), vi("sh", TP.INT64, [2])])
    outer = oh.make_graph([oh.make_node("Sub", ["x", "k"], ["y"])], "body", [vi("x")], [vi("y")])
    for v in g.vers("SequenceMap"):
        g.case("SequenceMap", v, "tensor_whole", [("s", items), ("w", g.rand((3,)))], {"body": add})
        g.case("SequenceMap", v, "two_seqs", [("s", same), ("t", [g.rand((2, 3)) for _ in same])],
               {"body": two}, n_out=2)
        g.case("SequenceMap", v, "outer", [("s", items), ("k", g.rand((1, 3)))], {"body": outer},
               node_inputs=1)


def gen_signal(g):
    xr = g.rand((2, 6, 3, 1))
    xc = g.rand((2, 5, 3, 2))
    x8 = g.rand((1, 8, 1))
    for v in g.vers("DFT"):
        a20 = g.act("DFT", v) >= 20

        def dft(name, x, attrs, length=None, axis=None):
            ins = [("x", x), ("L", g.i64(length).reshape(())) if length is not None else None]
            a = dict(attrs)
            if axis is not None:
                if a20:
                    ins.append(("axis", g.i64(axis).reshape(())))
                else:
                    a["axis"] = axis
            while ins and ins[-1] is None:
                ins.pop()
            g.case("DFT", v, name, ins, a, ref_only=True)

        dft("real", xr, {}, axis=1)
        dft("real_onesided", xr, {"onesided": 1}, axis=1)
        dft("real_inverse", xr, {"inverse": 1}, axis=1)
        dft("real_len8", xr, {}, 8, axis=1)
        dft("real_len4_onesided", xr, {"onesided": 1}, 4, axis=1)
        dft("complex_axis2", xc, {}, axis=2)
        dft("complex_inverse_len7", xc, {"inverse": 1}, 7, axis=1)
        dft("fft8", x8, {}, axis=1)
        dft("fft8_inverse", x8.repeat(2, axis=2), {"inverse": 1}, axis=1)
        if a20:
            dft("default_axis", xr, {})
    sig = g.rand((2, 16, 1))
    win = g.rand((8,), lo=0.2, hi=1.0)
    for v in g.vers("STFT"):
        g.case("STFT", v, "window", [("x", sig), ("step", g.i64(4).reshape(())), ("w", win)], {"onesided": 1}, ref_only=True)
        g.case("STFT", v, "frame_length", [("x", sig), ("step", g.i64(3).reshape(())), None,
                                           ("F", g.i64(6).reshape(()))], {"onesided": 1}, ref_only=True)
        g.case("STFT", v, "full", [("x", sig), ("step", g.i64(5).reshape(())), ("w", win)], {"onesided": 0}, ref_only=True)
        g.case("STFT", v, "complex", [("x", g.rand((1, 12, 2))), ("step", g.i64(2).reshape(())),
                                      ("w", win[:4].copy())], {"onesided": 0}, ref_only=True)
    for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        for v in g.vers(op):
            g.case(op, v, "periodic", [("n", g.i64(10).reshape(()))])
            g.case(op, v, "symmetric_f64", [("n", np.array(7, np.int32))], {"periodic": 0, "output_datatype": TP.DOUBLE})
    for v in g.vers("MelWeightMatrix"):
        ins = [("m", g.i64(8).reshape(())), ("n", g.i64(64).reshape(())), ("r", g.i64(16000).reshape(())),
               ("lo", np.array(100.0, np.float32)), ("hi", np.array(7000.0, np.float32))]
        g.case("MelWeightMatrix", v, "f32", ins)
        g.case("MelWeightMatrix", v, "f64", ins, {"output_datatype": TP.DOUBLE})


def gen_strings(g):
    # ASCII: for other letters the reference strips accents (NFKD) and onnxruntime maps case
    # through a locale; tests/unit/test_string.c checks onnxgrad's Unicode case mapping
    days = strs("Monday", "tuesday", "WEDNESDAY", "x-Ray", "monday")
    for v in g.vers("StringNormalizer"):
        g.case("StringNormalizer", v, "lower_insensitive", [("x", days)],
               {"case_change_action": "LOWER", "stopwords": ["monday"]})
        g.case("StringNormalizer", v, "upper_sensitive", [("x", days.reshape(1, 5))],
               {"case_change_action": "UPPER", "is_case_sensitive": 1, "stopwords": ["monday"]})
        g.case("StringNormalizer", v, "none", [("x", days)])
    for v in g.vers("StringConcat"):
        g.case("StringConcat", v, "bcast", [("a", strs("a", "bc", "").reshape(3, 1)), ("b", strs("x", "yz"))])
    for v in g.vers("StringSplit"):
        x = strs("a,b,,c", "", "no comma", ",lead")
        g.case("StringSplit", v, "comma", [("x", x)], {"delimiter": ","}, n_out=2, ref_only=True)
        g.case("StringSplit", v, "comma_max1", [("x", x)], {"delimiter": ",", "maxsplit": 1}, n_out=2,
               ref_only=True)
        g.case("StringSplit", v, "spaces", [("x", strs(" a  b ", "\tc d\ne", "").reshape(1, 3))], n_out=2,
               ref_only=True)
    for v in g.vers("RegexFullMatch"):
        x = strs("abc123", "ABC", "a.b", "", "12-34")
        for tag, pat in (("word_digits", r"[a-z]+\d+"), ("alt", r"(ABC|a\.b)"),
                         ("class", r"[\d-]{3,}"), ("lazy", r".*?\d")):
            g.case("RegexFullMatch", v, tag, [("x", x)], {"pattern": pat})
    for v in g.vers("TfIdfVectorizer"):
        xi = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int64)
        base = {"max_gram_length": 2, "min_gram_length": 1, "max_skip_count": 1,
                "ngram_counts": [0, 4], "ngram_indexes": [0, 1, 2, 3, 4, 5, 6],
                "pool_int64s": [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]}
        for mode in ("TF", "IDF", "TFIDF"):
            a = dict(base, mode=mode)
            if mode != "TF":
                a["weights"] = [0.5, 1.5, 2.0, 1.0, 0.25, 3.0, 1.0]
            g.case("TfIdfVectorizer", v, mode.lower(), [("x", xi)], a)
        g.case("TfIdfVectorizer", v, "i32_1d", [("x", xi[1].astype(np.int32))], dict(base, mode="TF"))
        xs = strs("a", "b", "a", "c", "a", "b")
        g.case("TfIdfVectorizer", v, "strings", [("x", xs)],
               {"max_gram_length": 2, "min_gram_length": 1, "max_skip_count": 2, "mode": "TF",
                "ngram_counts": [0, 2], "ngram_indexes": [1, 0, 2], "pool_strings": ["a", "b", "a", "b"]})


def gen_select(g):
    x = np.array([[2, 1, 1], [3, 2, 1], [2, 1, 1]], np.int64)
    for v in g.vers("Unique"):
        g.case("Unique", v, "flat", [("x", x)], n_out=4)
        g.case("Unique", v, "unsorted", [("x", x)], {"sorted": 0}, n_out=4)
        g.case("Unique", v, "axis0", [("x", x)], {"axis": 0}, n_out=4)
        g.case("Unique", v, "axis1_f32", [("x", x.astype(np.float32))], {"axis": -1}, n_out=4)
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.8, 0.3, 0.2, 0.9, 0.4]]], np.float32)
    for v in g.vers("NonMaxSuppression"):
        g.case("NonMaxSuppression", v, "iou", [("b", boxes), ("s", scores), ("m", g.i64(3)),
                                               ("iou", np.array([0.5], np.float32))])
        g.case("NonMaxSuppression", v, "score_thr", [("b", boxes), ("s", scores), ("m", g.i64(2)),
                                                     ("iou", np.array([0.5], np.float32)),
                                                     ("st", np.array([0.35], np.float32))])
        cb = boxes.copy()
        cb[..., :2] += 0.5
        g.case("NonMaxSuppression", v, "center", [("b", cb), ("s", scores), ("m", g.i64(5)),
                                                  ("iou", np.array([0.3], np.float32))], {"center_point_box": 1})


def matmulinteger_oracle(f):
    """Exact int32 results: onnxruntime's u8 x s8 kernels on CPUs without VNNI (AVX2 pairs
    summed in int16, as vpmaddubsw does) saturate where the spec does not."""
    a = f["a"].astype(np.int64) - (f["az"].astype(np.int64) if "az" in f else 0)
    b = f["b"].astype(np.int64) - (f["bz"].astype(np.int64) if "bz" in f else 0)
    return [np.matmul(a, b).astype(np.int32)]


def qlinearconv_oracle(attrs):
    """QLinearConv (group 1, 2-D) as the spec defines it: the convolution of x - xz and
    w - wz (per output channel) in exact integers plus B, scaled by xs * ws / ys (float32),
    rounded half to even, plus yz, saturated to y's type; onnxruntime saturates its u8 x s8
    sums on CPUs without VNNI (see matmulinteger_oracle)."""
    def run(f):
        x = f["x"].astype(np.int64) - f["xz"].astype(np.int64)
        wz = f["wz"].astype(np.int64).reshape(-1, 1, 1, 1) if f["wz"].ndim else f["wz"].astype(np.int64)
        w = f["w"].astype(np.int64) - wz
        p, s = attrs.get("pads", [0, 0, 0, 0]), attrs.get("strides", [1, 1])
        x = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
        m, kh, kw = w.shape[0], w.shape[2], w.shape[3]
        ho, wo = (x.shape[2] - kh) // s[0] + 1, (x.shape[3] - kw) // s[1] + 1
        acc = np.zeros((x.shape[0], m, ho, wo), np.int64)
        for i in range(ho):
            for j in range(wo):
                win = x[:, :, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw]
                acc[:, :, i, j] = np.einsum("nckl,mckl->nm", win, w)
        if "B" in f:
            acc += f["B"].astype(np.int64).reshape(1, -1, 1, 1)
        sc = (f["xs"].astype(np.float32) * f["ws"].astype(np.float32) / f["ys"].astype(np.float32))
        y = np.rint(acc * sc.astype(np.float64).reshape(1, -1, 1, 1)) + int(f["yz"])
        info = np.iinfo(f["yz"].dtype)
        return [np.clip(y, info.min, info.max).astype(f["yz"].dtype)]
    return run


def gen_integer(g):
    a = ints(g, (2, 3, 4), U8)
    b = ints(g, (4, 5), I8)
    for v in g.vers("MatMulInteger"):
        g.case("MatMulInteger", v, "plain", [("a", a), ("b", b)], oracle=matmulinteger_oracle)
        g.case("MatMulInteger", v, "zero_points", [("a", a), ("b", b), ("az", np.array(128, U8)),
                                                   ("bz", np.array([1, -2, 0, 3, 5], I8))],
               oracle=matmulinteger_oracle)
    for v in g.vers("QLinearMatMul"):
        sc = np.array(0.02, np.float32)
        g.case("QLinearMatMul", v, "u8", [("a", a), ("as", sc), ("az", np.array(120, U8)),
                                          ("b", ints(g, (4, 5), U8)), ("bs", np.array(0.015, np.float32)),
                                          ("bz", np.array(130, U8)), ("ys", np.array(0.05, np.float32)),
                                          ("yz", np.array(128, U8))])
        g.case("QLinearMatMul", v, "i8_per_column", [("a", a[0].astype(np.int16).clip(-128, 127).astype(I8)),
                                                     ("as", sc), ("az", np.array(3, I8)), ("b", b),
                                                     ("bs", np.linspace(0.01, 0.03, 5).astype(np.float32)),
                                                     ("bz", np.zeros(5, I8)), ("ys", np.array(0.2, np.float32)),
                                                     ("yz", np.array(-5, I8))])
    x = ints(g, (1, 2, 5, 5), U8)
    w = ints(g, (4, 2, 3, 3), I8)
    for v in g.vers("ConvInteger"):
        g.case("ConvInteger", v, "pads", [("x", x), ("w", w), ("xz", np.array(100, U8))], {"pads": [1, 1, 1, 1]})
        g.case("ConvInteger", v, "stride_group", [("x", x), ("w", w[:, :1])], {"strides": [2, 2], "group": 2})
    for v in g.vers("QLinearConv"):
        g.case("QLinearConv", v, "per_channel_bias",
               [("x", x), ("xs", np.array(0.01, np.float32)), ("xz", np.array(110, U8)), ("w", w),
                ("ws", np.array([0.02, 0.01, 0.03, 0.015], np.float32)), ("wz", np.zeros(4, I8)),
                ("ys", np.array(0.08, np.float32)), ("yz", np.array(120, U8)),
                ("B", np.array([100, -200, 0, 50], np.int32))], {"pads": [1, 0, 1, 0], "strides": [1, 2]},
               oracle=qlinearconv_oracle({"pads": [1, 0, 1, 0], "strides": [1, 2]}))


def gen_pools(g):
    x = g.rand((2, 3, 5, 4))
    for v in g.vers("GlobalLpPool"):
        for p in (1, 2, 3):
            g.case("GlobalLpPool", v, "p%d" % p, [("x", x)], {"p": p})
    rois = np.array([[0, 0.5, 1.2, 3.7, 4.1], [1, 2, 0, 3, 2], [0, -1, -1, 10, 10]], np.float32)
    for v in g.vers("MaxRoiPool"):
        g.case("MaxRoiPool", v, "scale1", [("x", x), ("r", rois)], {"pooled_shape": [2, 3]})
        g.case("MaxRoiPool", v, "scale_half", [("x", x), ("r", rois * np.array([1, 2, 2, 2, 2], np.float32))],
               {"pooled_shape": [3, 2], "spatial_scale": 0.5})
    xd = g.rand((1, 2, 4, 4))
    wd = g.rand((2, 2, 2, 2))
    off = g.rand((1, 8, 3, 3), lo=-1.5, hi=1.5)
    for v in g.vers("DeformConv"):
        g.case("DeformConv", v, "offsets", [("x", xd), ("w", wd), ("o", off)])
        g.case("DeformConv", v, "mask_bias", [("x", xd), ("w", wd), ("o", off), ("b", g.rand((2,))),
                                              ("m", g.rand((1, 4, 3, 3), lo=0, hi=1))])


def generate(g):
    g.NP2TP.update({np.dtype(U16): TP.UINT16, np.dtype(U32): TP.UINT32, np.dtype(U64): TP.UINT64,
                    np.dtype(I16): TP.INT16, np.dtype(np.float16): TP.FLOAT16})
    gen_bits(g)
    gen_narrow_ints(g)
    gen_sequences(g)
    gen_signal(g)
    gen_strings(g)
    gen_select(g)
    gen_integer(g)
    gen_pools(g)
