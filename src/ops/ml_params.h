/*
 * ml_params.h: the parsed attributes of the ai.onnx.ml ops (src/ops/ml.c), shared with their
 * CPU kernels (src/kernels/cpu/ml.c, ml_tree.c) and gradient rules (src/grad/ml.c).
 * Internal header.
 *
 * Arrays point into the node's attributes (they live as long as the node) unless a comment
 * says the params own them.  Semantics follow onnxruntime where the spec is silent: each
 * struct says what it computes.
 */
#ifndef OG_ML_PARAMS_H
#define OG_ML_PARAMS_H

#include "ops/op.h"

/* post_transform of the linear and tree ops. */
typedef enum og_post {
    OG_POST_NONE = 0,
    OG_POST_SOFTMAX = 1,
    OG_POST_LOGISTIC = 2,
    OG_POST_SOFTMAX_ZERO = 3,
    OG_POST_PROBIT = 4
} og_post;

/* The ops whose spec fixes an output to tensor(float) give float64 instead when the model
 * already types that output float64 (a float64 copy of a model, og_model_convert_float64,
 * which `check` differentiates, types every float value so): out_double. */

/* LinearRegressor: Y[n, t] = post(sum_f X[n, f] W[t, f] + b[t]), W = coefficients as
 * [targets, F].  LinearClassifier: the same scores for T = len(intercepts) classes (T from
 * the coefficients and F when there are no intercepts), Y the label of the largest raw
 * score (T == 1, which needs two labels: labels[1] if score > 0, else labels[0]),
 * Z the transformed scores; T == 1 (binary) gives Z [N, 2] = [1 - p, p], p = s, or
 * logistic(s) for LOGISTIC, as onnxruntime does; with PROBIT, Z [N, 1] = probit(s)
 * (onnxruntime writes those N values packed into an [N, 2] output, the rest zeros).  post
 * for a single column (T == 1, regressor or classifier) is PROBIT or nothing, as
 * onnxruntime's scoring does. */
typedef struct og_linear_params {
    const float *coef;
    int64_t n_coef;
    const float *intercepts; /* NULL: none (a regressor ignores them unless there are T) */
    int64_t n_intercepts;
    int64_t targets; /* regressor: the attribute; classifier: T as above, or 0 */
    og_post post;
    bool classifier;
    bool string_labels;
    int64_t n_labels;
    const int64_t *labels_i; /* classlabels_ints */
    char *const *labels_s;   /* classlabels_strings */
    bool double_out;
} og_linear_params;

/* Normalizer: per row (rank 1 or 2), MAX y = x / max(x), L1 y = x / sum|x|, L2
 * y = x / sqrt(sum x^2); y = x where the divisor is 0. */
typedef enum og_norm_kind { OG_NORM_MAX = 0, OG_NORM_L1 = 1, OG_NORM_L2 = 2 } og_norm_kind;
typedef struct og_normalizer_params {
    og_norm_kind norm;
    bool double_out;
} og_normalizer_params;

/* Scaler: y = (x - offset[f]) * scale[f], offset and scale of length 1 or F (the last dim
 * of a rank-1 or rank-2 input). */
typedef struct og_scaler_params {
    const float *offset, *scale;
    int64_t n;
    bool double_out;
} og_scaler_params;

/* Binarizer: y = x > threshold ? 1 : 0 (same dtype); a NaN fails. */
typedef struct og_binarizer_params {
    float threshold;
} og_binarizer_params;

/* Imputer: elements equal to the replaced value (any NaN for a NaN replaced value) take
 * imputed[f] (one value, or one per feature of the last dim). */
typedef struct og_imputer_params {
    bool ints;
    const float *imp_f;
    const int64_t *imp_i;
    int64_t n_imp;
    float rep_f;
    int64_t rep_i;
} og_imputer_params;

/* OneHotEncoder: Y[..., c] = 1 where X equals category c (numbers cast to int64), an
 * unknown value all zeros (zeros != 0) or an error. */
typedef struct og_onehot_params {
    bool strings;
    const int64_t *cats_i;
    char *const *cats_s;
    int64_t n_cats;
    bool zeros;
    bool double_out;
} og_onehot_params;

/* LabelEncoder (1: classes_strings indexes; 2, 4: keys -> values) and CategoryMapper
 * (cats_strings <-> cats_int64s): element-wise lookups.  The keys and values are held as
 * tensors owned by the params (1-D, of the types the attributes give); `def` is the
 * default value, a scalar tensor of the values' type.  v1 and CategoryMapper pick the
 * direction from the input dtype at run time (string -> int64, int64 -> string). */
typedef struct og_lookup_params {
    og_tensor *keys, *values, *def;    /* keys -> values */
    og_tensor *rkeys, *rvalues, *rdef; /* the reverse direction (v1, CategoryMapper) */
    bool first_wins;                   /* a repeated key: the first (else the last) */
    bool nan_equal;                    /* a NaN key matches a NaN (version 4) */
} og_lookup_params;

/* FeatureVectorizer: the inputs' rows side by side, each input taking inputdimensions[i]
 * columns (zero-padded, or cut when it has more), as float. */
typedef struct og_featvec_params {
    const int64_t *dims;
    int n_dims;
    int64_t total;
    bool double_out;
} og_featvec_params;

/* ZipMap: one map per row, keys the class labels. */
typedef struct og_zipmap_params {
    bool strings;
    const int64_t *keys_i;
    char *const *keys_s;
    int64_t n_keys;
    bool double_out;
} og_zipmap_params;

/* Tree ensembles: see ml_tree.c.  Owned arrays. */
typedef enum og_tree_mode {
    OG_TREE_LEQ = 0,
    OG_TREE_LT = 1,
    OG_TREE_GTE = 2,
    OG_TREE_GT = 3,
    OG_TREE_EQ = 4,
    OG_TREE_NEQ = 5,
    OG_TREE_MEMBER = 6,
    OG_TREE_LEAF = 7
} og_tree_mode;

typedef enum og_tree_agg {
    OG_AGG_AVERAGE = 0,
    OG_AGG_SUM = 1,
    OG_AGG_MIN = 2,
    OG_AGG_MAX = 3
} og_tree_agg;

/* One node: a split (feature, threshold, mode, children as node indices, or leaves) or a
 * leaf (its weights are weights[w0 .. w0 + nw - 1]). */
typedef struct og_tree_node {
    int64_t feature;
    double value;
    int32_t mode;
    bool missing_true;
    int64_t t, f;       /* true / false child: node index */
    int64_t w0, nw;     /* leaf: its weights */
    int64_t set0, nset; /* BRANCH_MEMBER: members[set0 .. set0 + nset - 1] */
} og_tree_node;

typedef struct og_tree_weight {
    int64_t target;
    double weight;
} og_tree_weight;

typedef struct og_tree_params {
    int64_t n_nodes, n_trees, n_weights, n_targets;
    og_tree_node *nodes;
    int64_t *roots; /* per tree: its root node */
    og_tree_weight *weights;
    double *members;
    double *base; /* base_values (n_base entries), or NULL */
    int64_t n_base;
    int64_t max_feature; /* the largest feature a split reads (-1: none) */
    og_tree_agg agg;
    og_post post;
    bool classifier;
    bool string_labels;
    int64_t n_labels;
    const int64_t *labels_i;
    char *const *labels_s;
    /* classifier, onnxruntime's binary case: two classes, weights for one class only */
    bool binary_case, all_positive;
    bool acc_double;  /* sums in float64 (float64 thresholds or weights given), else float */
    bool out_x_dtype; /* TreeEnsemble (ai.onnx.ml 5): Y has X's dtype */
    bool double_out;
} og_tree_params;

/* Whether output j of the node is already typed float64 by the model (out_double). */
bool og_ml_declared_double(const og_op_ctx *c, int j);

/* post_transform attribute `name` (a string) into *out; OG_ERR_MODEL for an unknown one. */
og_status og_ml_post_transform(const og_op_ctx *c, const char *name, og_post *out);

/* The tree ensembles' entries in og_ops_ml (ml_tree.c). */
og_status og_ml_tree_parse(const og_op_ctx *c, void **params);
void og_ml_tree_free(const og_allocator *a, void *params);
og_status og_ml_tree_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out);

#endif /* OG_ML_PARAMS_H */
