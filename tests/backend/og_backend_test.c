/*
 * og_backend_test: runs ONNX backend test cases (a folder with model.onnx and
 * test_data_set_N/{input,output}_M.pb) through onnxgrad and compares the outputs at the
 * ONNX loader's tolerances (rtol 1e-3, atol 1e-7; exact for integers, bools and strings;
 * float16 and bfloat16 values also pass within one ulp of their type at the expected value).
 * A .pb file holds a TensorProto, or for an input or output declared as a sequence or an
 * optional, onnx-data.proto's SequenceProto or OptionalProto, which the generated protobuf
 * code (onnx.proto only) lacks: those are read here from the wire format.
 *
 * usage: og_backend_test [-v] CASE_DIR...
 * exit: 0 when every case passed or was skipped (at least one passed), 77 when every case
 * was skipped (its model uses an op outside onnxgrad's list), 1 when one failed.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"
#include "onnx/onnx_io.h"
#include "onnxgrad.h"

/* The ops onnxgrad promises to run: the foundation's list, then the extras onnxgrad also
 * implements (their cases must pass too). */
/* clang-format off */
static const char *const supported_ops[] = {
    "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast",
    "Ceil", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "ConvTranspose", "Cos",
    "CumSum", "Div", "Dropout", "Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten",
    "Floor", "Gather", "GatherElements", "GatherND", "Gemm", "GlobalAveragePool",
    "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid", "Identity",
    "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log",
    "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mod", "Mul", "Neg",
    "NegativeLogLikelihoodLoss", "Not", "OneHot", "Or", "Pad", "Pow", "PRelu", "Range",
    "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
    "ReduceSum", "ReduceSumSquare", "Relu", "Reshape", "Resize", "ScatterElements", "ScatterND",
    "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Size", "Slice", "Softmax",
    "SoftmaxCrossEntropyLoss", "Softplus", "Softsign", "Split", "Sqrt", "Squeeze", "Sub", "Sum",
    "Tanh", "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Where", "Xor",
    /* extras */
    "Tan", "Atan", "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Round", "IsNaN",
    "IsInf", "HardSwish", "Mish", "ThresholdedRelu", "Celu", "Shrink", "Gelu", "Scatter",
    "Upsample", "ReduceLogSum", "NonZero", "Gradient", "Momentum", "Adagrad", "Adam",
    /* issue 12: nn ops */
    "CastLike", "DepthToSpace", "SpaceToDepth", "CenterCropPad", "EyeLike", "Compress",
    "ReverseSequence", "Hardmax", "GroupNormalization", "LpNormalization",
    "MeanVarianceNormalization", "LRN", "LpPool", "MaxUnpool", "Col2Im", "Det", "GridSample",
    "AffineGrid", "RoiAlign", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
    /* issue 12: the rest of the op set */
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift", "SequenceEmpty",
    "SequenceConstruct", "SequenceAt", "SequenceInsert", "SequenceErase", "SequenceLength",
    "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalHasElement",
    "OptionalGetElement", "DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow",
    "MelWeightMatrix", "StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch",
    "TfIdfVectorizer", "Unique", "NonMaxSuppression", "MatMulInteger", "QLinearMatMul",
    "ConvInteger", "QLinearConv", "RandomUniform", "RandomNormal", "RandomUniformLike",
    "RandomNormalLike", "Bernoulli", "Multinomial", "DeformConv",
    "GlobalLpPool", "MaxRoiPool", "ImageDecoder", "SequenceMap",
    /* issue 12: recurrent ops and control flow */
    "RNN", "GRU", "LSTM", "If", "Loop", "Scan",
    NULL};
/* ai.onnx.ml */
static const char *const supported_ml_ops[] = {
    "LinearRegressor", "LinearClassifier", "ArrayFeatureExtractor", "ZipMap", "Normalizer",
    "Scaler", "Binarizer", "Imputer", "OneHotEncoder", "LabelEncoder", "FeatureVectorizer",
    "CategoryMapper", "TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble", NULL};
/* clang-format on */

enum { PASS = 0, FAIL = 1, SKIP = 77 };

static bool is_supported(const char *domain, const char *op)
{
    if (strcmp(domain, "ai.onnx.ml") == 0) {
        for (int i = 0; supported_ml_ops[i]; i++)
            if (strcmp(supported_ml_ops[i], op) == 0) return true;
        return false;
    }
    if (domain[0] && strcmp(domain, "ai.onnx") != 0 &&
        strcmp(domain, "ai.onnx.preview.training") != 0)
        return false;
    for (int i = 0; supported_ops[i]; i++)
        if (strcmp(supported_ops[i], op) == 0) return true;
    return false;
}

/* Whether every node of gp and of its subgraphs uses an op of the list; else msg names one. */
static bool graph_supported(const Onnx__GraphProto *gp, char *msg, size_t n, int depth)
{
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *dom = np->domain ? np->domain : "";
        if (!is_supported(dom, np->op_type ? np->op_type : "")) {
            snprintf(msg, n, "uses %s%s%s%s, outside onnxgrad's op list", dom, dom[0] ? "." : "",
                     np->op_type ? np->op_type : "?", depth ? " in a subgraph" : "");
            return false;
        }
        for (size_t k = 0; k < np->n_attribute && depth < 64; k++)
            if (np->attribute[k]->g && !graph_supported(np->attribute[k]->g, msg, n, depth + 1))
                return false;
    }
    return true;
}

/* ---- SequenceProto and OptionalProto, from the protobuf wire format ------------------ */

/* onnx-data.proto: SequenceProto {name = 1; elem_type = 2; tensor_values = 3; ...
 * sequence_values = 5; map_values = 6; optional_values = 7}, OptionalProto {name = 1;
 * elem_type = 2; tensor_value = 3; sparse_tensor_value = 4; sequence_value = 5; map_value = 6;
 * optional_value = 7}; elem_type: 1 tensor, 3 sequence, 5 optional (2 sparse, 4 map: not
 * read). */
typedef struct wire {
    const uint8_t *p, *end;
} wire;

static bool wire_varint(wire *w, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && w->p < w->end; shift += 7) {
        uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The next field: its number, wire type, and for length-delimited ones the bytes. */
static bool wire_field(wire *w, int *field, int *type, uint64_t *v, wire *sub)
{
    uint64_t key;
    if (!wire_varint(w, &key)) return false;
    *field = (int)(key >> 3);
    *type = (int)(key & 7);
    switch (*type) {
    case 0: return wire_varint(w, v);
    case 1:
    case 5: {
        size_t n = *type == 1 ? 8 : 4;
        if ((size_t)(w->end - w->p) < n) return false;
        w->p += n;
        return true;
    }
    case 2:
        if (!wire_varint(w, v) || *v > (uint64_t)(w->end - w->p)) return false;
        sub->p = w->p;
        sub->end = w->p + *v;
        w->p += *v;
        return true;
    default: return false;
    }
}

static og_status parse_value(const uint8_t *data, size_t size, og_kind kind, int depth,
                             og_tensor **out);

/* One element of a container: a TensorProto (3), SequenceProto (5) or OptionalProto (7). */
static og_status parse_item(int field, wire sub, int depth, og_tensor **item)
{
    size_t n = (size_t)(sub.end - sub.p);
    if (field == 3) return og_onnx_parse_tensor(sub.p, n, NULL, item, NULL);
    if (field == 5) return parse_value(sub.p, n, OG_KIND_SEQUENCE, depth + 1, item);
    if (field == 7) return parse_value(sub.p, n, OG_KIND_OPTIONAL, depth + 1, item);
    return OG_ERR_UNSUPPORTED;
}

static og_status parse_value(const uint8_t *data, size_t size, og_kind kind, int depth,
                             og_tensor **out)
{
    *out = NULL;
    if (kind == OG_KIND_TENSOR) return og_onnx_parse_tensor(data, size, NULL, out, NULL);
    if (depth > OG_MAX_NESTING || (kind != OG_KIND_SEQUENCE && kind != OG_KIND_OPTIONAL))
        return og_error(OG_ERR_UNSUPPORTED, "cannot read a %s here", og_kind_name(kind));
    og_tensor *c = NULL;
    og_status st = og_value_new(kind, NULL, &c);
    wire w = {data, data + size}, sub = {0};
    uint64_t elem_type = 0, v;
    int field, type;
    while (!st && w.p < w.end) {
        if (!wire_field(&w, &field, &type, &v, &sub)) {
            st = og_error(OG_ERR_PARSE, "malformed %s", og_kind_name(kind));
            break;
        }
        if (field == 2 && type == 0) elem_type = v;
        if (type != 2 || field < 3) continue;
        og_tensor *item = NULL;
        if ((st = parse_item(field, sub, depth, &item))) {
            if (st == OG_ERR_UNSUPPORTED)
                og_error(st, "%s field %d (sparse tensors and maps) is not read",
                         og_kind_name(kind), field);
            break;
        }
        st = og_value_append(c, item);
    }
    (void)elem_type; /* an optional without an item is empty, whatever it says */
    if (st) {
        og_tensor_free(c);
        return st;
    }
    *out = c;
    return OG_OK;
}

static og_status read_value(const char *path, og_kind kind, og_tensor **t)
{
    void *data = NULL;
    size_t size = 0;
    og_status st = og_read_file(path, (size_t)1 << 31, NULL, &data, &size);
    if (st) return st;
    st = parse_value(data, size, kind, 0, t);
    free(data);
    return st;
}

static bool file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Element i as double (ints exactly up to 2^53, 16-bit floats decoded). */
static double elem(const og_tensor *t, int64_t i) { return og_tensor_get_f64(t, i); }

/* One unit in the last place at y of a 16-bit float type (0 for another): float16 and
 * bfloat16 results may differ from the expected ones by one rounding of their last bit
 * (rtol 1e-3 is about one float16 ulp, a quarter of a bfloat16 one). */
static double ulp16(og_dtype t, double y)
{
    int mant = t == OG_FLOAT16 ? 10 : t == OG_BFLOAT16 ? 7 : -1;
    int emin = t == OG_FLOAT16 ? -14 : -126;
    if (mant < 0) return 0;
    int e;
    frexp(fabs(y), &e); /* |y| in [2^(e-1), 2^e) */
    e = e - 1 < emin ? emin : e - 1;
    return ldexp(1.0, e - mant);
}

static int compare_tensor(const char *what, const og_tensor *got, const og_tensor *want, char *msg,
                          size_t n)
{
    if (og_tensor_dtype(got) != og_tensor_dtype(want)) {
        snprintf(msg, n, "%s: dtype %s, expected %s", what, og_dtype_name(og_tensor_dtype(got)),
                 og_dtype_name(og_tensor_dtype(want)));
        return FAIL;
    }
    int r = og_tensor_rank(got);
    bool shape_ok = r == og_tensor_rank(want);
    for (int d = 0; shape_ok && d < r; d++)
        shape_ok = og_tensor_dims(got)[d] == og_tensor_dims(want)[d];
    if (!shape_ok) {
        char a[128] = "[", b[128] = "[";
        for (int d = 0; d < og_tensor_rank(got); d++)
            snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "," : "",
                     (long long)og_tensor_dims(got)[d]);
        for (int d = 0; d < og_tensor_rank(want); d++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? "," : "",
                     (long long)og_tensor_dims(want)[d]);
        snprintf(msg, n, "%s: shape %s], expected %s]", what, a, b);
        return FAIL;
    }
    if (og_tensor_dtype(got) == OG_STRING) {
        for (int64_t i = 0; i < og_tensor_numel(got); i++)
            if (strcmp(og_tensor_string(got, i), og_tensor_string(want, i)) != 0) {
                snprintf(msg, n, "%s: element %lld is '%.200s', expected '%.200s'", what,
                         (long long)i, og_tensor_string(got, i), og_tensor_string(want, i));
                return FAIL;
            }
        return PASS;
    }
    bool is_float =
        og_tensor_dtype(got) == OG_FLOAT || og_tensor_dtype(got) == OG_DOUBLE ||
        og_tensor_dtype(got) == OG_FLOAT16 || og_tensor_dtype(got) == OG_BFLOAT16 ||
        (og_tensor_dtype(got) >= OG_FLOAT8E4M3FN && og_tensor_dtype(got) <= OG_FLOAT8E5M2FNUZ);
    int64_t bad = 0, first = -1;
    if (og_tensor_dtype(got) == OG_STRING) {
        for (int64_t i = 0; i < og_tensor_numel(got); i++)
            if (strcmp(og_tensor_string(got, i), og_tensor_string(want, i)) != 0) {
                snprintf(msg, n, "%s: string %lld is '%.200s', expected '%.200s'", what,
                         (long long)i, og_tensor_string(got, i), og_tensor_string(want, i));
                return FAIL;
            }
        return PASS;
    }
    for (int64_t i = 0; i < og_tensor_numel(got); i++) {
        double x = elem(got, i), y = elem(want, i);
        bool ok;
        if (is_float) {
            if (isnan(y))
                ok = isnan(x);
            else if (isinf(y))
                ok = x == y;
            else
                ok = fabs(x - y) <= 1e-7 + 1e-3 * fabs(y) ||
                     fabs(x - y) <= ulp16(og_tensor_dtype(got), y);
        } else {
            ok = x == y;
        }
        if (!ok) {
            if (first < 0) first = i;
            bad++;
        }
    }
    if (bad) {
        snprintf(msg, n, "%s: %lld of %lld values differ; first at %lld: got %.9g, expected %.9g",
                 what, (long long)bad, (long long)og_tensor_numel(got), (long long)first,
                 elem(got, first), elem(want, first));
        return FAIL;
    }
    return PASS;
}

/* Values of any kind: kinds, lengths, then items or elements. */
static int compare(const char *what, const og_tensor *got, const og_tensor *want, char *msg,
                   size_t n)
{
    og_kind k = og_tensor_kind(want);
    if (og_tensor_kind(got) != k) {
        snprintf(msg, n, "%s: a %s, expected a %s", what, og_kind_name(og_tensor_kind(got)),
                 og_kind_name(k));
        return FAIL;
    }
    if (k == OG_KIND_TENSOR) return compare_tensor(what, got, want, msg, n);
    if (k == OG_KIND_OPTIONAL) {
        const og_tensor *a = og_optional_value(got), *b = og_optional_value(want);
        if (!a != !b) {
            snprintf(msg, n, "%s: an optional %s a value, expected %s", what,
                     a ? "with" : "without", b ? "one" : "none");
            return FAIL;
        }
        return a ? compare(what, a, b, msg, n) : PASS;
    }
    if (k != OG_KIND_SEQUENCE) {
        snprintf(msg, n, "%s: cannot compare a %s", what, og_kind_name(k));
        return FAIL;
    }
    if (og_sequence_length(got) != og_sequence_length(want)) {
        snprintf(msg, n, "%s: a sequence of %lld items, expected %lld", what,
                 (long long)og_sequence_length(got), (long long)og_sequence_length(want));
        return FAIL;
    }
    for (int64_t i = 0; i < og_sequence_length(want); i++) {
        char item[320];
        snprintf(item, sizeof item, "%.250s, item %lld", what, (long long)i);
        int r = compare(item, og_sequence_item(got, i), og_sequence_item(want, i), msg, n);
        if (r != PASS) return r;
    }
    return PASS;
}

static int run_case(const char *dir, bool verbose, char *msg, size_t n)
{
    char path[4096];
    int result = PASS;
    og_model *m = NULL;
    og_session *s = NULL;
    void *bytes = NULL;
    size_t size = 0;
    og_tensor *inputs[64] = {0}, *outputs[64] = {0}, *expect[64] = {0};
    const char *names[64];
    int n_in = 0, n_out = 0;

    snprintf(path, sizeof path, "%s/model.onnx", dir);
    /* Which ops does the case use?  Read straight from the protobuf, so that a model
     * onnxgrad refuses for another reason (sequence types, say) is still classified. */
    if (og_read_file(path, (size_t)1 << 31, NULL, &bytes, &size) == OG_OK) {
        Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, bytes);
        if (mp && mp->graph && !graph_supported(mp->graph, msg, n, 0)) result = SKIP;
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        if (result == SKIP) goto done;
    }
    if (og_model_load_file(path, NULL, &m) || og_session_create(m, NULL, &s)) {
        snprintf(msg, n, "load: %s", og_last_error());
        result = FAIL;
        goto done;
    }
    n_out = og_model_output_count(m);
    if (n_out > 64 || og_model_input_count(m) > 64) {
        snprintf(msg, n, "too many inputs or outputs");
        result = FAIL;
        goto done;
    }
    for (int ds = 0;; ds++) {
        snprintf(path, sizeof path, "%s/test_data_set_%d", dir, ds);
        if (!file_exists(path)) break;
        n_in = 0;
        for (int i = 0; i < og_model_input_count(m); i++) {
            snprintf(path, sizeof path, "%s/test_data_set_%d/input_%d.pb", dir, ds, i);
            if (!file_exists(path)) break;
            og_kind kind = OG_KIND_TENSOR;
            og_model_input_type(m, i, &kind, NULL, 0);
            if (read_value(path, kind, &inputs[i])) {
                snprintf(msg, n, "reading %.200s: %.1500s", path, og_last_error());
                result = FAIL;
                goto done;
            }
            names[i] = og_model_input_name(m, i);
            n_in++;
        }
        if (og_session_run(s, names, (const og_tensor *const *)inputs, n_in, outputs)) {
            snprintf(msg, n, "run (data set %d): %s", ds, og_last_error());
            result = FAIL;
            goto done;
        }
        for (int j = 0; j < n_out; j++) {
            snprintf(path, sizeof path, "%s/test_data_set_%d/output_%d.pb", dir, ds, j);
            if (!file_exists(path)) continue;
            og_kind kind = OG_KIND_TENSOR;
            og_model_output_type(m, j, &kind, NULL, 0);
            if (read_value(path, kind, &expect[j])) {
                snprintf(msg, n, "reading %.200s: %.1500s", path, og_last_error());
                result = FAIL;
                goto done;
            }
            char what[256];
            snprintf(what, sizeof what, "data set %d, output '%s'", ds, og_model_output_name(m, j));
            if (compare(what, outputs[j], expect[j], msg, n) != PASS) {
                result = FAIL;
                goto done;
            }
        }
        for (int i = 0; i < 64; i++) {
            og_tensor_free(inputs[i]);
            og_tensor_free(outputs[i]);
            og_tensor_free(expect[i]);
            inputs[i] = outputs[i] = expect[i] = NULL;
        }
        if (verbose) fprintf(stderr, "  data set %d ok\n", ds);
    }
done:
    for (int i = 0; i < 64; i++) {
        og_tensor_free(inputs[i]);
        og_tensor_free(outputs[i]);
        og_tensor_free(expect[i]);
    }
    og_session_free(s);
    og_model_free(m);
    free(bytes);
    return result;
}

int main(int argc, char **argv)
{
    bool verbose = false;
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            verbose = true;
            continue;
        }
        char msg[2048] = "";
        const char *name = strrchr(argv[i], '/');
        name = name && name[1] ? name + 1 : argv[i];
        int r = run_case(argv[i], verbose, msg, sizeof msg);
        if (r == PASS) {
            passed++;
            printf("PASS %s\n", name);
        } else if (r == SKIP) {
            skipped++;
            printf("SKIP %s: %s\n", name, msg);
        } else {
            failed++;
            printf("FAIL %s: %s\n", name, msg);
        }
    }
    if (argc > 2) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed) return 1;
    return passed ? 0 : 77;
}
