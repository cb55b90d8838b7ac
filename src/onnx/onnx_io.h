/*
 * onnx_io.h: ONNX bytes <-> onnxgrad IR.  Internal header.  Protobuf types stop here:
 * nothing outside src/onnx/ sees a protobuf-c struct.
 */
#ifndef OG_ONNX_IO_H
#define OG_ONNX_IO_H

#include "ir/ir.h"

/* The limits of o (NULL: all defaults) with every 0 replaced by its default, into *out.
 * Errors: OG_ERR_INVALID_ARG (a negative limit, max_depth above OG_MAX_NESTING). */
og_status og_onnx_limits(const og_load_options *o, og_load_options *out);

/* What og_onnx_scan_model counted (totals over every graph, subgraph and function). */
typedef struct og_scan_stats {
    int depth;       /* deepest nesting (subgraphs in subgraphs + types in types) */
    int graph_depth; /* deepest nesting of GraphProtos (1: the main graph only) */
    int64_t nodes, attributes, opsets, values;
} og_scan_stats;

/* Walk ModelProto bytes with an explicit stack (no recursion) and check them against the
 * limits of lim (filled by og_onnx_limits): nesting depth, counts, string lengths, size.
 * Bytes it cannot walk are not its concern (protobuf-c reports them).  stats may be NULL.
 * Errors: OG_ERR_LIMIT (the message names the limit and the og_load_options field),
 * OG_ERR_NOMEM. */
og_status og_onnx_scan_model(const void *data, size_t size, const og_load_options *lim,
                             const og_allocator *a, og_scan_stats *stats);

/* Parse a ModelProto into a new graph (not yet finalized or resolved).  base_dir: where
 * external data lives (NULL refuses external data).  lim: the limits, filled by
 * og_onnx_limits (NULL: the defaults); the bytes are scanned against them before protobuf-c
 * decodes them, and the graph keeps lim->max_depth (og_graph.max_depth). */
og_status og_onnx_parse_model(const void *data, size_t size, const char *base_dir,
                              const og_load_options *lim, const og_allocator *a, og_graph **out);

/* A graph importing a default-domain opset below 7, just parsed (not finalized): its nodes
 * rewritten into their opset-7 equivalents (standard nodes only) and the import raised to 7;
 * other graphs are left alone.  Errors: OG_ERR_UNSUPPORTED (an old form with no opset-7
 * equivalent known at load, the message naming the node), OG_ERR_MODEL, OG_ERR_NOMEM. */
og_status og_onnx_upgrade_legacy(og_graph *g);

/* Parse a serialized TensorProto (the backend tests' input_N.pb / output_N.pb). */
og_status og_onnx_parse_tensor(const void *data, size_t size, const og_allocator *a,
                               og_tensor **out, char **name);

/* Serialize a graph as a ModelProto into a buffer allocated with a. */
og_status og_onnx_serialize_model(const og_graph *g, const og_allocator *a, void **out,
                                  size_t *out_size);

/* ---- TrainingInfoProto ------------------------------------------------------------
 * og_graph keeps ModelProto.training_info as packed TrainingInfoProto bytes
 * (og_graph.training_info): the loader stores them (external initializer data read inline)
 * and the saver writes them back unchanged.  These functions give them as IR. */

/* One TrainingInfoProto of a model as onnxgrad graphs. */
typedef struct og_training_info {
    const og_allocator *alloc;
    /* The main graph and the algorithm graph combined as ONNX defines it (inputs,
     * initializers, nodes, outputs and value infos of the main graph, then the algorithm's),
     * with the model's opsets; not finalized.  Its first n_main_outputs outputs are the main
     * graph's. */
    og_graph *algorithm;
    int n_main_outputs;
    /* The initialization graph, with the main graph's initializers before its own; NULL
     * when it is absent or empty (no node, no output).  Not finalized. */
    og_graph *initialization;
    og_kv *update, *init; /* update_binding, initialization_binding: initializer -> output */
    int n_update, n_init;
} og_training_info;

/* TrainingInfoProto k of `model` as IR.  Errors: OG_ERR_INVALID_ARG (no such entry),
 * OG_ERR_PARSE, OG_ERR_MODEL (a combined graph that breaks the loader's rules: the message
 * says which graph), OG_ERR_NOMEM. */
og_status og_onnx_parse_training_info(const og_graph *model, int k, const og_allocator *a,
                                      og_training_info **out);
void og_training_info_free(og_training_info *ti);

/* Pack a TrainingInfoProto from IR graphs: `algorithm` and `initialization` (NULL: none)
 * are written like a model's graph (inputs, initializers, nodes, outputs, value infos); a
 * value they only read needs no declaration, so they need not be finalized.  update and
 * init are the bindings.  *out is allocated with a. */
og_status og_onnx_serialize_training_info(const og_graph *algorithm, const og_graph *initialization,
                                          const og_kv *update, int n_update, const og_kv *init,
                                          int n_init, const og_allocator *a, og_blob *out);

/* Give the initializers named names[i] of g's TrainingInfoProtos (algorithm and
 * initialization graphs) the contents of values[i]; names found nowhere are skipped. */
og_status og_onnx_training_info_set_initializers(og_graph *g, const char *const *names,
                                                 const og_tensor *const *values, int n);

/* ---- subgraphs and functions built in IR -------------------------------------------- */

/* A GRAPH attribute `name` holding `body` (inputs, initializers, nodes, outputs, value
 * infos, as a model's graph; values only read, outer-scope references among them, need no
 * declaration): *out gets its packed AttributeProto as raw bytes (og_attr.raw, allocated with
 * body's allocator; type OG_ATTR_GRAPH, no name: give it one before adding it to a node). */
og_status og_onnx_pack_graph_attr(const og_graph *body, const char *name, og_attr *out);

/* A packed FunctionProto domain.name (with overload, NULL or "" for none), whose inputs
 * and outputs are body's graph inputs and outputs (their names), whose nodes are body's and
 * whose opset imports are body's; attrs names the attributes a calling node may carry.
 * *out is allocated with body's allocator. */
og_status og_onnx_pack_function(const og_graph *body, const char *domain, const char *name,
                                const char *overload, const char *const *attrs, int n_attrs,
                                og_blob *out);

/* Read a whole file (at most max_size bytes) into a buffer allocated with a. */
og_status og_read_file(const char *path, size_t max_size, const og_allocator *a, void **out,
                       size_t *out_size);

#endif /* OG_ONNX_IO_H */
