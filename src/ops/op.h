/*
 * op.h: what an op means, independent of any device.  Internal header.
 *
 * Each op family lives in one file src/ops/<family>.c that exports a table of og_op_def:
 * the op's name and domain, its since-versions, how many inputs and outputs it takes, how
 * its attributes are parsed once into a typed struct (parse), and how its output types and
 * shapes follow from its inputs (infer); src/ops/registry.c joins the families.  How a
 * device computes an op is in src/kernels/<device>/<family>.c and its gradient rule in
 * src/grad/<family>.c, under the same family name; both find the op by (domain, name).
 *
 * infer runs twice in an op's life:
 *  - at load time (static inference): dims may be symbolic or unknown, rank may be unknown
 *    (-1), dtype may be OG_UNDEFINED, and in[i].value is set only for constants
 *    (initializers, Constant outputs).  infer must then fill what it can and leave the
 *    rest unknown (rank -1, dims OG_DIM_UNKNOWN, dtype OG_UNDEFINED), never fail because
 *    something is unknown.
 *  - at run time, before the kernel: every dim is known and in[i].value points to the
 *    input tensor, so ops whose output shape depends on input data (Reshape, Slice,
 *    Range, ...) read it there.  infer must fail with a message for bad shapes or values.
 */
#ifndef OG_OP_H
#define OG_OP_H

#include <stddef.h>

#include "ir/ir.h"

/* Type and shape of one value, as far as known.  A value that is not a tensor has kind
 * SEQUENCE, MAP or OPTIONAL, dtype OG_UNDEFINED and rank -1; at load time `type` gives its
 * full type (interned in the graph: og_op_type_wrap), at run time only `kind` is needed (and
 * `value` is the value itself). */
typedef struct og_vinfo {
    og_dtype dtype;            /* OG_UNDEFINED: unknown, or an omitted optional input */
    int rank;                  /* -1: unknown */
    int64_t dims[OG_MAX_RANK]; /* >= 0 known; < 0 symbolic/unknown (see ir.h) */
    const og_tensor *value;    /* the data, when known */
    og_kind kind;              /* OG_KIND_TENSOR unless set */
    const og_type *type;       /* kind != TENSOR, at load time: the type, NULL if unknown */
} og_vinfo;

/* What parse and infer see of the node. */
typedef struct og_op_ctx {
    const og_node *node;
    const og_allocator *alloc;
    og_graph *graph; /* set during static inference (for symbols); NULL at run time */
    bool runtime;    /* true at run time: every shape is known */
} og_op_ctx;

/* Parse node attributes into a struct allocated with og_malloc(c->alloc, ...), validate
 * them, store it in *params (may stay NULL).  Errors name the attribute (og_op_error). */
typedef og_status (*og_parse_fn)(const og_op_ctx *c, void **params);
typedef void (*og_free_params_fn)(const og_allocator *a, void *params);
/* Fill out[0..n_out-1] from in[0..n_in-1] (n_in == node->n_in: omitted optional inputs have
 * dtype OG_UNDEFINED and rank -1).  out[] arrives cleared to unknown.  Outputs the node
 * omits may be filled anyway; they are ignored. */
typedef og_status (*og_infer_fn)(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 int n_out);

enum {
    /* Output 0 is a view of input 0's data with another shape (Reshape, Squeeze, ...): the
     * executor makes the view, and calls the kernel only if one is registered (for the
     * other outputs). */
    OG_OP_ALIAS_INPUT0 = 1u << 0,
    /* The op takes values that are not tensors (sequences, maps, optionals) on any input and
     * checks their kinds itself; without it, such an input fails at load and at run time. */
    OG_OP_ANY_KIND = 1u << 1,
    /* Control flow (If, Loop, Scan): the executor runs the op itself, running its subgraphs;
     * no device kernel is bound and infer runs at load only. */
    OG_OP_CONTROL = 1u << 2,
    /* Output 0 equals input 0's data whenever it has as many elements (a reduction over
     * axes of size 1 or over none: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd):
     * at run time the executor then makes it a view of input 0, as for OG_OP_ALIAS_INPUT0,
     * and calls no kernel.  Gradients that undo a broadcast decided at run time end in such
     * a ReduceSum, which mostly sums nothing. */
    OG_OP_ALIAS_SAME_SIZE = 1u << 3,
};

/* Give the graph inputs of subgraph `sub` (an attribute of c->node, whose op has
 * OG_OP_CONTROL) the types the op passes them, from the node's own inputs in[0..n_in-1],
 * where the subgraph does not declare them; called before the subgraph is resolved
 * (src/ops/control.c). */
og_status og_control_subgraph_inputs(const og_op_ctx *c, const og_vinfo *in, int n_in,
                                     og_graph *sub);
/* After resolving subgraph `sub` from those types: whether the loop-carried values (Loop)
 * or states (Scan) come out of the body with the shape they went in with; where not, the
 * body's input loses what changes (a dim, or the rank), and false says the subgraph must be
 * resolved again. */
bool og_control_subgraph_settle(const og_op_ctx *c, og_graph *sub);

typedef struct og_op_def {
    const char *name;
    const char *domain; /* "" for ai.onnx */
    const int *since;   /* since-versions, ascending, 0-terminated: OG_SINCE(Op) */
    int min_in, max_in; /* max_in -1: variadic */
    int min_out, max_out;
    og_parse_fn parse;             /* NULL: no attributes to parse */
    og_free_params_fn free_params; /* NULL: og_free */
    og_infer_fn infer;
    unsigned flags;
} og_op_def;

/* Since-versions of every op of ai.onnx up to opset 21, generated by
 * scripts/gen_since.py from the onnx package's schemas: og_since_<Op>[]. */
#include "ops/since.inc"
#define OG_SINCE(op) og_since_##op

/* A family's table is `const og_op_def og_ops_<family>[] = {..., {0}};` (zero-terminated),
 * listed in OG_FAMILIES in src/ops/registry.c. */

/* Look up an op by domain and name (NULL if unknown). */
const og_op_def *og_op_find(const char *domain, const char *name);
/* Resolve since-version: highest entry of def->since <= opset, or 0 if none. */
int og_op_resolve_version(const og_op_def *def, int64_t opset);

/* Resolve every node's op definition and since-version, parse its attributes, and run
 * static type and shape inference (src/ops/resolve.c).  strict: fail on ops onnxgrad does
 * not know; when false, unknown ops are left with op == NULL and unknown outputs.  Whether
 * a device has a kernel for each node is the executor's question, asked when a session is
 * created.  Errors: OG_ERR_UNSUPPORTED (unknown op, naming op, domain, opset), errors of
 * parsing and inference. */
og_status og_graph_resolve(og_graph *g, bool strict);

/* ---- errors ---------------------------------------------------------------------- */

/* og_error with "node 'n' (Op, opset V): " before the message. */
og_status og_op_error(const og_op_ctx *c, og_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- attributes ------------------------------------------------------------------ */

int64_t og_attr_int(const og_node *n, const char *name, int64_t dflt);
float og_attr_float(const og_node *n, const char *name, float dflt);
/* NULL if absent. */
const char *og_attr_string(const og_node *n, const char *name, const char *dflt);
/* Pointer to the ints (count in *count), NULL if absent. */
const int64_t *og_attr_ints(const og_node *n, const char *name, int *count);
const float *og_attr_floats(const og_node *n, const char *name, int *count);
const og_tensor *og_attr_tensor(const og_node *n, const char *name);
/* The auto_pad attribute of Conv, ConvTranspose and the pools: 0 NOTSET (or absent or
 * empty), 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID; anything else fails naming the value. */
og_status og_attr_auto_pad(const og_op_ctx *c, int *mode);
/* Check that an attribute present has the expected type (OG_ERR_MODEL otherwise). */
og_status og_attr_check_type(const og_op_ctx *c, const char *name, og_attr_type type);

/* ---- table-driven attribute parsing ---------------------------------------------- */

/* Most parse functions check a few attributes' types, allocate the params and copy ints
 * into them: a row of fields per op says which, and og_parse_attr_table does it.  What a row
 * cannot say (a dtype, a permutation, a mode) is its `finish`. */
typedef enum og_field_kind {
    OG_FIELD_CHECK, /* type (and presence) only: `finish` reads it */
    OG_FIELD_I64,   /* int64_t at off: the value, or dflt */
    OG_FIELD_BOOL,  /* bool at off: value != 0, or dflt */
    OG_FIELD_INTS,  /* int64_t[cap] at off, the count an int at n_off (-1 when absent); cap 0:
                     * the struct's flexible array member, allocated to fit */
} og_field_kind;

typedef struct og_attr_field {
    const char *name;
    og_attr_type type; /* checked at every version, when present */
    og_field_kind kind;
    size_t off;
    int64_t dflt;
    int from, until;   /* read at since-versions in [from, until); until 0: no end */
    int required_from; /* 0: optional; else absent where read at since >= this fails */
    size_t n_off;
    int cap; /* more entries fail with OG_ERR_UNSUPPORTED */
} og_attr_field;

#define OG_ATTR_FIELDS_MAX 3

typedef struct og_attr_table {
    const char *op;
    size_t size;                                           /* of the params struct */
    og_status (*finish)(const og_op_ctx *c, void *params); /* NULL: nothing more */
    og_attr_field f[OG_ATTR_FIELDS_MAX];                   /* up to the first without name */
} og_attr_table;

/* Rows of fields; what follows the last named argument is the rest of its value, then other
 * members by name: OG_AT_I64("start", og_shape_params, start, 0, .from = 15). */
#define OG_AT_CHECK(nm, ...)                                                                       \
    {                                                                                              \
        .name = nm, .kind = OG_FIELD_CHECK, .type = __VA_ARGS__                                    \
    }
#define OG_AT_I64(nm, T, m, ...)                                                                   \
    {                                                                                              \
        .name = nm, .type = OG_ATTR_INT, .kind = OG_FIELD_I64, .off = offsetof(T, m),              \
        .dflt = __VA_ARGS__                                                                        \
    }
#define OG_AT_BOOL(nm, T, m, ...)                                                                  \
    {                                                                                              \
        .name = nm, .type = OG_ATTR_INT, .kind = OG_FIELD_BOOL, .off = offsetof(T, m),             \
        .dflt = __VA_ARGS__                                                                        \
    }
#define OG_AT_INTS(nm, T, m, n, ...)                                                               \
    {                                                                                              \
        .name = nm, .type = OG_ATTR_INTS, .kind = OG_FIELD_INTS, .off = offsetof(T, m),            \
        .n_off = offsetof(T, n), .cap = __VA_ARGS__                                                \
    }

/* Parse the node by the row of `tables` (ended by a row without op) named by its op_type:
 * type checks, then the params (calloc'd, into *params), the fields, finish. */
og_status og_parse_attr_table(const og_op_ctx *c, const og_attr_table *tables, void **params);

/* ---- inference helpers ----------------------------------------------------------- */

void og_vinfo_unknown(og_vinfo *v);
/* Make v a value of `kind` (not a tensor) of type t (may be NULL: unknown). */
void og_vinfo_set_kind(og_vinfo *v, og_kind kind, const og_type *t);
/* Types for static inference, interned in the graph; NULL at run time (c->graph NULL) and
 * when out of memory (the resolver then records the kind alone). */
const og_type *og_op_type_tensor(const og_op_ctx *c, og_dtype dtype, int rank, const int64_t *dims);
const og_type *og_op_type_wrap(const og_op_ctx *c, og_kind kind, og_dtype key, const og_type *elem);
/* Copy dtype/rank/dims (not value). */
void og_vinfo_copy_shape(og_vinfo *dst, const og_vinfo *src);
void og_vinfo_set(og_vinfo *v, og_dtype dtype, int rank, const int64_t *dims);
/* True if rank is known and every dim is known. */
bool og_vinfo_static(const og_vinfo *v);
/* Element count of a static vinfo (checked: a declared shape may multiply past int64), -1
 * when not static or past int64. */
int64_t og_vinfo_numel(const og_vinfo *v);
/* numpy broadcasting of in[0..n-1] shapes into out (dtype not touched).  Unknown rank in
 * any input gives unknown rank.  At run time, incompatible dims fail with a message. */
og_status og_infer_broadcast(const og_op_ctx *c, const og_vinfo *const *in, int n, og_vinfo *out);
/* Normalize axis in [-rank, rank) to [0, rank); error names the attribute/input. */
og_status og_norm_axis(const og_op_ctx *c, int64_t axis, int rank, const char *what, int *out);
/* Require in[i].dtype to be one of `allowed` (a 0-terminated list) when known. */
og_status og_check_dtype(const og_op_ctx *c, const og_vinfo *in, int i, const og_dtype *allowed);
/* Require equal dtypes among in[i] for the given indices (when known). */
og_status og_check_same_dtype(const og_op_ctx *c, const og_vinfo *in, int i, int j);
/* Read the int64/int32 values of a 1-D (or scalar) input tensor into a new array
 * (og_malloc'd, freed by caller); *n gets the count. */
og_status og_read_int_list(const og_op_ctx *c, const og_tensor *t, const char *what, int64_t **vals,
                           int *n);

/* `allowed` (0-terminated, at most 20 types) plus float16 from since-version f16_from and
 * bfloat16 from bf16_from (0: never) of this node's op, written to types (room for 23):
 * the list of a schema whose 16-bit floats the kernels compute through float32 copies.
 * Returns types. */
const og_dtype *og_types_with_half(const og_op_ctx *c, const og_dtype *allowed, int f16_from,
                                   int bf16_from, og_dtype types[23]);

/* Allowed-dtype lists that most ops use. */
extern const og_dtype og_types_float[];   /* float, double */
extern const og_dtype og_types_numeric[]; /* float, double, int32, int64 */
extern const og_dtype og_types_all[];     /* numeric and bool */
extern const og_dtype og_types_all_int[]; /* numeric and every other integer type */

#endif /* OG_OP_H */
