/*
 * og_backend_test: runs ONNX backend test cases (a folder with model.onnx and
 * test_data_set_N/{input,output}_M.pb) through onnxgrad and compares the outputs at the
 * ONNX loader's tolerances (rtol 1e-3, atol 1e-7; exact for integers and bools).
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

static og_status read_pb(const char *path, og_tensor **t)
{
    void *data = NULL;
    size_t size = 0;
    og_status st = og_read_file(path, (size_t)1 << 31, NULL, &data, &size);
    if (st) return st;
    st = og_onnx_parse_tensor(data, size, NULL, t, NULL);
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

static int compare(const char *what, const og_tensor *got, const og_tensor *want, char *msg,
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
    bool is_float = og_tensor_dtype(got) == OG_FLOAT || og_tensor_dtype(got) == OG_DOUBLE ||
                    og_tensor_dtype(got) == OG_FLOAT16 || og_tensor_dtype(got) == OG_BFLOAT16;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < og_tensor_numel(got); i++) {
        double x = elem(got, i), y = elem(want, i);
        bool ok;
        if (is_float) {
            if (isnan(y))
                ok = isnan(x);
            else if (isinf(y))
                ok = x == y;
            else
                ok = fabs(x - y) <= 1e-7 + 1e-3 * fabs(y);
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
            if (read_pb(path, &inputs[i])) {
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
            if (read_pb(path, &expect[j])) {
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
