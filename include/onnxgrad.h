/*
 * onnxgrad.h: the public API of onnxgrad, and its reference.
 *
 * onnxgrad reads ONNX models, runs them on the CPU, writes them back, and (in later
 * layers) builds and runs their gradient graphs.  This header is the only one a program
 * needs; everything it declares starts with og_ / OG_.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *
 *  - Status.  Every fallible function returns an og_status.  OG_OK is 0.  On failure a
 *    one-line message naming what went wrong (node, op, value, file) is stored for the
 *    calling thread and read with og_last_error(); the next failing call on that thread
 *    replaces it.  Successful calls leave it alone.
 *  - Ownership.  A function that hands out a new object through an `og_xxx **out`
 *    parameter transfers ownership: free it with the matching og_xxx_free().  On failure
 *    *out is set to NULL and nothing needs freeing.  og_xxx_free(NULL) is a no-op.
 *  - Threads.  Distinct handles may be used from distinct threads at once.  One handle may
 *    not be used from two threads at once, except where a comment says "thread-safe".
 *    A model is immutable once loaded, so several sessions of one model may run in
 *    parallel threads.
 *  - Allocation.  Every allocation made for a handle goes through the og_allocator given
 *    when the handle (or its parent) was created; NULL means the C library's malloc.
 */
#ifndef ONNXGRAD_H
#define ONNXGRAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OG_VERSION_MAJOR  0
#define OG_VERSION_MINOR  1
#define OG_VERSION_PATCH  0
#define OG_VERSION_STRING "0.1.0"

/* The largest tensor rank onnxgrad handles; a model with a larger rank is refused. */
#define OG_MAX_RANK 8

/* ---------------------------------------------------------------------------------- */
/* Status codes                                                                        */
/* ---------------------------------------------------------------------------------- */

typedef enum og_status {
    OG_OK = 0,
    OG_ERR_INVALID_ARG = 1, /* a NULL pointer, a bad option, an unknown name */
    OG_ERR_NOMEM = 2,       /* the allocator returned NULL */
    OG_ERR_IO = 3,          /* a file could not be read or written */
    OG_ERR_PARSE = 4,       /* malformed protobuf or .npy bytes */
    OG_ERR_MODEL = 5,       /* a well-formed but invalid model: cycle, dangling name, ... */
    OG_ERR_UNSUPPORTED = 6, /* an op, opset, dtype or attribute onnxgrad does not implement */
    OG_ERR_SHAPE = 7,       /* shapes that do not fit an op or a declared input */
    OG_ERR_TYPE = 8,        /* element types that do not fit */
    OG_ERR_RUNTIME = 9,     /* a failure while running (out-of-range index, NaN in debug) */
    OG_ERR_INTERNAL = 10    /* a broken invariant inside onnxgrad: please report it */
} og_status;

/* A constant English name for a status code ("OG_ERR_SHAPE"). */
const char *og_status_name(og_status status);

/* The message of the last failing call on this thread ("" if none).  The pointer stays
 * valid until the next onnxgrad call on this thread.  Thread-safe. */
const char *og_last_error(void);

/* ---------------------------------------------------------------------------------- */
/* Element types: the values are ONNX's TensorProto.DataType numbers.                  */
/* ---------------------------------------------------------------------------------- */

typedef enum og_dtype {
    OG_UNDEFINED = 0,
    OG_FLOAT = 1,
    OG_UINT8 = 2,
    OG_INT8 = 3,
    OG_UINT16 = 4,
    OG_INT16 = 5,
    OG_INT32 = 6,
    OG_INT64 = 7,
    OG_STRING = 8,
    OG_BOOL = 9,
    OG_FLOAT16 = 10,
    OG_DOUBLE = 11,
    OG_UINT32 = 12,
    OG_UINT64 = 13,
    OG_BFLOAT16 = 16
} og_dtype;

/* "float32", "int64", ...; "undefined" for codes onnxgrad does not know.  Thread-safe. */
const char *og_dtype_name(og_dtype dtype);
/* Bytes per element, 0 for OG_STRING, OG_UNDEFINED and unknown codes.  Thread-safe. */
size_t og_dtype_size(og_dtype dtype);

/* ---------------------------------------------------------------------------------- */
/* Allocator hooks                                                                     */
/* ---------------------------------------------------------------------------------- */

/* Custom memory functions.  malloc may return NULL (onnxgrad then fails with
 * OG_ERR_NOMEM and frees what it took); free must accept NULL.  Memory for tensor data is
 * requested with 64-byte alignment through aligned_malloc when it is set, else through
 * malloc with padding.  `user` is passed back unchanged. */
typedef struct og_allocator {
    void *(*malloc)(void *user, size_t size);
    void (*free)(void *user, void *ptr);
    void *user;
} og_allocator;

/* ---------------------------------------------------------------------------------- */
/* Tensors                                                                             */
/* ---------------------------------------------------------------------------------- */

/* A dense, C-ordered (row-major) array.  A tensor either owns its data or wraps memory
 * the caller keeps alive (og_tensor_wrap).  Rank 0 is a scalar with one element. */
typedef struct og_tensor og_tensor;

/* New tensor of the given shape, zero-filled.  `alloc` may be NULL.
 * Errors: OG_ERR_INVALID_ARG (rank outside 0..OG_MAX_RANK, negative dim, string dtype),
 * OG_ERR_NOMEM. */
og_status og_tensor_create(og_dtype dtype, int rank, const int64_t *dims, const og_allocator *alloc,
                           og_tensor **out);

/* New tensor holding a copy of `nbytes` bytes at `data`; nbytes must equal the shape's
 * size in bytes (OG_ERR_INVALID_ARG otherwise). */
og_status og_tensor_from_data(og_dtype dtype, int rank, const int64_t *dims, const void *data,
                              size_t nbytes, const og_allocator *alloc, og_tensor **out);

/* New tensor that wraps `data` without copying.  The caller keeps `data` alive and
 * unchanged while onnxgrad may read it (until the tensor is freed, and for the duration of
 * a run it is passed to).  og_tensor_free() does not free `data`. */
og_status og_tensor_wrap(og_dtype dtype, int rank, const int64_t *dims, void *data, size_t nbytes,
                         const og_allocator *alloc, og_tensor **out);

void og_tensor_free(og_tensor *t);

og_dtype og_tensor_dtype(const og_tensor *t);
int og_tensor_rank(const og_tensor *t);
/* The dims array (og_tensor_rank() entries); valid while the tensor lives. */
const int64_t *og_tensor_dims(const og_tensor *t);
/* Number of elements (1 for a scalar). */
int64_t og_tensor_numel(const og_tensor *t);
size_t og_tensor_nbytes(const og_tensor *t);
/* The element buffer, C order; writable unless the tensor is one of a model's
 * initializers. */
void *og_tensor_data(og_tensor *t);
const void *og_tensor_cdata(const og_tensor *t);

/* ---------------------------------------------------------------------------------- */
/* Models                                                                              */
/* ---------------------------------------------------------------------------------- */

typedef struct og_model og_model;

typedef struct og_load_options {
    const og_allocator *allocator; /* NULL: the C library's */
    /* Folder against which external-data locations are resolved.  NULL: the folder of the
     * model file (og_model_load_file), or refuse external data (og_model_load_buffer). */
    const char *base_dir;
} og_load_options;

/* Parse an ONNX model, convert it to onnxgrad's graph, resolve every node's opset and
 * check that each op is implemented.  External data is read from files next to the model;
 * a location that escapes the model's folder (absolute, or with "..") is refused.
 * opts may be NULL.
 * Errors: OG_ERR_IO, OG_ERR_PARSE (bytes that are not an ONNX ModelProto),
 * OG_ERR_MODEL (cycles, dangling names, duplicate outputs, missing initializer data),
 * OG_ERR_UNSUPPORTED (IR version outside 3..10, default-domain opset outside 7..21, an op
 * the executor does not implement: the message names op, domain and opset), OG_ERR_NOMEM. */
og_status og_model_load_file(const char *path, const og_load_options *opts, og_model **out);
og_status og_model_load_buffer(const void *data, size_t size, const og_load_options *opts,
                               og_model **out);

/* Like og_model_load_file, but an unknown op or one without a CPU kernel is not an error
 * (for `info`, or for converting and saving models).  Sessions on such a model fail at
 * creation with OG_ERR_UNSUPPORTED naming the op. */
og_status og_model_load_file_any_op(const char *path, const og_load_options *opts, og_model **out);

void og_model_free(og_model *m);

/* A copy of m that computes in float64: float32 initializers, inputs, outputs and value
 * infos become float64, and so do Cast targets and constant tensors.  Meant for
 * finite-difference checks.  Errors: as og_model_load_buffer. */
og_status og_model_convert_float64(const og_model *m, og_model **out);

/* Serialize the model (graph, initializers inline, value infos, metadata, opset imports).
 * *out_data is allocated with the model's allocator; release it with og_model_buffer_free.
 */
og_status og_model_save_buffer(const og_model *m, void **out_data, size_t *out_size);
void og_model_buffer_free(const og_model *m, void *data);
og_status og_model_save_file(const og_model *m, const char *path);

/* Graph inputs (initializers excluded) and outputs. */
int og_model_input_count(const og_model *m);
int og_model_output_count(const og_model *m);
const char *og_model_input_name(const og_model *m, int i);
const char *og_model_output_name(const og_model *m, int i);

/* Declared type and shape of a graph input or output, as far as the model (or shape
 * inference) knows it.  *rank is -1 when unknown; a dim is -1 when symbolic or unknown,
 * and then *dim_name (if not NULL) gets its symbol name or NULL.  dims must hold
 * OG_MAX_RANK entries.  Errors: OG_ERR_INVALID_ARG for an index out of range. */
og_status og_model_input_info(const og_model *m, int i, og_dtype *dtype, int *rank, int64_t *dims,
                              const char **dim_names);
og_status og_model_output_info(const og_model *m, int i, og_dtype *dtype, int *rank, int64_t *dims,
                               const char **dim_names);

/* Initializers (the model's constant tensors, weights among them). */
int og_model_initializer_count(const og_model *m);
const char *og_model_initializer_name(const og_model *m, int i);
/* Read-only view of initializer i, owned by the model. */
const og_tensor *og_model_initializer(const og_model *m, int i);

/* Opset imports and general facts. */
int og_model_opset_count(const og_model *m);
/* domain "" is the default ONNX domain. */
void og_model_opset(const og_model *m, int i, const char **domain, int64_t *version);
int64_t og_model_ir_version(const og_model *m);
int og_model_node_count(const og_model *m);
/* op_type and domain of node i (topological order). */
void og_model_node_op(const og_model *m, int i, const char **op_type, const char **domain);
const char *og_model_node_name(const og_model *m, int i);

/* ---------------------------------------------------------------------------------- */
/* Sessions: running a model                                                           */
/* ---------------------------------------------------------------------------------- */

typedef struct og_session og_session;

typedef enum og_log_level { OG_LOG_DEBUG = 0, OG_LOG_INFO = 1, OG_LOG_WARN = 2 } og_log_level;
typedef void (*og_log_fn)(void *user, og_log_level level, const char *message);

typedef struct og_session_options {
    int threads;                   /* 0: one thread per core; 1: no threading */
    const og_allocator *allocator; /* NULL: the model's */
    og_log_fn log;                 /* NULL: no logging */
    void *log_user;
    int debug; /* nonzero: check every node's outputs for NaN/Inf and shapes, with names */
} og_session_options;

/* A session plans and runs one model.  The model must outlive the session.
 * opts may be NULL (defaults above).
 * Errors: OG_ERR_UNSUPPORTED (an op without a CPU kernel), OG_ERR_MODEL, OG_ERR_NOMEM. */
og_status og_session_create(const og_model *m, const og_session_options *opts, og_session **out);
void og_session_free(og_session *s);

/* Run the model.  inputs[i] is bound to the graph input named input_names[i]; every graph
 * input without an initializer must be given; an input that has an initializer may be
 * given to override it.  outputs[j] receives a new tensor (owned by the caller) for each
 * graph output, in og_model_output_* order; the array must hold og_model_output_count()
 * entries.  Shapes are checked against the declared ones: a fixed dim must match, a named
 * symbolic dim must take one value across all inputs.  Execution plans are cached per
 * input-shape signature.
 * Errors: OG_ERR_INVALID_ARG (unknown or repeated name, missing input), OG_ERR_TYPE,
 * OG_ERR_SHAPE, OG_ERR_RUNTIME, OG_ERR_NOMEM. */
og_status og_session_run(og_session *s, const char *const *input_names,
                         const og_tensor *const *inputs, int n_inputs, og_tensor **outputs);

/* Same, for a chosen subset of outputs by name: outputs[j] receives output_names[j].  Any
 * value of the graph (not only graph outputs) may be named. */
og_status og_session_run_named(og_session *s, const char *const *input_names,
                               const og_tensor *const *inputs, int n_inputs,
                               const char *const *output_names, int n_outputs, og_tensor **outputs);

/* ---------------------------------------------------------------------------------- */
/* Gradients                                                                           */
/* ---------------------------------------------------------------------------------- */

/* A gradient object: a model, the weights to train, the inputs that need gradients and the
 * outputs to differentiate, compiled into a training graph (DESIGN §4): inputs are the
 * model inputs, then the trained weights (their initializer values as defaults), then one
 * gradient seed per selected output named `<output>_grad`; outputs are the selected
 * outputs, then `<input>_grad` per input needing a gradient, then `<weight>_grad`. */
typedef struct og_grad og_grad;

/* Where a gradient object runs.  Only the CPU is implemented; OG_DEVICE_CUDA is refused
 * with OG_ERR_UNSUPPORTED until the CUDA backend lands. */
typedef enum og_device { OG_DEVICE_CPU = 0, OG_DEVICE_CUDA = 1 } og_device;

typedef struct og_grad_options {
    /* Weights to train, any order.  NULL: every float16/float/double initializer.  An
     * unknown name fails with the list of candidates; a repeated or non-float one fails. */
    const char *const *weights;
    int n_weights;
    /* Graph inputs that need gradients.  NULL: every float input; inputs non-NULL with
     * n_inputs 0: none. */
    const char *const *inputs;
    int n_inputs;
    /* Outputs to differentiate.  NULL: every graph output. */
    const char *const *outputs;
    int n_outputs;
    int threads;                   /* as og_session_options */
    const og_allocator *allocator; /* NULL: the model's */
    og_log_fn log;                 /* told, among others, of weights that get a zero gradient */
    og_device device;              /* OG_DEVICE_CPU (0) */
    int device_index;              /* which GPU for OG_DEVICE_CUDA (cuda:N) */
    void *log_user;
    int debug; /* nonzero: check every node's outputs for NaN/Inf, with names */
} og_grad_options;

/* Build the training graph of m.  The model must outlive the gradient object.
 * Errors: OG_ERR_INVALID_ARG (bad names), OG_ERR_UNSUPPORTED (an op without a gradient rule
 * on a path a gradient must take: the message names the node and op), OG_ERR_NOMEM. */
og_status og_grad_create(const og_model *m, const og_grad_options *opts, og_grad **out);
void og_grad_free(og_grad *g);

/* The selected outputs, the inputs needing gradients and the trained weights, in the order
 * of og_grad_run's arrays. */
int og_grad_output_count(const og_grad *g);
const char *og_grad_output_name(const og_grad *g, int i);
int og_grad_input_count(const og_grad *g);
const char *og_grad_input_name(const og_grad *g, int i);
int og_grad_weight_count(const og_grad *g);
const char *og_grad_weight_name(const og_grad *g, int i);

/* The current value of trained weight `name` (owned by g; valid until the next
 * og_grad_set_weight of it).  Errors: OG_ERR_INVALID_ARG (not a trained weight). */
og_status og_grad_get_weight(const og_grad *g, const char *name, const og_tensor **value);
/* Copy `value` into trained weight `name`; dtype and shape must match.  Instances use the
 * new value from their next call; no instance of g may be running meanwhile.
 * Errors: OG_ERR_INVALID_ARG, OG_ERR_TYPE, OG_ERR_SHAPE. */
og_status og_grad_set_weight(og_grad *g, const char *name, const og_tensor *value);

/* The training graph as a model (owned by g): inspect it or save it with
 * og_model_save_file. */
const og_model *og_grad_training_model(const og_grad *g);

/* The eval graph as a model (owned by g): the forward graph with the trained weights listed
 * as inputs after the model inputs (their values as defaults). */
const og_model *og_grad_eval_model(const og_grad *g);

/* Write the training graph to FOLDER/<prefix>training<suffix>.onnx and the eval graph to
 * FOLDER/<prefix>eval<suffix>.onnx (prefix and suffix may be NULL).  The folder must exist.
 * Errors: OG_ERR_IO. */
og_status og_grad_save_graphs(const og_grad *g, const char *folder, const char *prefix,
                              const char *suffix);

/* Save a configured gradient object (the seed's pickling): the model with the current
 * weight values, and which weights, inputs and outputs are differentiated, as one ONNX
 * model (the eval graph, with the configuration in its metadata under "onnxgrad.*").
 * *data is freed with og_grad_buffer_free. */
og_status og_grad_save_buffer(const og_grad *g, void **data, size_t *size);
void og_grad_buffer_free(const og_grad *g, void *data);
/* Rebuild a gradient object from og_grad_save_buffer's bytes, without the original model.
 * opts gives threads, allocator, log and debug; its weights/inputs/outputs must be NULL
 * (they come from the bytes).  Errors: OG_ERR_PARSE, OG_ERR_MODEL (bytes that are not a
 * saved gradient object), as og_grad_create otherwise. */
og_status og_grad_load_buffer(const void *data, size_t size, const og_grad_options *opts,
                              og_grad **out);

/* Forward and backward in one call.  inputs bind the model inputs by name (weights too, to
 * override their current values).  grad_outputs[j] is the gradient of output j
 * (og_grad_output_name order); NULL, or a NULL entry, means ones of that output's shape
 * (which costs one extra forward run to learn the shape).  outputs receives
 * og_grad_output_count() new tensors; grads receives og_grad_input_count() +
 * og_grad_weight_count() new tensors: the inputs' gradients, then the weights'.
 * Errors: as og_session_run. */
og_status og_grad_run(og_grad *g, const char *const *input_names, const og_tensor *const *inputs,
                      int n_inputs, const og_tensor *const *grad_outputs, og_tensor **outputs,
                      og_tensor **grads);

/* Instances: the seed's forward/backward mechanism.  An instance runs the graphs of one
 * gradient object; several instances of one object may run in different threads at
 * once (the object must not be freed or changed meanwhile).  One instance is used by one
 * thread at a time. */
typedef struct og_instance og_instance;

og_status og_grad_new_instance(og_grad *g, og_instance **out);
void og_instance_free(og_instance *inst);

/* Forward.  inputs bind the model inputs by name (and trained weights, to override their
 * values for this call).  outputs receives og_grad_output_count() new tensors.
 * training == 0: inference through the eval graph, no state kept.
 * training != 0: runs the forward half of the training graph and pushes a saved state
 * holding exactly the values the backward half reads; several forwards may be pending. */
og_status og_instance_forward(og_instance *inst, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, int training,
                              og_tensor **outputs);

/* Backward for the newest pending training forward (its state is popped and freed).
 * grad_outputs[j] is the gradient of output j and must have that output's dtype and shape
 * exactly; NULL (or a NULL entry) means ones.  grads receives og_grad_input_count() +
 * og_grad_weight_count() new tensors: inputs' gradients, then weights'.
 * Errors: OG_ERR_INVALID_ARG (no pending forward), OG_ERR_SHAPE / OG_ERR_TYPE (a gradient
 * that does not match its output), as og_session_run otherwise. */
og_status og_instance_backward(og_instance *inst, const og_tensor *const *grad_outputs,
                               og_tensor **grads);

/* Pending training forwards, and the bytes their saved states hold. */
int og_instance_pending(const og_instance *inst);
size_t og_instance_saved_bytes(const og_instance *inst);

/* ---------------------------------------------------------------------------------- */
/* .npy files                                                                          */
/* ---------------------------------------------------------------------------------- */

/* Read a .npy file (format 1.0-3.0, C order) of float16, float32, float64, int32, int64
 * or bool, little- or big-endian.  Anything else (Fortran order, object arrays, other
 * dtypes) is refused with OG_ERR_UNSUPPORTED and a message that says why; truncated or
 * malformed files give OG_ERR_PARSE. */
og_status og_npy_load(const char *path, const og_allocator *alloc, og_tensor **out);
og_status og_npy_load_buffer(const void *data, size_t size, const og_allocator *alloc,
                             og_tensor **out);
/* Write a tensor as .npy (format 1.0, little-endian, C order). Errors: OG_ERR_IO,
 * OG_ERR_UNSUPPORTED (a dtype outside the list above). */
og_status og_npy_save(const char *path, const og_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* ONNXGRAD_H */
