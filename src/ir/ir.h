/*
 * ir.h: onnxgrad's graph, independent of protobuf.  Internal header.
 *
 * A graph is a list of values and a list of nodes that refer to values by index.  Every
 * string and array is allocated with the graph's allocator and freed by og_graph_free.
 * Nodes are kept in topological order once og_graph_finalize has run.
 */
#ifndef OG_IR_H
#define OG_IR_H

#include "core/core.h"

/* A symbolic dimension is stored as a negative number: -1 - symbol index into
 * og_graph.symbols; OG_DIM_UNKNOWN is an anonymous unknown dim. */
#define OG_DIM_UNKNOWN INT64_MIN
static inline bool og_dim_known(int64_t d) { return d >= 0; }

typedef enum og_attr_type {
    OG_ATTR_UNDEFINED = 0,
    OG_ATTR_FLOAT = 1,
    OG_ATTR_INT = 2,
    OG_ATTR_STRING = 3,
    OG_ATTR_TENSOR = 4,
    OG_ATTR_GRAPH = 5,
    OG_ATTR_FLOATS = 6,
    OG_ATTR_INTS = 7,
    OG_ATTR_STRINGS = 8,
    OG_ATTR_TENSORS = 9,
    OG_ATTR_GRAPHS = 10,
    OG_ATTR_SPARSE_TENSOR = 11,
    OG_ATTR_SPARSE_TENSORS = 12,
    OG_ATTR_TYPE_PROTO = 13,
    OG_ATTR_TYPE_PROTOS = 14
} og_attr_type;

typedef struct og_attr {
    char *name;
    og_attr_type type;
    char *doc;
    float f;
    int64_t i;
    char *s; /* bytes, NUL-terminated for convenience; s_len is the real length */
    size_t s_len;
    og_tensor *t;
    int n; /* count for FLOATS/INTS/STRINGS/TENSORS */
    float *floats;
    int64_t *ints;
    char **strings;
    og_tensor **tensors;
    /* A GRAPH attribute (the body of If, Loop, Scan): the subgraph, owned, whose parent is
     * the graph of the node holding the attribute.  Lists of graphs, sparse and type
     * attributes are kept as raw serialized bytes (raw) so that a model round-trips; no op
     * onnxgrad runs reads them. */
    struct og_graph *g;
    void *raw;
    size_t raw_len;
} og_attr;

/* The type of a value that is not a plain tensor (ONNX's TypeProto), and of what it holds:
 * a chain of containers ending in a tensor type.  seq(map(int64, tensor(float))) is a
 * SEQUENCE whose elem is a MAP (dtype: its key type) whose elem is a TENSOR (dtype FLOAT,
 * rank -1).  Types are interned by their graph (og_graph_type): equal types are one pointer,
 * owned by the graph and freed with it. */
typedef struct og_type {
    og_kind kind;
    og_dtype dtype;             /* tensor: element type; map: key type; else OG_UNDEFINED */
    int rank;                   /* tensor: -1 when unknown */
    int64_t dims[OG_MAX_RANK];  /* tensor: as og_value.dims (symbols of the owning graph) */
    const struct og_type *elem; /* sequence, optional: element type; map: value type; NULL:
                                   unknown */
    int depth;                  /* 0 for a tensor, else 1 + elem's (<= OG_MAX_NESTING) */
    int id;                     /* index in the owning graph's list */
} og_type;

typedef enum og_value_kind {
    OG_VALUE_INTERMEDIATE = 0,
    OG_VALUE_INPUT = 1,       /* graph input without initializer */
    OG_VALUE_INITIALIZER = 2, /* constant; may also be listed as a graph input */
    OG_VALUE_OUTER = 3,       /* in a subgraph: a value of an enclosing graph, read by name */
} og_value_kind;

typedef struct og_value {
    char *name;
    og_value_kind kind;
    bool is_graph_input; /* listed in graph.input (initializers may be, to be overridable) */
    bool is_graph_output;
    og_dtype dtype;            /* OG_UNDEFINED when unknown */
    int rank;                  /* -1 when unknown */
    int64_t dims[OG_MAX_RANK]; /* see OG_DIM_UNKNOWN and symbols */
    /* A sequence, map or optional: its type (owned by the graph); dtype is then OG_UNDEFINED
     * and rank -1.  NULL for a tensor (or a value of unknown type). */
    const og_type *type;
    bool has_value_info; /* declared in graph.value_info (kept on save) */
    /* declared (has_value_info) without a shape, or a subgraph input whose declared shape
     * the node's input contradicts: the shape it has is inferred, and resolution may forget
     * or widen it like an undeclared value's (forget_shapes, og_control_subgraph_settle) */
    bool shape_inferred;
    char *doc;
    og_tensor *init;        /* initializer data (kind == OG_VALUE_INITIALIZER) */
    const og_tensor *known; /* constant content known at load (init, Constant's tensor) */
    int producer;           /* node index or -1 */
    int n_consumers;
} og_value;

struct og_op_def;

typedef struct og_node {
    char *name;
    char *op_type;
    char *domain; /* "" for ai.onnx */
    char *doc;
    int n_in;
    int *in; /* value indices; -1 for an omitted optional input */
    int n_out;
    int *out; /* value indices; -1 for an omitted optional output */
    int n_attrs;
    og_attr *attrs;
    int since_version;          /* resolved: highest since-version of the op <= the model's opset */
    int opset;                  /* the model's opset for the node's domain */
    const struct og_op_def *op; /* NULL if unknown */
    void *params; /* parsed attributes, owned: freed with free_params (NULL: og_free) */
    void (*free_params)(const og_allocator *a, void *params); /* set with params */
    bool parsed; /* params hold this node's attributes (resolve parses once) */
    /* NodeProto.overload (IR 10): which overload of a model-local function the node calls;
     * NULL for none */
    char *overload;
    /* The last n_implicit entries of in[] are not the node's own inputs but the values of
     * this graph that its subgraphs read (their OG_VALUE_OUTER values, by name, in order of
     * first use): so every pass over inputs (ordering, liveness, pruning, gradients) sees
     * them.  og_graph_finalize computes them; the saver writes the first n_in − n_implicit
     * inputs only. */
    int n_implicit;
} og_node;

typedef struct og_opset {
    char *domain;
    int64_t version;
} og_opset;

typedef struct og_kv {
    char *key;
    char *value;
} og_kv;

/* Bytes owned by a graph (allocated with its allocator). */
typedef struct og_blob {
    void *data;
    size_t size;
} og_blob;

/* A model-local function (ModelProto.functions), kept as its packed FunctionProto so that a
 * model round-trips; onnxgrad runs the ops of its own domain with kernels and keeps the
 * functions that define them for other runtimes.  overload is "" for none. */
typedef struct og_function {
    char *domain, *name, *overload;
    og_blob proto;
} og_function;

typedef struct og_graph {
    const og_allocator *alloc;
    /* The nesting limit every pass over this graph's nested structures obeys: the loader's
     * og_load_options.max_depth (OG_DEFAULT_MAX_DEPTH for graphs built in memory).  The
     * loader refuses protobuf messages nested deeper, so a subgraph of an If, Loop or Scan
     * attribute sits at most max_depth / 3 graphs deep and a nested TypeProto at most
     * max_depth / 2 types deep; a pass that recurses into them (resolve, infer, run,
     * gradients, save) passes its depth down and fails with og_depth_error past
     * max_depth, or walks them with an explicit stack. */
    int max_depth;
    /* A subgraph's enclosing graph (the graph of the node holding it), NULL for a model's
     * main graph.  Opset imports, symbols and interned types are the root graph's: a
     * subgraph's own lists stay empty, and the functions below look them up at the root. */
    struct og_graph *parent;
    /* model-level */
    int64_t ir_version;
    char *producer_name, *producer_version, *model_domain, *model_doc;
    int64_t model_version;
    int n_opsets;
    og_opset *opsets;
    int n_metadata;
    og_kv *metadata;
    /* ModelProto.training_info, each entry kept as its packed TrainingInfoProto so that a
     * model round-trips (src/onnx/onnx_io.h reads and writes them) */
    int n_training_info;
    og_blob *training_info;
    int n_functions;
    og_function *functions;
    /* graph-level */
    char *name;
    char *doc;
    int n_values, cap_values;
    og_value *values;
    int n_nodes, cap_nodes;
    og_node *nodes;
    int n_inputs; /* graph.input order, initializers included when listed */
    int *inputs;
    int n_outputs;
    int *outputs;
    int n_inits, cap_inits; /* initializer order; cap_inits 0: the array holds n_inits */
    int *inits;
    int n_symbols, cap_symbols; /* cap_symbols 0: the array holds n_symbols */
    char **symbols;
    /* Name -> symbol index for og_graph_symbol, as value_index below (slots hold a symbol
     * index + 1); built when first needed and rebuilt when symbols were added past it
     * (n_indexed: the symbols it holds), so that a graph with a symbol per unknown dim of
     * each of its values (static inference's, ops/resolve.c) stays linear to load. */
    int *symbol_index;
    size_t symbol_index_cap;
    int n_indexed;
    int n_types, cap_types; /* interned types (og_graph_type), each allocated on its own */
    og_type **types;
    /* Name -> value index, so that og_graph_find_value takes constant time: open addressing
     * with linear probing, each slot a value index + 1 (0: empty), a power-of-two size at
     * least twice n_values.  og_graph_add_value, og_graph_rename_value and og_graph_clone
     * keep it (values are never removed). */
    int *value_index;
    size_t value_index_cap;
} og_graph;

og_graph *og_graph_new(const og_allocator *a);
/* OG_ERR_LIMIT with the shared message for a nesting past the limit: "<what> nests
 * <depth> levels deep, beyond the limit of <limit> (og_load_options.max_depth)". */
og_status og_depth_error(int depth, int limit, const char *what);
void og_graph_free(og_graph *g);
/* A new empty subgraph of parent (same allocator), NULL when out of memory. */
og_graph *og_graph_new_sub(og_graph *parent);
/* The main graph g belongs to (g itself for a main graph).  Subgraphs nest at most
 * OG_MAX_NESTING deep (onnxgrad.h; a main graph is at depth 0). */
og_graph *og_graph_root(const og_graph *g);

/* A deep copy of src in memory, every block allocated with `a` (NULL: the default
 * allocator), without the serialize-and-parse round trip.  Copied: the model fields
 * (ir_version, producer, domain, doc, model_version), opset imports, metadata, the
 * training_info blobs (bytes), the model-local functions (bytes), the graph name and doc, every
 * value in the same order and at the same index (name, doc, kind, graph input and output flags,
 * dtype, rank, dims, whether it has a value_info, its initializer tensor with its readonly flag),
 * the input, output and initializer lists, symbols (same indices, so symbolic dims keep their
 * meaning), and every node in the same order (name, op type, domain, doc, inputs, outputs,
 * overload, attributes with their strings, arrays, tensors and raw bytes).  Values no node or list
 * refers to any more are copied too: a clone saves to the same bytes as src. State: as finalized as
 * src (producers, consumer counts and node order are copied), not resolved: each node's op,
 * since-version, opset and parsed params are left unset (params are never shared), and `known` is
 * set for initializers only, so og_graph_resolve must run before inference or a session; dtypes and
 * shapes already inferred are kept. Errors: OG_ERR_NOMEM (nothing allocated is left behind), or
 * what og_tensor_clone says of an initializer or attribute tensor. */
og_status og_graph_clone(const og_graph *src, const og_allocator *a, og_graph **out);
/* Copy the graph-level part of src (values, nodes with their subgraphs, input, output and
 * initializer lists, name) into dst, a new empty graph (a subgraph, typically): types are
 * interned in dst's root.  Errors: OG_ERR_NOMEM, OG_ERR_INTERNAL (dst not empty). */
og_status og_graph_copy_into(const og_graph *src, og_graph *dst);
/* A main graph made of subgraph `sub`: its opsets and symbols (same indices) are sub's
 * root's, its values and nodes sub's, and its outer values become graph inputs after sub's
 * own (so that it can be resolved, differentiated or run alone).  Not finalized. */
og_status og_graph_extract(const og_graph *sub, og_graph **out);
/* Drop the graph's TrainingInfoProtos. */
void og_graph_clear_training_info(og_graph *g);

/* The index of the function (domain, name, overload) among g's, -1 if none (overload NULL
 * and "" are the same). */
int og_graph_find_function(const og_graph *g, const char *domain, const char *name,
                           const char *overload);
/* Add a model-local function: a copy of its packed FunctionProto (size bytes at proto).
 * Errors: OG_ERR_MODEL (one of that identity exists), OG_ERR_NOMEM. */
og_status og_graph_add_function(og_graph *g, const char *domain, const char *name,
                                const char *overload, const void *proto, size_t size);

/* Value by name (-1 if none; the first one if a name was added twice).  Constant time, through
 * og_graph.value_index. */
int og_graph_find_value(const og_graph *g, const char *name);
/* Append a value (and index its name); returns its index or -1 on allocation failure, the
 * graph unchanged then. */
int og_graph_add_value(og_graph *g, const char *name);
/* Give value v another name (the name index follows), and so the outer values of g's
 * subgraphs that read it (recursively).  Errors: OG_ERR_NOMEM. */
og_status og_graph_rename_value(og_graph *g, int v, const char *name);
/* Append value v to the initializer order (amortised constant time).  Returns false on
 * allocation failure, the graph unchanged then. */
bool og_graph_add_initializer(og_graph *g, int v);
/* Append a node with room for n_in inputs and n_out outputs (filled with -1). */
og_node *og_graph_add_node(og_graph *g, const char *op_type, const char *domain, const char *name,
                           int n_in, int n_out);
/* The graph's copy of type t (interned: an equal type already held is returned).  t->elem
 * must be NULL or a type of g; depth and id are computed.  NULL on allocation failure, and
 * when the nesting would pass OG_MAX_NESTING (callers report which). */
const og_type *og_graph_type(og_graph *g, const og_type *t);
/* A tensor type / a container of elem (map: key dtype), interned in g; NULL as above. */
const og_type *og_graph_type_tensor(og_graph *g, og_dtype dtype, int rank, const int64_t *dims);
const og_type *og_graph_type_wrap(og_graph *g, og_kind kind, og_dtype key, const og_type *elem);
/* Value v's kind: its type's, else OG_KIND_TENSOR. */
static inline og_kind og_value_kind_of(const og_value *v)
{
    return v->type ? v->type->kind : OG_KIND_TENSOR;
}
/* Type as text ("seq(map(int64, float32))", "float32 [N, 3]"), symbols named from g (may be
 * NULL: '?'); a tensor at the top level shows its shape always, one inside a container only
 * when its rank is known.  Writes at most n bytes, NUL-terminated; returns buf. */
char *og_type_str(const og_graph *g, const og_type *t, char *buf, size_t n);
/* The same for value v (a tensor from dtype/rank/dims, else its type). */
char *og_value_type_str(const og_graph *g, const og_value *v, char *buf, size_t n);
/* Whether a run-time value fits type t (t NULL: any value that is not a tensor): kinds
 * match level by level, tensor dtypes and known ranks and fixed dims match, map key types
 * match.  On a mismatch, why into why (size n). */
bool og_value_fits(const og_tensor *v, const og_type *t, char *why, size_t n);
/* As og_value_fits, but shapes are not compared: kinds, dtypes and key types only. */
bool og_value_fits_kind(const og_tensor *v, const og_type *t, char *why, size_t n);

/* Symbol index for a dim_param name (added if new); -1 on allocation failure. */
int og_graph_symbol(og_graph *g, const char *name);
/* Encode symbol index as a dim. */
static inline int64_t og_dim_symbol(int sym) { return -1 - (int64_t)sym; }
/* Symbol name of a dim, NULL if it is known or anonymous. */
const char *og_graph_dim_name(const og_graph *g, int64_t d);

/* Opset version the model imports for `domain` ("" and "ai.onnx" are the same), or -1. */
int64_t og_graph_opset(const og_graph *g, const char *domain);

/* Compute producers and consumer counts, sort nodes topologically, and check: each node
 * input is a graph input, an initializer or a node output; no value has two producers;
 * no cycles; graph outputs exist.  Subgraphs first, recursively: a value a subgraph reads
 * without defining becomes OG_VALUE_OUTER there, and the node holding the subgraph gets it
 * as an implicit input (og_node.n_implicit), found by name in its own graph (or, there too,
 * an outer value when that graph is itself a subgraph).  Errors: OG_ERR_MODEL with the
 * offending name (in a main graph, a name read and defined nowhere). */
og_status og_graph_finalize(og_graph *g);

/* Op resolution and static inference over a graph: og_graph_resolve in src/ops/op.h. */

/* Append an attribute to node `node` (a copy of *at is made: strings, arrays and tensors
 * are duplicated).  Errors: OG_ERR_NOMEM. */
og_status og_node_add_attr(og_graph *g, int node, const og_attr *at);

/* Remove attribute `name` of node `node` (freed; later attributes move down).  Returns
 * whether the node had it. */
bool og_node_remove_attr(og_graph *g, int node, const char *name);
/* Remove node i (its memory freed, later nodes moved down).  Call og_graph_finalize
 * after. */
void og_graph_remove_node(og_graph *g, int i);

/* Remove the nodes no graph output needs (they never run).  Call og_graph_finalize after. */
og_status og_graph_prune(og_graph *g);

/* The model metadata value of `key` (NULL if absent). */
const char *og_graph_metadata(const og_graph *g, const char *key);
/* Add (or replace) a metadata entry.  Errors: OG_ERR_NOMEM. */
og_status og_graph_set_metadata(og_graph *g, const char *key, const char *value);

/* Attribute lookup on a node (NULL if absent). */
const og_attr *og_node_attr(const og_node *n, const char *name);

/* The doc_string of nodes the gradient builder emits starts so: "gradient of node 'NAME'
 * (OP)", naming the forward node they differentiate. */
#define OG_GRAD_DOC_PREFIX "gradient of node "

/* "node 'name' (Op, opset N)" into buf; for a gradient node "node 'name' (Op, opset N;
 * gradient of node 'F' (FOp))". */
const char *og_node_label(const og_node *n, char *buf, size_t size);
/* og_error with the node's label before the message: "node 'n' (Op, opset V): ...". */
og_status og_node_verror(const og_node *n, og_status status, const char *fmt, va_list ap);

#endif /* OG_IR_H */
