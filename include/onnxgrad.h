/*
 * onnxgrad.h: the public API of onnxgrad, and its reference.
 *
 * onnxgrad reads ONNX models, runs them on the CPU, writes them back, builds and runs their
 * gradient graphs, and trains them.  This header is the only one a program needs;
 * everything it declares starts with og_ / OG_, and libonnxgrad exports nothing else.
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
 *    Pointers returned as `const` (names, views) belong to the handle they came from and
 *    stay valid while it lives, unless the function's comment says otherwise.
 *  - Indices.  A function taking an index i of a list (inputs, outputs, initializers, opsets,
 *    nodes, weights) accepts 0 <= i < the list's count.  Outside that range it fails: one
 *    returning og_status sets its outputs to NULL / 0 and returns OG_ERR_INVALID_ARG; one
 *    returning a pointer returns NULL.  Either way og_last_error() then names the function,
 *    the index and the valid range.
 *  - Threads.  Distinct handles may be used from distinct threads at once.  A function
 *    taking a `const og_xxx *` handle does not write to it, so several threads may make such
 *    calls on one handle at once, provided no call taking it non-const runs meanwhile.
 *    Otherwise one handle serves one thread at a time, except where a comment says
 *    "thread-safe".  Sessions, gradient objects, instances and trainers check it: a
 *    non-const call made while another thread is inside one on the same handle fails at
 *    once with OG_ERR_BUSY (an atomic in-use flag, a few nanoseconds), never sharing its
 *    state; the first call is not disturbed.  onnxruntime lets one session serve
 *    concurrent runs; onnxgrad does not: a server makes one session per thread (sessions of
 *    one model share its weights, so each costs only its own buffers; see
 *    tests/unit/test_threads.c).  A model is immutable once loaded, so several sessions of
 *    one model may run in parallel threads.  Freeing a handle while another thread uses it
 *    is undefined, as everywhere.
 *  - Allocation.  Every allocation made for a handle goes through the og_allocator given
 *    when the handle (or its parent) was created; NULL means the C library's malloc (on
 *    Linux, blocks of 4 MB or more are then advised as candidates for 2 MB pages,
 *    madvise MADV_HUGEPAGE; a custom allocator gets no such call).
 */
#ifndef ONNXGRAD_H
#define ONNXGRAD_H

#include <stddef.h>
#include <stdint.h>

/* OG_API marks the functions libonnxgrad exports; the library is built with hidden
 * visibility, so nothing else leaves it.  The library's own build defines OG_BUILDING_LIBRARY
 * (on Windows: dllexport there, dllimport in programs using the DLL).  Programs linking the
 * static library define OG_STATIC, which needs no decoration at all. */
#if defined(OG_STATIC)
#define OG_API
#elif defined(_WIN32) || defined(__CYGWIN__)
#ifdef OG_BUILDING_LIBRARY
#define OG_API __declspec(dllexport)
#else
#define OG_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define OG_API __attribute__((visibility("default")))
#else
#define OG_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define OG_VERSION_MAJOR  0
#define OG_VERSION_MINOR  1
#define OG_VERSION_PATCH  0
#define OG_VERSION_STRING "0.1.0"

/* The largest tensor rank onnxgrad handles; a model with a larger rank is refused. */
#define OG_MAX_RANK 8

/* The deepest nesting onnxgrad accepts, one limit for every kind of nesting: sequence, map
 * and optional types and values within each other (seq(map(int64, tensor(float))) is 2
 * deep), and subgraphs within subgraphs.  Deeper models and values are refused with a
 * message naming the depth and this limit (onnxruntime's protobuf recursion limit is 100
 * too).  Loading counts the nesting of the file's protobuf messages against
 * og_load_options.max_depth, whose default is this value, before anything is decoded. */
#define OG_MAX_NESTING 100

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
    OG_ERR_INTERNAL = 10,   /* a broken invariant inside onnxgrad: please report it */
    OG_ERR_LIMIT = 11,      /* a limit of the load, session or data options was reached
                               (nesting depth, counts, sizes, the memory budget): the message
                               names the limit, the value asked for and the option */
    OG_ERR_BUSY = 12        /* the handle is in use by a call in another thread (see Threads) */
} og_status;

/* A constant English name for a status code ("OG_ERR_SHAPE"). */
OG_API const char *og_status_name(og_status status);

/* The message of the last failing call on this thread ("" if none).  The pointer stays
 * valid until the next onnxgrad call on this thread.  Thread-safe. */
OG_API const char *og_last_error(void);

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
    OG_BFLOAT16 = 16,
    /* 8-bit floats (ONNX 19): sign, exponent and mantissa bits E4M3 or E5M2; FN: no
     * infinities, FNUZ: no infinities and no negative zero, the one NaN is 0x80.  A tensor
     * holds their codes, one byte each.  Only Cast, CastLike, QuantizeLinear,
     * DequantizeLinear and the byte-moving ops compute on them. */
    OG_FLOAT8E4M3FN = 17,
    OG_FLOAT8E4M3FNUZ = 18,
    OG_FLOAT8E5M2 = 19,
    OG_FLOAT8E5M2FNUZ = 20,
    /* 4-bit integers (ONNX 21).  The wire format (TensorProto raw_data, int32_data) packs
     * two per byte, low nibble first; an og_tensor holds them unpacked, one per byte (int4 as
     * an int8 in [-8, 7], uint4 as a uint8 in [0, 15]): og_dtype_size is 1, and the loader
     * and saver unpack and pack.  Only Cast, CastLike, QuantizeLinear, DequantizeLinear and
     * the byte-moving ops compute on them. */
    OG_UINT4 = 21,
    OG_INT4 = 22
} og_dtype;

/* "float32", "int64", "float8e4m3fn", "int4", ...; "undefined" for codes onnxgrad does not
 * know.  Thread-safe. */
OG_API const char *og_dtype_name(og_dtype dtype);
/* Bytes per element of a tensor's buffer (1 for the 8-bit floats and for the 4-bit integers,
 * which a tensor holds unpacked), 0 for OG_STRING, OG_UNDEFINED and unknown codes.
 * Thread-safe. */
OG_API size_t og_dtype_size(og_dtype dtype);

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
 * the caller keeps alive (og_tensor_wrap).  Rank 0 is a scalar with one element.
 *
 * The same handle also carries the values of ONNX that are not tensors (a sequence, a map,
 * an optional): og_tensor_kind() says which, and the functions of "Values that are not
 * tensors" below make and read them.  Every og_tensor_* getter accepts any kind: for a
 * value that is not a tensor, og_tensor_dtype() is OG_UNDEFINED, rank, numel and nbytes are
 * 0, dims and data NULL.  og_tensor_free() frees any kind, with everything it holds.
 *
 * String tensors (OG_STRING) hold one NUL-terminated UTF-8 string per element, of any
 * length, owned by the tensor; they are read with og_tensor_string() and written with
 * og_tensor_set_string(), and og_tensor_data() / og_tensor_cdata() / og_tensor_nbytes()
 * give NULL / NULL / 0 for them (their elements are not raw bytes). */
typedef struct og_tensor og_tensor;

/* New tensor of the given shape, zero-filled (a string tensor: every element "").
 * `alloc` may be NULL.
 * Errors: OG_ERR_INVALID_ARG (rank outside 0..OG_MAX_RANK, negative dim, unknown dtype),
 * OG_ERR_NOMEM. */
OG_API og_status og_tensor_create(og_dtype dtype, int rank, const int64_t *dims,
                                  const og_allocator *alloc, og_tensor **out);

/* New tensor holding a copy of `nbytes` bytes at `data`; nbytes must equal the shape's
 * size in bytes (OG_ERR_INVALID_ARG otherwise, and for OG_STRING: use
 * og_tensor_from_strings). */
OG_API og_status og_tensor_from_data(og_dtype dtype, int rank, const int64_t *dims,
                                     const void *data, size_t nbytes, const og_allocator *alloc,
                                     og_tensor **out);

/* New tensor that wraps `data` without copying.  The caller keeps `data` alive and
 * unchanged while onnxgrad may read it (until the tensor is freed, and for the duration of
 * a run it is passed to).  og_tensor_free() does not free `data`.  OG_STRING is refused
 * (OG_ERR_INVALID_ARG): strings are always copied. */
OG_API og_status og_tensor_wrap(og_dtype dtype, int rank, const int64_t *dims, void *data,
                                size_t nbytes, const og_allocator *alloc, og_tensor **out);

OG_API void og_tensor_free(og_tensor *t);

OG_API og_dtype og_tensor_dtype(const og_tensor *t);
OG_API int og_tensor_rank(const og_tensor *t);
/* The dims array (og_tensor_rank() entries); valid while the tensor lives. */
OG_API const int64_t *og_tensor_dims(const og_tensor *t);
/* Number of elements (1 for a scalar). */
OG_API int64_t og_tensor_numel(const og_tensor *t);
OG_API size_t og_tensor_nbytes(const og_tensor *t);
/* The element buffer, C order; writable unless the tensor is one of a model's
 * initializers.  NULL for a string tensor and for a value that is not a tensor. */
OG_API void *og_tensor_data(og_tensor *t);
OG_API const void *og_tensor_cdata(const og_tensor *t);

/* For bindings: n tensors described in one call, OG_TENSOR_INFO_SIZE int64 entries each:
 * the data address (0 for a string tensor and a value that is not a tensor), the dtype, the
 * rank, then OG_MAX_RANK dims (0 past the rank).  A NULL tensor gives zeros.  Thread-safe. */
#define OG_TENSOR_INFO_SIZE (3 + OG_MAX_RANK)
OG_API void og_tensor_info(const og_tensor *const *tensors, int n, int64_t *info);

/* A string tensor of the given shape holding copies of strings[0..numel-1] (C order; a NULL
 * entry is "").  Errors: OG_ERR_INVALID_ARG (bad shape, NULL strings for a non-empty
 * shape), OG_ERR_NOMEM. */
OG_API og_status og_tensor_from_strings(int rank, const int64_t *dims, const char *const *strings,
                                        const og_allocator *alloc, og_tensor **out);
/* Element i (flat, C order) of a string tensor, owned by the tensor and valid until the
 * element is set again or the tensor freed; NULL when t is not a string tensor or i is out of
 * range. */
OG_API const char *og_tensor_string(const og_tensor *t, int64_t i);
/* Replace element i of a string tensor with a copy of s (NULL: "").  Errors:
 * OG_ERR_INVALID_ARG (not a string tensor, i out of range, a model's initializer),
 * OG_ERR_NOMEM (the element is unchanged then). */
OG_API og_status og_tensor_set_string(og_tensor *t, int64_t i, const char *s);

/* ---------------------------------------------------------------------------------- */
/* Values that are not tensors: sequences, maps, optionals                             */
/* ---------------------------------------------------------------------------------- */

/* What an og_tensor handle holds (ONNX's TypeProto cases; sparse tensors are not
 * supported).
 *  - a sequence: n values (tensors of one element type, or maps, or sequences), in order;
 *  - a map: n keys, a 1-D tensor of int64 or string keys, and one value per key (a
 *    tensor, usually a scalar, or a sequence or a map), as ONNX's MapProto;
 *  - an optional: no value, or one value of any kind.
 * Values nest at most OG_MAX_NESTING deep.  A value returned by a run or made here owns
 * everything it holds; the items a getter returns belong to it, are read-only, and stay valid
 * while it lives. */
typedef enum og_kind {
    OG_KIND_TENSOR = 0,
    OG_KIND_SEQUENCE = 1,
    OG_KIND_MAP = 2,
    OG_KIND_OPTIONAL = 3
} og_kind;

/* The kind of v (OG_KIND_TENSOR for NULL). */
OG_API og_kind og_tensor_kind(const og_tensor *v);
/* "tensor", "sequence", "map", "optional"; "unknown" for other codes.  Thread-safe. */
OG_API const char *og_kind_name(og_kind kind);

/* A sequence holding copies of items[0..n-1] (n may be 0).  The items must all be tensors
 * of one dtype (any shapes), or all values of one other kind.
 * Errors: OG_ERR_INVALID_ARG (n < 0, a NULL item), OG_ERR_TYPE (items of mixed kinds or
 * dtypes), OG_ERR_UNSUPPORTED (nesting deeper than OG_MAX_NESTING), OG_ERR_NOMEM. */
OG_API og_status og_sequence_create(const og_tensor *const *items, int64_t n,
                                    const og_allocator *alloc, og_tensor **out);
/* The number of items of a sequence (0 for another kind). */
OG_API int64_t og_sequence_length(const og_tensor *seq);
/* Item i of a sequence; NULL for another kind or an index out of range. */
OG_API const og_tensor *og_sequence_item(const og_tensor *seq, int64_t i);

/* A map from keys (a 1-D tensor of int64 or string keys, all distinct) to copies of
 * values[0..n-1], n = the number of keys; the values must be of one kind (tensors of one
 * dtype, or one other kind).  Errors: OG_ERR_INVALID_ARG (NULL keys, a NULL value, keys not
 * 1-D, a repeated key), OG_ERR_TYPE (keys neither int64 nor string, mixed values),
 * OG_ERR_UNSUPPORTED (nesting), OG_ERR_NOMEM. */
OG_API og_status og_map_create(const og_tensor *keys, const og_tensor *const *values,
                               const og_allocator *alloc, og_tensor **out);
/* The number of entries of a map (0 for another kind). */
OG_API int64_t og_map_size(const og_tensor *map);
/* The keys of a map: a 1-D int64 or string tensor, in the map's order; NULL for another
 * kind. */
OG_API const og_tensor *og_map_keys(const og_tensor *map);
/* The value of entry i (its key is og_map_keys()'s element i); NULL for another kind or an
 * index out of range. */
OG_API const og_tensor *og_map_value(const og_tensor *map, int64_t i);

/* An optional holding a copy of value, or no value when value is NULL.
 * Errors: OG_ERR_UNSUPPORTED (nesting), OG_ERR_NOMEM. */
OG_API og_status og_optional_create(const og_tensor *value, const og_allocator *alloc,
                                    og_tensor **out);
/* The value of an optional; NULL when it has none, and for another kind. */
OG_API const og_tensor *og_optional_value(const og_tensor *opt);

/* ---------------------------------------------------------------------------------- */
/* Models                                                                              */
/* ---------------------------------------------------------------------------------- */

typedef struct og_model og_model;

/* Defaults of the limits of og_load_options (a field left 0 takes its default). */
#define OG_DEFAULT_MAX_DEPTH          OG_MAX_NESTING /* also the most it may be set to */
#define OG_DEFAULT_MAX_NODES          (1LL << 24)    /* 16,777,216 */
#define OG_DEFAULT_MAX_VALUES         (1LL << 26)    /* 67,108,864 */
#define OG_DEFAULT_MAX_ATTRIBUTES     (1LL << 26)
#define OG_DEFAULT_MAX_OPSETS         1024
#define OG_DEFAULT_MAX_STRING_BYTES   (1LL << 24)       /* 16 MiB */
#define OG_DEFAULT_MAX_MODEL_BYTES    ((1LL << 31) - 1) /* protobuf's 2 GiB limit */
#define OG_DEFAULT_MAX_EXTERNAL_BYTES (1LL << 34)       /* 16 GiB */

typedef struct og_load_options {
    const og_allocator *allocator; /* NULL: the C library's */
    /* Folder against which external-data locations are resolved.  NULL: the folder of the
     * model file (og_model_load_file), or refuse external data (og_model_load_buffer). */
    const char *base_dir;
    /* Limits on what a model may declare, checked while the bytes are scanned, before the
     * model is decoded: beyond one, loading fails with OG_ERR_LIMIT and a message naming the
     * limit and this field.  0 takes the default (OG_DEFAULT_MAX_...); a negative value is
     * refused (OG_ERR_INVALID_ARG).  A model loaded with these options keeps them for every
     * later pass over it (nested subgraphs are walked under the same max_depth).
     *   max_depth: nesting, as OG_MAX_NESTING counts it (subgraphs within subgraphs plus
     *     sequence, map and optional types within types), at most OG_MAX_NESTING: a limit a
     *     caller may lower, not raise.  The raw protobuf nesting this allows is about 3 levels
     *     per level; decoding takes about 1 KB of stack per raw level on top of ~100 KB, so a
     *     thread loading a model at the default depth needs ~400 KB of stack.
     *   max_nodes, max_attributes, max_opsets: NodeProtos, AttributeProtos and opset
     *     imports, counted in every graph, subgraph, function and training graph together.
     *   max_values: value infos, initializers and node outputs, counted the same way.
     *   max_string_bytes: the longest name, op type, domain, doc string or metadata key or
     *     value (tensor and attribute bytes are not strings).
     *   max_model_bytes: the serialized model.
     *   max_external_bytes: external data, all tensors together, checked against each
     *     file's size before anything is read or allocated. */
    int max_depth;
    int max_opsets;
    int64_t max_nodes, max_values, max_attributes;
    int64_t max_string_bytes, max_model_bytes, max_external_bytes;
} og_load_options;

/* Parse an ONNX model, convert it to onnxgrad's graph, resolve every node's opset and
 * check that each op is implemented.  External data is read from files next to the model;
 * a location that escapes the model's folder (absolute, or with "..") is refused.
 * opts may be NULL.
 * Errors: OG_ERR_IO, OG_ERR_PARSE (bytes that are not an ONNX ModelProto),
 * OG_ERR_MODEL (cycles, dangling names, duplicate outputs, missing initializer data),
 * A model importing default-domain opset 1..6 is rewritten at load into its opset-7
 * equivalent (standard nodes; docs/ARCHITECTURE.md, "Opsets below 7") and imports opset 7
 * from then on: og_model_save and the training graphs write 7.
 * OG_ERR_UNSUPPORTED (IR version outside 3..10, default-domain opset outside 1..21, an
 * old-opset form with no opset-7 equivalent known at load, an op the executor does not
 * implement: the message names op, domain and opset), OG_ERR_LIMIT (a limit of
 * og_load_options: nesting depth, counts, string or file sizes), OG_ERR_NOMEM.
 * A path that is not a regular file (a FIFO, a device, a folder) is refused (OG_ERR_IO)
 * without blocking. */
OG_API og_status og_model_load_file(const char *path, const og_load_options *opts, og_model **out);
OG_API og_status og_model_load_buffer(const void *data, size_t size, const og_load_options *opts,
                                      og_model **out);

/* Like og_model_load_file, but an unknown op or one without a CPU kernel is not an error
 * (for `info`, or for converting and saving models).  Sessions on such a model fail at
 * creation with OG_ERR_UNSUPPORTED naming the op. */
OG_API og_status og_model_load_file_any_op(const char *path, const og_load_options *opts,
                                           og_model **out);

OG_API void og_model_free(og_model *m);

/* A copy of m that computes in float64: float32 initializers, inputs, outputs and value
 * infos become float64 (the float32 tensors inside sequence, map and optional types too),
 * and so do Cast targets and constant tensors; ai.onnx.ml ops whose output the spec fixes
 * to float then compute in float64.  Meant for finite-difference checks.  Errors: as
 * og_model_load_buffer. */
OG_API og_status og_model_convert_float64(const og_model *m, og_model **out);

/* Serialize the model (graph, initializers inline, value infos, metadata, opset imports).
 * *out_data is allocated with the model's allocator; release it with og_model_buffer_free.
 */
OG_API og_status og_model_save_buffer(const og_model *m, void **out_data, size_t *out_size);
OG_API void og_model_buffer_free(const og_model *m, void *data);
OG_API og_status og_model_save_file(const og_model *m, const char *path);

/* Graph inputs (initializers excluded) and outputs.  The names belong to the model.  A name
 * getter returns NULL for an index out of range (see Indices above), and only then. */
OG_API int og_model_input_count(const og_model *m);
OG_API int og_model_output_count(const og_model *m);
OG_API const char *og_model_input_name(const og_model *m, int i);
OG_API const char *og_model_output_name(const og_model *m, int i);

/* Declared type and shape of a graph input or output, as far as the model (or shape
 * inference) knows it.  Any of dtype, rank, dims and dim_names may be NULL; dims and
 * dim_names must hold OG_MAX_RANK entries.  *rank is -1 when unknown; a dim is -1 when
 * symbolic or unknown, and then dim_names[d] gets its symbol name or NULL.  The names
 * belong to the model.  Errors: OG_ERR_INVALID_ARG (a NULL model; i outside
 * 0..og_model_input_count() - 1, resp. og_model_output_count() - 1), with *dtype
 * OG_UNDEFINED, *rank 0 and every dims / dim_names entry 0 / NULL. */
OG_API og_status og_model_input_info(const og_model *m, int i, og_dtype *dtype, int *rank,
                                     int64_t *dims, const char **dim_names);
OG_API og_status og_model_output_info(const og_model *m, int i, og_dtype *dtype, int *rank,
                                      int64_t *dims, const char **dim_names);

/* The kind of graph input or output i and its type as text into buf (size bytes, always
 * NUL-terminated, cut to fit).  A tensor reads "float32 [N, 3]" (a dim: its value, its
 * symbol or ?; an unknown rank: [?]); the other kinds nest: "seq(map(int64, float32))",
 * "optional(seq(float32 [?, 2]))", a tensor inside them as its dtype followed by its shape
 * when the rank is known.  og_model_input_info and og_model_output_info give OG_UNDEFINED and
 * rank -1 for a value that is not a tensor.  kind and buf may be NULL.
 * Errors: OG_ERR_INVALID_ARG (a NULL model, an index out of range: *kind OG_KIND_TENSOR and
 * buf "" then). */
OG_API og_status og_model_input_type(const og_model *m, int i, og_kind *kind, char *buf,
                                     size_t size);
OG_API og_status og_model_output_type(const og_model *m, int i, og_kind *kind, char *buf,
                                      size_t size);

/* Initializers (the model's constant tensors, weights among them), in the model's order.
 * Both getters return NULL for an index out of range (see Indices above). */
OG_API int og_model_initializer_count(const og_model *m);
OG_API const char *og_model_initializer_name(const og_model *m, int i);
/* Read-only view of initializer i, owned by the model (never NULL for a valid index). */
OG_API const og_tensor *og_model_initializer(const og_model *m, int i);

/* How many TrainingInfoProtos (ONNX's ModelProto.training_info) the model carries; they are
 * kept through load and save, and og_trainer_create trains from one (algorithm mode). */
OG_API int og_model_training_info_count(const og_model *m);

/* Opset imports and general facts (0 for a NULL model). */
OG_API int og_model_opset_count(const og_model *m);
/* Domain and version of opset import i; domain "" is the default ONNX domain, and belongs to
 * the model.  A default-domain import of 1..6 reads 7 here: the loader upgraded the model
 * (og_model_load_file).  domain or version may be NULL.  Errors: OG_ERR_INVALID_ARG (i outside
 * 0..og_model_opset_count() - 1), with *domain NULL and *version 0. */
OG_API og_status og_model_opset(const og_model *m, int i, const char **domain, int64_t *version);
OG_API int64_t og_model_ir_version(const og_model *m);
OG_API int og_model_node_count(const og_model *m);
/* op_type and domain of node i (topological order; Gradient ops already expanded), owned by
 * the model.  Either pointer may be NULL.  Errors: OG_ERR_INVALID_ARG (i outside
 * 0..og_model_node_count() - 1), with *op_type and *domain NULL. */
OG_API og_status og_model_node_op(const og_model *m, int i, const char **op_type,
                                  const char **domain);
/* The name of node i ("" for an unnamed node); NULL for an index out of range. */
OG_API const char *og_model_node_name(const og_model *m, int i);

/* ---------------------------------------------------------------------------------- */
/* Sessions: running a model                                                           */
/* ---------------------------------------------------------------------------------- */

typedef struct og_session og_session;

typedef enum og_log_level { OG_LOG_DEBUG = 0, OG_LOG_INFO = 1, OG_LOG_WARN = 2 } og_log_level;
typedef void (*og_log_fn)(void *user, og_log_level level, const char *message);

/* The default memory budget of a session (og_session_options.max_memory): 4 GiB. */
#define OG_DEFAULT_MAX_MEMORY (4LL << 30)
/* The default for what a dataset load may read and decode (og_data_options.max_memory). */
#define OG_DEFAULT_MAX_DATA_MEMORY (2LL << 30)

typedef struct og_session_options {
    /* 0: one thread per core; 1: no threading; < 0 refused.  A session of n > 1 threads
     * starts n - 1 worker threads of its own (its subgraphs' sessions share them), freed
     * with it; between jobs they poll for the next for 0.5 ms before they sleep, unless the
     * environment's OMP_WAIT_POLICY is "passive" (read when the session is created): then
     * they sleep at once, which a machine shared with other busy processes wants. */
    int threads;
    const og_allocator *allocator; /* NULL: the model's */
    og_log_fn log;                 /* NULL: no logging */
    void *log_user;
    /* nonzero: check every float32/float64 output of every node for NaN/Inf (OG_ERR_RUNTIME
     * naming node and value); every node then runs by itself (a CPU session otherwise runs
     * chains of element-wise nodes as one loop, whose inner values are never stored, and
     * MatMuls read their operands' Transposes in place) */
    int debug;
    /* The random generator of ops that draw (Dropout in training mode, RandomUniform,
     * RandomNormal, their Like forms, Bernoulli, Multinomial): run k of the session draws
     * from (seed, k), so every run draws anew and the same seed repeats the same sequence;
     * each node draws its own stream (its name and its seed attribute). */
    uint64_t seed;
    /* The memory budget, in bytes: the most the session may hold at once of tensor data
     * (values alive during a run, its pool's idle blocks, outputs the caller has not freed
     * yet), kernel scratch, and the sessions, values and stacked outputs of the If, Loop
     * and Scan subgraphs it runs (one budget, however deep they nest or however many
     * iterations they take).  A run that would go past it fails with OG_ERR_LIMIT before
     * allocating, naming the node, the bytes it asked for and the budget; idle blocks are
     * freed first to make room.  0: OG_DEFAULT_MAX_MEMORY; < 0 refused; INT64_MAX: no
     * limit.  Inputs and initializers are the caller's and the model's, not counted. */
    int64_t max_memory;
} og_session_options;

/* A session runs one model.  Creating it finds each node's CPU kernel and the last node that
 * reads each value; nothing depends on input shapes yet.  The model must outlive the
 * session.  opts may be NULL (defaults above).
 * An activation (Relu, Clip with constant bounds, HardSwish, HardSigmoid, Sigmoid, or
 * x * Sigmoid(x)) that alone reads a Conv or ConvTranspose output is computed by the
 * convolution's kernel while its output is in cache: the values are those of the nodes
 * run one by one, bit for bit, the model is not changed, and og_session_run_named asking
 * for the convolution's own output runs the nodes one by one.  The session keeps the
 * largest scratch memory a kernel asked for (column buffers) until it is freed.
 * Errors: OG_ERR_INVALID_ARG (NULL model or out, threads < 0), OG_ERR_UNSUPPORTED (an op
 * that is not implemented or has no CPU kernel, as a model loaded with
 * og_model_load_file_any_op may have: the message names node and op), OG_ERR_NOMEM. */
OG_API og_status og_session_create(const og_model *m, const og_session_options *opts,
                                   og_session **out);
OG_API void og_session_free(og_session *s);

/* The random generator's state: the seed and the number of runs made (each run, partial
 * ones included, counts one).  Setting it makes the next run draw as run `runs` of a
 * session seeded with `seed` (to repeat a run, or to continue from a checkpoint).
 * Errors: OG_ERR_INVALID_ARG (NULL session). */
OG_API og_status og_session_get_rng(const og_session *s, uint64_t *seed, uint64_t *runs);
OG_API og_status og_session_set_rng(og_session *s, uint64_t seed, uint64_t runs);

/* Run the model.  inputs[i] is bound to the graph input named input_names[i]; every graph
 * input without an initializer that an output depends on must be given (nodes no output
 * needs do not run); an input that has an initializer may be given to override it.  The
 * inputs are only read, and only during the call.
 * outputs[j] receives a new value (owned by the caller) for each graph output, in
 * og_model_output_* order: a tensor, or a sequence, map or optional for an output of such a
 * type (og_tensor_kind); the array must hold og_model_output_count() entries.  An output
 * may outlive the session.  On failure every outputs[j] is
 * NULL.  Input dtypes and shapes are checked against the declared ones: a fixed dim must
 * match, a named symbolic dim must take one value across all inputs; a sequence, map or
 * optional input must have the declared kinds, nested, its tensors the declared dtypes
 * (OG_ERR_TYPE otherwise, saying where it differs).
 * Nothing is planned ahead or cached between runs: each run walks the nodes in topological
 * order, infers each node's output shapes from the actual inputs, takes the output buffers
 * from the session's memory pool, calls the kernel, and hands a value's buffer back to the
 * pool right after its last reader.  Only the pool's blocks carry over from run to run, so
 * a later run reuses the memory of earlier ones.
 * Errors: OG_ERR_INVALID_ARG (NULL session or arrays, unknown or repeated name, missing
 * input), OG_ERR_TYPE, OG_ERR_SHAPE (including shapes an op does not accept, and sizes
 * that overflow), OG_ERR_RUNTIME (e.g. an index out of range in the data, NaN/Inf with
 * debug), OG_ERR_UNSUPPORTED (an attribute or dtype combination a kernel does not handle),
 * OG_ERR_LIMIT (the memory budget, og_session_options.max_memory), OG_ERR_BUSY (the session
 * is running a call in another thread: one run at a time per session), OG_ERR_NOMEM. */
OG_API og_status og_session_run(og_session *s, const char *const *input_names,
                                const og_tensor *const *inputs, int n_inputs, og_tensor **outputs);

/* Same, for a chosen subset of outputs by name: outputs[j] receives output_names[j].  Any
 * value of the graph (not only graph outputs) may be named.  Only the nodes those values
 * depend on run, and only the graph inputs they depend on must be given. */
OG_API og_status og_session_run_named(og_session *s, const char *const *input_names,
                                      const og_tensor *const *inputs, int n_inputs,
                                      const char *const *output_names, int n_outputs,
                                      og_tensor **outputs);

/* ---------------------------------------------------------------------------------- */
/* Gradients                                                                           */
/* ---------------------------------------------------------------------------------- */

/* A gradient object: a model, the weights to train, the inputs that need gradients and the
 * outputs to differentiate, compiled into a training graph (docs/ARCHITECTURE.md): its
 * inputs are the model inputs, then the trained weights (their initializer values as
 * defaults), then one gradient seed per selected output named `<output>_grad`; its outputs
 * are the selected outputs, then `<input>_grad` per input needing a gradient, then
 * `<weight>_grad`. */
typedef struct og_grad og_grad;

/* Where a gradient object runs.  Only the CPU is implemented; OG_DEVICE_CUDA is refused
 * with OG_ERR_UNSUPPORTED until the CUDA backend lands. */
typedef enum og_device { OG_DEVICE_CPU = 0, OG_DEVICE_CUDA = 1 } og_device;

typedef struct og_grad_options {
    /* Weights to train, any order.  NULL: every float16/float/double initializer except
     * BatchNormalization's running statistics (initializers read only as its inputs 3 and
     * 4, mean and var: PyTorch keeps them as buffers, not parameters); naming them here
     * trains them too.  An unknown name fails with the list of candidates; a repeated or
     * non-float one fails, except an integer initializer read only as the zero point of
     * QuantizeLinear/DequantizeLinear nodes (quantization-aware training): it is
     * differentiated as the real number it holds (PyTorch's learnable zero point: -scale
     * per saturated element) and its gradient is a float tensor of the scale's type (an
     * integer input's gradient is reported in float).  og_trainer refuses it (its
     * optimizers update float and double weights).
     * The coefficients and intercepts of ai.onnx.ml LinearRegressor and LinearClassifier
     * nodes (attributes in the model) are weights too, named "<node>_coefficients" ([T, F])
     * and "<node>_intercepts" ([T]): the model is differentiated through a copy where those
     * nodes are MatMul/Add on such initializers (docs/ARCHITECTURE.md), and
     * og_trainer_export writes trained values back into the attributes. */
    const char *const *weights;
    int n_weights;
    /* Graph inputs that need gradients.  NULL: every float input; inputs non-NULL with
     * n_inputs 0: none. */
    const char *const *inputs;
    int n_inputs;
    /* Outputs to differentiate.  NULL: every graph output.  An output ZipMap computes (a
     * sequence of maps) is differentiated as the probabilities tensor it packs: that tensor
     * is the output og_grad_output_name lists, its seed "<tensor>_grad".  Outputs that are
     * not float tensors (labels) are computed but get no seed. */
    const char *const *outputs;
    int n_outputs;
    int threads;                   /* as og_session_options */
    const og_allocator *allocator; /* NULL: the model's */
    og_log_fn log;                 /* told, among others, of weights that get a zero gradient */
    og_device device;              /* OG_DEVICE_CPU (0) */
    int device_index;              /* which GPU for OG_DEVICE_CUDA (cuda:N) */
    void *log_user;
    int debug;     /* nonzero: check every node's outputs for NaN/Inf, with names */
    uint64_t seed; /* as og_session_options: Dropout's masks, new at every run */
    /* Memory budget of each session the object and its instances run (as
     * og_session_options.max_memory: 0 is OG_DEFAULT_MAX_MEMORY); a training forward's saved
     * state counts until its backward. */
    int64_t max_memory;
} og_grad_options;

/* Build the training graph of m.  The model must outlive the gradient object.  opts may be
 * NULL (every default above).
 * Errors: OG_ERR_INVALID_ARG (NULL model or out, bad or repeated names, a count out of
 * range, nothing to differentiate), OG_ERR_UNSUPPORTED (a device other than OG_DEVICE_CPU; an op
 * without a gradient rule on a path a gradient must take: the message names the node and
 * op; an op without a CPU kernel), OG_ERR_NOMEM. */
OG_API og_status og_grad_create(const og_model *m, const og_grad_options *opts, og_grad **out);
OG_API void og_grad_free(og_grad *g);

/* The selected outputs, the inputs needing gradients and the trained weights, in the order
 * of og_grad_run's arrays.  The names belong to g.  A name getter returns NULL for an index
 * out of range (see Indices above), and only then. */
OG_API int og_grad_output_count(const og_grad *g);
OG_API const char *og_grad_output_name(const og_grad *g, int i);
OG_API int og_grad_input_count(const og_grad *g);
OG_API const char *og_grad_input_name(const og_grad *g, int i);
OG_API int og_grad_weight_count(const og_grad *g);
OG_API const char *og_grad_weight_name(const og_grad *g, int i);

/* The current value of trained weight `name`, owned by g and valid while g lives
 * (og_grad_set_weight changes its contents in place).  Errors: OG_ERR_INVALID_ARG (a NULL
 * argument, not a trained weight), with *value NULL. */
OG_API og_status og_grad_get_weight(const og_grad *g, const char *name, const og_tensor **value);
/* Copy `value` into trained weight `name`; dtype and shape must match.  Instances use the
 * new value from their next call.  It is refused with OG_ERR_BUSY while og_grad_run or an
 * instance's forward or backward runs in another thread (and those are refused while it
 * runs): weights never change under a run.
 * Errors: OG_ERR_INVALID_ARG, OG_ERR_TYPE, OG_ERR_SHAPE, OG_ERR_BUSY. */
OG_API og_status og_grad_set_weight(og_grad *g, const char *name, const og_tensor *value);

/* The training graph as a model (owned by g): inspect it or save it with
 * og_model_save_file. */
OG_API const og_model *og_grad_training_model(const og_grad *g);

/* The eval graph as a model (owned by g): the forward graph with the trained weights listed
 * as inputs after the model inputs (their values as defaults). */
OG_API const og_model *og_grad_eval_model(const og_grad *g);

/* Write the training graph to FOLDER/<prefix>training<suffix>.onnx and the eval graph to
 * FOLDER/<prefix>eval<suffix>.onnx (prefix and suffix may be NULL).  The folder must exist.
 * In the files (IR version >= 4) the trained weights are initializers holding their current
 * values and are not listed as graph inputs: a runtime treats them as constants (onnxruntime
 * warns once per initializer that is also an input, and folds none of them); the models of
 * og_grad_training_model / og_grad_eval_model keep them as inputs with defaults.
 * Before writing, each graph is serialized and loaded back (every node resolved, types and
 * shapes inferred over the saved graph) and a session is created on it, so that no graph
 * that would not load or bind is written (`onnxgrad export --input` also runs it).
 * Errors: OG_ERR_IO, OG_ERR_NOMEM, OG_ERR_INTERNAL (a graph that would not load back:
 * the message says why; nothing is written). */
OG_API og_status og_grad_save_graphs(const og_grad *g, const char *folder, const char *prefix,
                                     const char *suffix);

/* Save a configured gradient object (the seed's pickling): the model with the current
 * weight values, and which weights, inputs and outputs are differentiated, as one ONNX
 * model (the eval graph, with the configuration in its metadata under "onnxgrad.*").
 * *data is allocated with g's allocator and freed with og_grad_buffer_free.  g is only read:
 * several threads may save one gradient object at once (no og_grad_set_weight meanwhile).
 * Errors: OG_ERR_INVALID_ARG (a NULL argument), OG_ERR_NOMEM; on failure *data is NULL
 * and *size 0. */
OG_API og_status og_grad_save_buffer(const og_grad *g, void **data, size_t *size);
OG_API void og_grad_buffer_free(const og_grad *g, void *data);
/* Rebuild a gradient object from og_grad_save_buffer's bytes, without the original model.
 * opts gives threads, allocator, log and debug; its weights/inputs/outputs must be NULL
 * (they come from the bytes).  Errors: OG_ERR_PARSE, OG_ERR_MODEL (bytes that are not a
 * saved gradient object), as og_grad_create otherwise. */
OG_API og_status og_grad_load_buffer(const void *data, size_t size, const og_grad_options *opts,
                                     og_grad **out);

/* Forward and backward in one call.  inputs bind the model inputs by name (weights too, to
 * override their current values).  grad_outputs[j] is the gradient of output j
 * (og_grad_output_name order); NULL, or a NULL entry, means ones of that output's shape
 * (which costs one extra forward run to learn the shape).  outputs receives
 * og_grad_output_count() new tensors; grads receives og_grad_input_count() +
 * og_grad_weight_count() new tensors: the inputs' gradients, then the weights'; on failure
 * every entry of both is NULL.  g's scratch state changes: one og_grad_run at a time per
 * gradient object (another thread's meanwhile fails with OG_ERR_BUSY; instances run in
 * parallel with it).
 * Errors: OG_ERR_INVALID_ARG (NULL g or arrays, more inputs than the model has), OG_ERR_BUSY
 * (og_grad_run running in another thread, or og_grad_set_weight), as og_session_run
 * otherwise. */
OG_API og_status og_grad_run(og_grad *g, const char *const *input_names,
                             const og_tensor *const *inputs, int n_inputs,
                             const og_tensor *const *grad_outputs, og_tensor **outputs,
                             og_tensor **grads);

/* Instances: the seed's forward/backward mechanism.  An instance runs the graphs of one
 * gradient object with sessions of its own; several instances of one object may run in
 * different threads at once (the object must outlive them and must not be changed by
 * og_grad_set_weight meanwhile: it is refused then).  One instance is used by one thread at
 * a time: a forward or backward while another thread's runs on the same instance fails
 * with OG_ERR_BUSY.
 * og_grad_new_instance errors: OG_ERR_INVALID_ARG (NULL argument), as og_session_create. */
typedef struct og_instance og_instance;

OG_API og_status og_grad_new_instance(og_grad *g, og_instance **out);
OG_API void og_instance_free(og_instance *inst);

/* Forward.  inputs bind the model inputs by name (and trained weights, to override their
 * values for this call).  outputs receives og_grad_output_count() new tensors, all NULL on
 * failure (and no state is pushed).  Errors: OG_ERR_INVALID_ARG (NULL inst or outputs), as
 * og_session_run otherwise.
 * training == 0: inference through the eval graph, no state kept.
 * training != 0: runs the forward half of the training graph and pushes a saved state
 * holding exactly the values the backward half reads; several forwards may be pending. */
OG_API og_status og_instance_forward(og_instance *inst, const char *const *input_names,
                                     const og_tensor *const *inputs, int n_inputs, int training,
                                     og_tensor **outputs);

/* Backward for the newest pending training forward (its state is popped and freed).
 * grad_outputs[j] is the gradient of output j and must have that output's dtype and shape
 * exactly; NULL (or a NULL entry) means ones.  grads receives og_grad_input_count() +
 * og_grad_weight_count() new tensors: inputs' gradients, then weights'; on failure all NULL
 * and the state stays pending.  Errors: OG_ERR_INVALID_ARG (NULL argument, no pending
 * forward), OG_ERR_SHAPE / OG_ERR_TYPE (a gradient that does not match its output), as
 * og_session_run otherwise. */
OG_API og_status og_instance_backward(og_instance *inst, const og_tensor *const *grad_outputs,
                                      og_tensor **grads);

/* Pending training forwards, and the bytes their saved states hold (0 for NULL). */
OG_API int og_instance_pending(const og_instance *inst);
OG_API size_t og_instance_saved_bytes(const og_instance *inst);

/* Bound calls: forward and backward over tensors bound once to an instance, for language
 * bindings that call them many times with the same arrays (the Python package does: a
 * binding there costs a few attribute lookups instead of one C call per tensor).
 *
 * Forward slots 0 .. og_instance_slot_count(inst) - 1 are the model inputs (graph inputs
 * without an initializer, in the model's order) followed by the trained weights
 * (og_grad_weight_name order); og_instance_slot_name names them.  Backward slots
 * 0 .. og_grad_output_count() - 1 are the gradient seeds of the selected outputs.
 *
 * og_instance_bind(inst, backward, slot, t) binds t (backward == 0: forward slot, else a
 * backward slot) for every later bound call until the slot is bound again; t NULL unbinds
 * (a weight's slot then uses the weight's current value, a seed's slot ones).  The instance
 * takes ownership of t (freed on failure too).  The memory t wraps (og_tensor_wrap) is read
 * during the bound calls, and also later by the backward of every training forward that
 * read it: such a forward keeps a view of the tensors the backward half reads (model inputs,
 * overriding weights, intermediate values that share their memory) instead of copying them,
 * so the caller keeps that memory alive and unchanged until the matching backward has run
 * (or the instance is freed).  Errors: OG_ERR_INVALID_ARG (NULL inst, slot out of range),
 * OG_ERR_BUSY (another thread is inside a call on inst: t is freed, the slot unchanged).
 *
 * og_instance_forward_bound and og_instance_backward_bound behave as og_instance_forward and
 * og_instance_backward with the bound tensors as inputs (and seeds).  info, when not NULL,
 * receives og_tensor_info of the results (OG_TENSOR_INFO_SIZE entries per result).  block,
 * when not NULL, is block_bytes of the caller's memory: the results that are non-empty
 * numeric tensors of at most OG_BLOCK_RESULT_MAX bytes are copied into it, one after the
 * other at 64-byte aligned offsets, as long as they fit (the others are handed over as
 * usual); a result copied there
 * is NULL in outputs/grads and its info gives its address in the block.  For a binding, one
 * block for the small results of a call costs less than one object per result; larger
 * results are never copied.  Errors: as
 * og_instance_forward / og_instance_backward (OG_ERR_BUSY included: one call at a time per
 * instance, bound or not); OG_ERR_INVALID_ARG (NULL inst or result array). */
#define OG_BLOCK_RESULT_MAX 16384
OG_API int og_instance_slot_count(const og_instance *inst);
OG_API const char *og_instance_slot_name(const og_instance *inst, int slot);
OG_API og_status og_instance_bind(og_instance *inst, int backward, int slot, og_tensor *t);
OG_API og_status og_instance_forward_bound(og_instance *inst, int training, og_tensor **outputs,
                                           int64_t *info, void *block, size_t block_bytes);
OG_API og_status og_instance_backward_bound(og_instance *inst, og_tensor **grads, int64_t *info,
                                            void *block, size_t block_bytes);

/* ---------------------------------------------------------------------------------- */
/* Datasets                                                                            */
/* ---------------------------------------------------------------------------------- */

/* A dataset: N samples of features (a float32 tensor [N, ...]), targets ([N] or [N, ...],
 * float32 for regression or int64 for class labels) and optional sample weights (float32
 * [N]).  Immutable once made. */
typedef struct og_dataset og_dataset;

typedef struct og_data_options {
    /* CSV.  delimiter 0: ',' ('\t' for a .tsv file).  no_header 0: the first line names the
     * columns. */
    char delimiter;
    int no_header;
    /* Target columns: names, or 0-based indices written as decimal strings ("3"; with a
     * header, a string that names no column is read as an index).  NULL: the last column
     * (the one before it when the last is the weight column).  For .npz: the array name of
     * the targets (n_targets 1); NULL tries "y", "Y", "target", "targets", "label", "labels". */
    const char *const *targets;
    int n_targets;
    /* Feature columns (names or indices as above).  NULL: every column that is neither a
     * target nor the weight column.  For .npz: features[0] names the array; NULL tries
     * "X", "x", "data", "features", then the one array left besides the targets and the
     * sample weights (an error naming the arrays when several are left). */
    const char *const *features;
    int n_features;
    /* Sample-weight column (.npz: array name).  NULL: none (for .npz, an array named
     * "sample_weight" is used when present). */
    const char *weight;
    /* OG_FLOAT (default when OG_UNDEFINED) or OG_INT64 (class labels: each target cell
     * must then hold an integer). */
    og_dtype target_dtype;
    /* The most bytes a load may read and decode: the file, then every .npz member as it
     * inflates (its declared size checked before anything is allocated).  Beyond it the load
     * fails with OG_ERR_LIMIT naming this field.  0: OG_DEFAULT_MAX_DATA_MEMORY; < 0
     * refused. */
    int64_t max_memory;
} og_data_options;

/* Read a dataset from a CSV file (.csv, .tsv, .txt; any other extension not .npy/.npz),
 * a .npy file (a 2-D array whose columns are chosen by index as for a CSV without header)
 * or a .npz archive (numpy's savez or savez_compressed; arrays named as above, their first
 * dim the samples).  opts may be NULL.
 *  - CSV: RFC 4180 quoting (a quoted field may hold the delimiter, newlines and ""), LF or
 *    CRLF, a UTF-8 BOM skipped, blank lines skipped, spaces around a value ignored.  A cell
 *    is a decimal number ("-1.5e3"; "nan", "inf" too), read independently of the C locale;
 *    an empty cell is an error.  Columns not selected are not parsed.  Features are
 *    float32 [N, F]; targets [N] (one column) or [N, k]; weights float32 [N].
 *  - .npy and .npz: float16/32/64, int32/64 and bool arrays (og_npy_load's dtypes).
 *    Features and weights become float32, a features array keeps its shape ([N, 1, 8, 8]
 *    stays so); weights must be [N].  Targets keep their shape and become float32, or int64
 *    when target_dtype is OG_INT64 (integers and bools widened; floats must be integral).
 * Errors: OG_ERR_IO; OG_ERR_PARSE (a non-numeric cell, or a non-integer one for int64
 * targets: the message names line and column; a ragged row; a malformed archive);
 * OG_ERR_INVALID_ARG (a column or array that does not exist, listing those that do; an
 * empty dataset); OG_ERR_SHAPE (arrays whose sample counts differ, a .npy that is not 2-D);
 * OG_ERR_TYPE (a non-integral float target in an array when target_dtype is OG_INT64);
 * OG_ERR_UNSUPPORTED (an array dtype outside the list above, a zip method other than
 * stored or deflate); OG_ERR_LIMIT (past max_memory); OG_ERR_NOMEM. */
OG_API og_status og_dataset_load(const char *path, const og_data_options *opts,
                                 const og_allocator *alloc, og_dataset **out);

/* The same from bytes in memory (the caller keeps them; they are copied as needed):
 * `name`'s extension chooses the format as for a path, and `name` stands for the data in
 * messages. */
OG_API og_status og_dataset_load_buffer(const void *data, size_t size, const char *name,
                                        const og_data_options *opts, const og_allocator *alloc,
                                        og_dataset **out);

/* A dataset holding copies of x ([N, ...]), y ([N] or [N, ...]) and w ([N], may be NULL).
 * Errors: OG_ERR_SHAPE (sample counts differ), OG_ERR_TYPE (x or w not float32, y neither
 * float32 nor int64), OG_ERR_INVALID_ARG (N == 0). */
OG_API og_status og_dataset_from_tensors(const og_tensor *x, const og_tensor *y, const og_tensor *w,
                                         const og_allocator *alloc, og_dataset **out);
OG_API void og_dataset_free(og_dataset *d);

OG_API int64_t og_dataset_size(const og_dataset *d);
/* Views owned by the dataset; weights is NULL when there are none. */
OG_API const og_tensor *og_dataset_features(const og_dataset *d);
OG_API const og_tensor *og_dataset_targets(const og_dataset *d);
OG_API const og_tensor *og_dataset_weights(const og_dataset *d);
/* Name of feature column i (CSV with header).  NULL for a dataset without a header (no
 * message), and for an index out of range (og_last_error() names it and the range). */
OG_API const char *og_dataset_feature_name(const og_dataset *d, int64_t i);

/* Split off the last round(fraction * N) samples of a seeded shuffle as a validation set;
 * train gets the rest, both in shuffled order.  The shuffle is Fisher-Yates driven by
 * xoshiro256** seeded through splitmix64: the same seed gives the same split everywhere.
 * 0 < fraction < 1 and both parts non-empty, else OG_ERR_INVALID_ARG. */
OG_API og_status og_dataset_split(const og_dataset *d, double fraction, uint64_t seed,
                                  og_dataset **train, og_dataset **val);

/* Gather the samples indices[0..n-1] into new tensors (x, y, and w when the dataset has
 * weights; *w is set to NULL otherwise; w may be NULL to skip them).  Indices may repeat.
 * Errors: OG_ERR_INVALID_ARG (an index out of range). */
OG_API og_status og_dataset_batch(const og_dataset *d, const int64_t *indices, int64_t n,
                                  og_tensor **x, og_tensor **y, og_tensor **w);

/* ---------------------------------------------------------------------------------- */
/* Losses                                                                              */
/* ---------------------------------------------------------------------------------- */

typedef enum og_loss_kind {
    OG_LOSS_SQUARED = 0,       /* (y - t)^2 */
    OG_LOSS_ABSOLUTE = 1,      /* |y - t| */
    OG_LOSS_ELASTIC = 2,       /* l1_ratio |y - t| + (1 - l1_ratio) (y - t)^2 */
    OG_LOSS_HUBER = 3,         /* 0.5 e^2 where |e| <= delta, delta (|e| - 0.5 delta) elsewhere */
    OG_LOSS_LOG = 4,           /* binary log loss on logits y, t in {0, 1} (float) */
    OG_LOSS_CROSS_ENTROPY = 5, /* softmax cross-entropy on logits y [N, C, ...], int64 t */
    OG_LOSS_NLL = 6,           /* negative log-likelihood on log-probabilities, int64 t */
    OG_LOSS_PROBA = 7          /* -log q[t], q = p / sum_c p, on probabilities p [N, C, ...]
                                  (q clipped above 0: 1e-12, float64 1e-15), int64 t:
                                  scikit-learn's log_loss, for classifiers that output
                                  probabilities */
} og_loss_kind;

typedef enum og_reduction { OG_REDUCTION_MEAN = 0, OG_REDUCTION_SUM = 1 } og_reduction;

typedef struct og_loss_options {
    og_loss_kind kind;
    og_reduction reduction;
    /* The model output compared to the target; NULL: the first float tensor output.  An
     * output ZipMap makes (a sequence of maps) stands for the probabilities tensor it
     * packs. */
    const char *output;
    /* New input holding the targets; NULL: "label" (or "label_1", ... when the model has a
     * value named so).  New scalar output; NULL: "loss" (or "loss_1", ...). */
    const char *target_name;
    const char *loss_name;
    /* Name of a new float input [N] of sample weights; NULL: none.  With weights, MEAN is
     * sum(w_i l_ij) / sum(w_i * per-sample count) (0 when all weights are 0) and SUM is
     * sum(w_i l_ij). */
    const char *sample_weight_name;
    double l1_ratio; /* OG_LOSS_ELASTIC, in [0, 1] */
    double delta;    /* OG_LOSS_HUBER, > 0 */
    /* Penalties added to the loss: l1 * sum|w| + l2 * sum w^2 over the weights named in
     * penalty_weights (NULL: every float initializer of rank >= 2). */
    double l1, l2;
    const char *const *penalty_weights;
    int n_penalty_weights;
} og_loss_options;

/* Defaults: kind, MEAN, NULL names, l1_ratio 0.5, delta 1, no penalty. */
OG_API void og_loss_options_init(og_loss_options *o, og_loss_kind kind);

/* A new model computing a loss from model m: m's graph, a new input for the targets (of the
 * output's shape and dtype, or int64 [N, ...] for CROSS_ENTROPY, NLL and PROBA) and, when
 * asked, one for sample weights; outputs: the scalar loss first, then m's outputs.  The
 * result is a standard ONNX model (save it, run it, differentiate it); its constants are
 * Constant nodes, so its initializers are the model's and nothing else.  Its metadata
 * records which output and inputs the loss added and which value it compares
 * ("onnxgrad.loss", "onnxgrad.loss_inputs", "onnxgrad.loss_output"), so og_trainer_export
 * can strip them, and how it combines samples ("onnxgrad.loss_reduction": "mean", "sum" or
 * "sum+penalty"; data-parallel og_trainer_fit reads it).  CROSS_ENTROPY and NLL need a
 * default opset >= 12, PROBA >= 9.
 * Errors: OG_ERR_INVALID_ARG (unknown output or weight, a name already taken, bad
 * l1_ratio/delta), OG_ERR_TYPE (a non-float output), OG_ERR_UNSUPPORTED (opset). */
OG_API og_status og_model_add_loss(const og_model *m, const og_loss_options *o, og_model **out);

/* ---------------------------------------------------------------------------------- */
/* Optimizers                                                                          */
/* ---------------------------------------------------------------------------------- */

typedef enum og_optimizer_kind {
    OG_OPTIMIZER_SGD = 0,    /* w -= lr * g, with momentum / Nesterov when momentum > 0 */
    OG_OPTIMIZER_ADAM = 1,   /* Kingma & Ba, bias-corrected; weight_decay added to g */
    OG_OPTIMIZER_ADAMW = 2,  /* Adam with decoupled weight decay: w *= 1 - lr * wd */
    OG_OPTIMIZER_ADAGRAD = 3 /* h += g^2; w -= lr_t * g / (sqrt(h) + eps) */
} og_optimizer_kind;

typedef enum og_lr_schedule {
    OG_LR_CONSTANT = 0,   /* lr */
    OG_LR_OPTIMAL = 1,    /* scikit-learn's: 1 / (alpha (t0 + t)), t0 from Bottou's heuristic */
    OG_LR_INVSCALING = 2, /* scikit-learn's: lr / (t + 1)^power_t */
    OG_LR_LINEAR = 3,     /* linear warm-up over warmup_steps, then linear decay to min_lr at
                             total_steps */
    OG_LR_COSINE = 4,     /* linear warm-up, then cosine decay to min_lr at total_steps */
    OG_LR_STEP = 5        /* lr * gamma^floor(t / step_size) */
} og_lr_schedule;

/* t above is the number of steps already taken (0 for the first step). */
typedef struct og_optimizer_options {
    og_optimizer_kind kind;
    double lr;
    double momentum; /* SGD: 0 plain, else heavy ball v = momentum v + g */
    int nesterov;    /* SGD: step along g + momentum v */
    double beta1, beta2, eps;
    double weight_decay;        /* L2 added to the gradient (AdamW: decoupled) */
    double lr_decay;            /* Adagrad: lr_t = lr / (1 + t lr_decay) */
    double initial_accumulator; /* Adagrad: starting value of h */
    double clip_norm;           /* > 0: scale gradients so that their global L2 norm <= clip_norm */
    og_lr_schedule schedule;
    double alpha;                      /* OG_LR_OPTIMAL */
    double power_t;                    /* OG_LR_INVSCALING */
    int64_t warmup_steps, total_steps; /* OG_LR_LINEAR, OG_LR_COSINE */
    double min_lr;
    int64_t step_size; /* OG_LR_STEP */
    double gamma;
} og_optimizer_options;

/* Defaults of PyTorch's optimizers: SGD lr 0.01, momentum 0; Adam/AdamW lr 1e-3, betas
 * (0.9, 0.999), eps 1e-8, AdamW weight_decay 0.01; Adagrad lr 0.01, eps 1e-10; constant
 * schedule, alpha 1e-4, power_t 0.25, gamma 0.1, step_size 1, no clipping. */
OG_API void og_optimizer_options_init(og_optimizer_options *o, og_optimizer_kind kind);

/* The learning rate of step t (0-based) under o's schedule. */
OG_API double og_optimizer_lr(const og_optimizer_options *o, int64_t t);

/* ---------------------------------------------------------------------------------- */
/* Trainer                                                                             */
/* ---------------------------------------------------------------------------------- */

/* A trainer owns a gradient object of a loss model (a model whose output `loss` is a
 * scalar, such as og_model_add_loss makes), an optimizer and its state, a step counter and
 * a random generator for shuffling. */
typedef struct og_trainer og_trainer;

typedef struct og_trainer_options {
    const char *const *weights; /* as og_grad_options: NULL = every float initializer but
                                   BatchNormalization's running statistics */
    int n_weights;
    const char *loss; /* the loss output; NULL: "onnxgrad.loss" metadata, else output 0 */
    int threads;
    const og_allocator *allocator;
    og_log_fn log;
    void *log_user;
    uint64_t seed;      /* the shuffles of og_trainer_fit (og_dataset_split takes its own) */
    int64_t max_memory; /* memory budget of each session (og_session_options.max_memory) */
} og_trainer_options;

/* The loss model must outlive the trainer.  opts may be NULL.  A trainer serves one thread
 * at a time: a non-const og_trainer_* call (step, evaluate, predict, set_weight,
 * load_checkpoint, fit) made while another thread is inside one fails with OG_ERR_BUSY;
 * calls nested in one thread (a fit callback predicting) are allowed.
 *
 * Algorithm mode: with optim == NULL, the model must carry one TrainingInfoProto (ONNX's
 * ModelProto.training_info, e.g. from og_trainer_export_training_model) and the trainer runs
 * it instead of differentiating the model.  Its "weights" are the initializers the
 * update_binding and initialization_binding name (of the main graph or of the algorithm
 * graph; opts->weights is ignored), held by the trainer, starting from the initializers'
 * values.  The initialization graph, when it has nodes or outputs, runs once here and its
 * initialization_binding sets the initializers it names.  Each og_trainer_step runs the main
 * graph and the algorithm graph combined (as ONNX defines it: inputs, initializers, nodes and
 * outputs of both; Gradient ops of ai.onnx.preview.training are expanded), with the inputs
 * given by name and the held values for the bound initializers, then sets every
 * update_binding key to its output's value; a NaN or infinite loss or new value, or one of
 * another dtype or shape, fails with OG_ERR_RUNTIME / OG_ERR_SHAPE and changes nothing.  The
 * loss is opts->loss, else the output named by the "onnxgrad.loss" metadata, else the
 * algorithm graph's first float scalar output that no update_binding names.  The step count
 * starts at the value of the initializer the "onnxgrad.training_step" metadata names (an
 * export's), else 0.  og_trainer_evaluate runs the main graph (the combined one when only the
 * algorithm computes the loss); get/set_weight, checkpoints and both exports work on the bound
 * initializers; og_trainer_lr is NaN.
 *
 * Errors: as og_grad_create; OG_ERR_INVALID_ARG (bad optimizer options: lr < 0, betas
 * outside [0, 1), ...; no optimizer options and no TrainingInfoProto; a loss that is no value
 * of the model); algorithm mode: OG_ERR_MODEL (a binding whose key is no initializer, or
 * whose value is no output of the algorithm or main graph, a key bound twice, an invalid
 * combined graph), OG_ERR_SHAPE (a non-scalar loss), OG_ERR_UNSUPPORTED (several
 * TrainingInfoProtos; ops onnxgrad does not run). */
OG_API og_status og_trainer_create(const og_model *loss_model, const og_optimizer_options *optim,
                                   const og_trainer_options *opts, og_trainer **out);
OG_API void og_trainer_free(og_trainer *t);

/* One optimization step on a batch: forward, backward, update of every trained weight.
 * BatchNormalization nodes in training mode (training_mode 1, with their running_mean and
 * running_var outputs, as PyTorch exports a model in training mode) whose mean and var are
 * initializers not trained get them updated as PyTorch does: running = running * momentum +
 * batch * (1 - momentum) with ONNX's momentum attribute, the batch variance unbiased for
 * the running var; checkpoints and og_trainer_export keep them.  Dropout in training mode
 * draws a new mask at each step (from the trainer's seed and the step count).
 * *loss receives the batch loss (before the update; may be NULL).  A NaN or infinite loss
 * or gradient fails with OG_ERR_RUNTIME naming the step, and the weights are not changed.
 * With a communicator (og_trainer_set_comm) the step is collective: it is
 * og_trainer_step_shard with share 1 / size, every rank's batch counting equally.
 * Errors: as og_grad_run. */
OG_API og_status og_trainer_step(og_trainer *t, const char *const *input_names,
                                 const og_tensor *const *inputs, int n_inputs, double *loss);
/* The loss on a batch, weights unchanged. */
OG_API og_status og_trainer_evaluate(og_trainer *t, const char *const *input_names,
                                     const og_tensor *const *inputs, int n_inputs, double *loss);

/* Inference with the current weights: run the model's forward graph (Dropout off,
 * BatchNormalization with running statistics) and return output `output` (any value of the
 * loss model; NULL: the value the loss compares with the targets, as the "onnxgrad.loss_output"
 * metadata names it, else the first output after the loss) as a new tensor.  Only the inputs that
 * output needs must be given (no targets for a prediction). */
OG_API og_status og_trainer_predict(og_trainer *t, const char *const *input_names,
                                    const og_tensor *const *inputs, int n_inputs,
                                    const char *output, og_tensor **out);

OG_API int64_t og_trainer_step_count(const og_trainer *t);
/* The learning rate the next step will use (NaN in algorithm mode). */
OG_API double og_trainer_lr(const og_trainer *t);
/* The trained weights (algorithm mode: the bound initializers); names owned by t, NULL for
 * an index out of range (og_last_error() names it and the range).  get_weight's view is
 * owned by t and valid while it lives (steps and set_weight change its contents); *value
 * is NULL after a failure.  Errors: as og_grad_get_weight / og_grad_set_weight. */
OG_API int og_trainer_weight_count(const og_trainer *t);
OG_API const char *og_trainer_weight_name(const og_trainer *t, int i);
OG_API og_status og_trainer_get_weight(const og_trainer *t, const char *name,
                                       const og_tensor **value);
OG_API og_status og_trainer_set_weight(og_trainer *t, const char *name, const og_tensor *value);

/* Checkpoints hold the weights, the optimizer's state, the step count, the epoch position
 * of og_trainer_fit and the random generator's state (in algorithm mode: every bound
 * initializer instead of weights and state).  Saving writes a temporary file in
 * the same folder, syncs it and renames it over `path`, so an interrupted save leaves the
 * previous checkpoint intact.  Loading checks a checksum and that names, dtypes, shapes
 * and the optimizer kind match this trainer.
 * Errors: OG_ERR_IO, OG_ERR_PARSE (damaged file), OG_ERR_INVALID_ARG (mismatch). */
OG_API og_status og_trainer_save_checkpoint(const og_trainer *t, const char *path);
OG_API og_status og_trainer_load_checkpoint(og_trainer *t, const char *path);

/* The trained model for inference: a copy of `model` (NULL: the trainer's loss model with
 * the loss output, its inputs and the nodes only they need removed, and its
 * TrainingInfoProtos with the initializers only they read) whose initializers named like
 * trained weights hold the trained values. */
OG_API og_status og_trainer_export(const og_trainer *t, const og_model *model, og_model **out);

/* A model carrying its own training step in ONNX's TrainingInfoProto, which
 * og_trainer_create in algorithm mode (or any ONNX training runtime) continues from where
 * this trainer is: the loss model with the trained values, plus one TrainingInfoProto whose
 * algorithm graph computes the gradients of the loss (as ordinary nodes, the gradient seed a
 * Constant) and the optimizer's update, with update_binding from every trained weight, every
 * optimizer state and the step count to its new value.  New initializers of the main graph,
 * holding the trainer's current values: og_train_lr (float64 scalar, the base learning
 * rate), og_train_step (int64 scalar, the steps taken; the "onnxgrad.training_step" metadata
 * names it) and og_train_<weight>_<slot> (momentum; m and v; h).  The update, per optimizer:
 *   SGD with momentum (Nesterov or not): ai.onnx.preview.training Momentum with alpha =
 *     momentum, beta = 1, norm_coefficient = weight_decay: PyTorch's update, first step
 *     included (ONNX's T == 0 rule gives V = G there, as PyTorch's buf = g).
 *   Adam: Adam with alpha = beta1, beta = beta2, norm_coefficient = weight_decay, at
 *     T = step + 1 (ONNX skips the bias correction at T == 0).  ONNX adds epsilon to sqrt(v)
 *     before dividing by the bias correction sqrt(1 - beta2^k) (PyTorch after), so its
 *     epsilon weighs 1 / sqrt(1 - beta2^k) times more, and the bias corrections use the
 *     float32-rounded betas: the result follows this trainer to ~1e-5 relative where
 *     gradients are well above epsilon (measured on small MLPs after 20 steps), less closely
 *     where they are tiny in the first steps (3e-3 in the loss of a transformer after 7).
 *   AdamW: the weights times 1 - lr weight_decay (plain ops), then Adam without decay.
 *   Adagrad: Adagrad with decay_factor = lr_decay, epsilon = eps, norm_coefficient =
 *     weight_decay.
 *   Plain SGD: X - lr (G + weight_decay X) with plain ops.
 * Gradient clipping (plain ops, float64 norm) and every learning-rate schedule (computed in
 * float64 from og_train_step; warm-ups and clipping use Where: default opset >= 9) are
 * included.  The optimizer ops' coefficients are float attributes: with float64 weights the
 * momentum, betas and epsilons act rounded to float32 (~1e-5 relative after 20 steps).
 * ai.onnx.preview.training version 1 is imported when used; the IR version is raised to 7
 * when lower.  The result passes onnx.checker.check_model(full_check=True), and
 * so does its main graph combined with the algorithm graph.  In algorithm mode: a copy of
 * the trainer's model whose bound initializers (in the main graph or in the TrainingInfoProto)
 * hold the current values.
 * Errors: OG_ERR_UNSUPPORTED (a warm-up schedule or clipping with a default opset < 9),
 * OG_ERR_NOMEM. */
OG_API og_status og_trainer_export_training_model(const og_trainer *t, og_model **out);

/* The fit loop: epochs of shuffled mini-batches. */
typedef struct og_fit_event {
    int epoch;                   /* 0-based */
    int64_t step;                /* steps taken so far */
    int64_t batch, batches;      /* position in the epoch */
    double loss;                 /* last batch's loss */
    double train_loss, val_loss; /* at the end of an epoch (val_loss NaN without a
                                    validation set); NaN otherwise */
    double samples_per_s, seconds_left;
    int epoch_end; /* nonzero for the event that closes an epoch */
} og_fit_event;

/* Return nonzero to stop training after this event. */
typedef int (*og_fit_callback)(void *user, const og_fit_event *e);

typedef struct og_fit_options {
    /* Epochs to run (0: 1).  When `resume` loads a checkpoint, the total to reach instead:
     * the run continues from the checkpoint's epoch up to `epochs`, so the same options
     * finish an interrupted run where an uninterrupted one ends. */
    int epochs;
    int64_t batch_size; /* 0: 32 */
    int no_shuffle;
    const og_dataset *validation; /* may be NULL */
    /* Loss-model inputs the features, targets and sample weights are bound to.  NULL: the
     * first input, then "onnxgrad.loss_inputs" metadata (else "label", "sample_weight"). */
    const char *feature_input, *target_input, *weight_input;
    const char *checkpoint;   /* written at the end of every epoch (atomically); NULL: none */
    int resume;               /* nonzero: load `checkpoint` first when it exists */
    og_fit_callback callback; /* called after every step and at every epoch end */
    void *user;
} og_fit_options;

/* Train on `data`.  The train loss of an epoch is the sample-weighted mean of its batch
 * losses; the validation loss is evaluated in batches after the epoch.  A NaN or infinite
 * loss stops with OG_ERR_RUNTIME naming the step (the checkpoint of the last finished
 * epoch stays as it was).  Resuming continues from the epoch after the checkpointed one,
 * with the same shuffles, so the weights equal an uninterrupted run's bit for bit at the
 * same thread count.
 *
 * Data-parallel: with a communicator of N ranks (og_trainer_set_comm), fit is collective.
 * Every rank passes the same dataset (same samples, same order; the sizes are checked) and
 * the same options.  At the start rank 0's state (weights, optimizer state, step, epoch,
 * shuffling generator; read from the checkpoint when resuming) is broadcast to every rank.
 * Each epoch's permutation, the same on every rank, is cut into global batches of
 * N x batch_size samples, and rank r trains on the r-th of N near-equal contiguous parts of
 * each (parts of the last batch may be empty).  The step weights rank r's gradient by its
 * part's share of the global batch's sample weight (by 1 when the loss sums over samples,
 * as the "onnxgrad.loss_reduction" metadata of og_model_add_loss says), so the weights
 * follow a single process training with batches of N x batch_size, up to the order of
 * summation.  A loss summed over samples with weight penalties is refused
 * (OG_ERR_UNSUPPORTED): every rank would add the penalty.  Losses in events are global; the
 * validation set is split across ranks and its loss reduced.  Only rank 0 reads and writes
 * the checkpoint; its content does not depend on N, so a run may resume on another number
 * of ranks (the same batches with batch_size x N / N').  At every epoch end a hash of the
 * weights and optimizer state is compared with rank 0's, and any difference fails with
 * OG_ERR_RUNTIME naming the rank.  A failure on any rank stops every rank with that rank's
 * status and message (see og_comm_agree). */
OG_API og_status og_trainer_fit(og_trainer *t, const og_dataset *data, const og_fit_options *o);

/* ---------------------------------------------------------------------------------- */
/* Data-parallel training: communicators                                               */
/* ---------------------------------------------------------------------------------- */

/* Store `message` as this thread's last error (read with og_last_error()) and return
 * `status`: for code outside the library that reports through it, such as a communicator.
 * Thread-safe. */
OG_API og_status og_set_error(og_status status, const char *message);

typedef enum og_comm_op { OG_COMM_SUM = 0, OG_COMM_MIN = 1, OG_COMM_MAX = 2 } og_comm_op;

/* A communicator: how the N ranks (processes, or devices) of a data-parallel run exchange
 * data, as a table of functions, so that any engine plugs in without changing the trainer.
 * onnxgrad_mpi.h makes one over MPI.  `user` is passed back to every function.
 *
 * Collective functions (allreduce, broadcast, reduce_scatter, allgather) must be called by
 * every rank in the same order with the same sizes; the trainer does so.  Each returns OG_OK, or a
 * status with a message set through og_set_error; after a failure the ranks are out of step, and
 * the trainer calls abort (when set) and returns the status.
 *
 * Ownership and threads: the caller owns the table and what `user` points to, and keeps both
 * alive while a trainer uses them (until og_trainer_set_comm(t, NULL, 0) or
 * og_trainer_free).  The trainer calls them only from the thread running its
 * og_trainer_* call, one call at a time (MPI_THREAD_SERIALIZED suffices), never from its
 * compute threads. */
typedef struct og_comm {
    void *user;
    int (*rank)(void *user); /* 0 .. size - 1 */
    int (*size)(void *user); /* >= 1 */
    /* Start reducing data[0 .. count) in place across all ranks with op; dtype is OG_FLOAT,
     * OG_DOUBLE or OG_INT64.  The result must have the same bits on every rank (weights
     * stay identical only then; og_trainer_fit's hash check finds an engine that breaks
     * this).  *request receives a handle for test / wait, or NULL when the reduction
     * completed within the call.  data is neither read nor written by the caller until the
     * request completes. */
    og_status (*allreduce)(void *user, void *data, int64_t count, og_dtype dtype, og_comm_op op,
                           void **request);
    /* Make progress on started reductions; *done nonzero when `request` completed (it is then
     * released).  May be NULL: the trainer then only waits, after the backward pass, and
     * communication overlaps computation only as far as the engine progresses by itself. */
    og_status (*test)(void *user, void *request, int *done);
    /* Complete `request` and release it. */
    og_status (*wait)(void *user, void *request);
    /* Copy nbytes at data on rank `root` to data on every other rank (blocking). */
    og_status (*broadcast)(void *user, void *data, size_t nbytes, int root);
    /* Stop every rank of the run, saying why (MPI_Abort); may be NULL.  Called after a
     * failed communicator call, when the ranks can no longer agree on stopping. */
    void (*abort)(void *user, const char *message);
    /* Optional, both or neither (NULL: every rank applies the whole optimizer update after
     * an allreduce).  With both, og_trainer_fit shards the update: rank r updates only part r
     * of each gradient bucket and the updated weights are gathered (og_trainer_set_comm).
     * Parts are contiguous and in rank order: part r is counts[r] elements (counts has
     * size() entries, the same on every rank) starting after those of the ranks before r;
     * the trainer passes no count above INT_MAX and dtype OG_FLOAT or OG_DOUBLE.
     * reduce_scatter starts summing data[0 .. sum of counts) across ranks and storing part r
     * of the sum in part[0 .. counts[r]) on rank r (data is the caller's again, and part
     * written, when the request completes); allgather starts copying each rank r's part r of
     * data (data[offset_r .. offset_r + counts[r])) to the same place on every other rank,
     * in place.  Requests as allreduce's (test, wait; *request NULL when done at once).
     * Sharing one element's sum across ranks (only its owner computes it) keeps the weights
     * identical on every rank whatever the engine's summation order. */
    og_status (*reduce_scatter)(void *user, const void *data, void *part, const int64_t *counts,
                                og_dtype dtype, void **request);
    og_status (*allgather)(void *user, void *data, const int64_t *counts, og_dtype dtype,
                           void **request);
    /* Optional, both or neither: memory the other ranks read directly (the MPI one: a
     * shared-memory window when every rank runs on this machine).  shared_alloc is
     * collective (every rank, the same nbytes, in the same order) and returns this rank's
     * block of nbytes, 64-byte aligned, or NULL on every rank when the engine has none for
     * this run; shared_free(block) gives it back (not collective: the engine may keep the
     * memory for a later shared_alloc of the same size, or until it is freed).  When it
     * shards the update (reduce_scatter and allgather, more than one rank),
     * og_trainer_set_comm keeps its gradient buckets there, so that the engine can do those
     * two in place, reading the other ranks' blocks instead of sending messages; the block
     * goes back on og_trainer_set_comm(t, NULL or another, ...) and og_trainer_free. */
    void *(*shared_alloc)(void *user, size_t nbytes);
    void (*shared_free)(void *user, void *block);
} og_comm;

/* Collective: every rank passes its own status.  OG_OK on every rank when all passed OG_OK;
 * else every rank returns the status of the lowest failing rank R, and og_last_error()
 * reads "rank R: " followed by the message R had (its og_last_error() when it called).
 * Programs call it after a step that may fail on some ranks only (reading a file, a
 * shard), so that all stop together instead of leaving the others blocked in their next
 * collective.  Errors: OG_ERR_INVALID_ARG (NULL or incomplete comm); a communicator
 * failure (after comm->abort). */
OG_API og_status og_comm_agree(const og_comm *comm, og_status status);

/* Collective and blocking: reduce data[0 .. count) in place across all ranks with op (the
 * communicator's allreduce, then its wait), so that every rank holds the same bits; dtype is
 * OG_FLOAT, OG_DOUBLE or OG_INT64.  For programs that update their weights themselves
 * (Python's OrtGradientForwardBackwardOptimizer under data_parallel packs its gradients in
 * one buffer per step).  count 0 communicates nothing (every rank must then pass 0).
 * Errors: OG_ERR_INVALID_ARG (NULL or incomplete comm, NULL data with count > 0, a negative
 * count, another dtype or op: nothing is communicated); a communicator failure: the status
 * with "rank R: communicator failed in og_comm_allreduce: ..." after comm->abort (the ranks
 * are out of step). */
OG_API og_status og_comm_allreduce(const og_comm *comm, void *data, int64_t count, og_dtype dtype,
                                   og_comm_op op);

/* Collective and blocking: copy nbytes at data on rank `root` to data on every other rank.
 * Errors: OG_ERR_INVALID_ARG (NULL or incomplete comm, root outside 0 .. size - 1, NULL
 * data with nbytes > 0); a communicator failure, as og_comm_allreduce. */
OG_API og_status og_comm_broadcast(const og_comm *comm, void *data, size_t nbytes, int root);

/* Make t's steps data-parallel over `comm` (NULL: back to single-process steps, which
 * leaves the communicator alone and is not collective).  Gradients are summed across ranks
 * in buckets of about bucket_bytes, each started as soon as the backward pass has produced
 * every gradient it holds, so that communication overlaps the rest of the backward pass
 * (0: 4 MiB; SIZE_MAX: one bucket, started when the backward pass ends).  Buckets follow
 * the order in which the training graph produces the gradients, one dtype each; they hold
 * one more copy of every trained weight's gradient.  BatchNormalization's running statistics
 * (state, not trained) take rank 0's after every step; Dropout draws other masks on every
 * rank (rank 0 those of one process).
 * Collective: every rank calls it with the same model, weights and bucket size; the bucket
 * plan is compared with rank 0's.  comm must outlive its use by t.
 * With a communicator that has reduce_scatter and allgather (og_comm; the MPI one does) and
 * more than one rank, og_trainer_fit shards the optimizer's update: each bucket is cut into
 * N near-equal parts, its reduction leaves rank r the sum of part r alone, rank r updates
 * those elements of the weights and of their optimizer state, and the updated weights are
 * gathered on every rank (as much communication as an allreduce; each rank does 1/N of the
 * update).  The optimizer state of other ranks' parts is gathered at every epoch end (for
 * the hash check and rank 0's checkpoint, which holds all of it) and when fit returns; in
 * fit's per-batch callbacks it is current only for this rank's parts.
 * og_trainer_step_shard always applies the whole update on every rank.
 * Errors: OG_ERR_INVALID_ARG (a table without rank, size, allreduce, wait or broadcast, or
 * with only one of reduce_scatter and allgather; a
 * rank outside 0 .. size - 1), OG_ERR_UNSUPPORTED (algorithm mode: the model's own update
 * leaves no gradient to reduce), OG_ERR_RUNTIME (a plan unlike rank 0's), a communicator
 * failure, OG_ERR_NOMEM. */
OG_API og_status og_trainer_set_comm(og_trainer *t, const og_comm *comm, size_t bucket_bytes);

/* One data-parallel step, collective over t's communicator: every rank runs forward and
 * backward on its own batch, the gradients are reduced as sum_r share_r g_r (each rank
 * passing its share_r; for a mean loss, its batch's part of the global batch's sample
 * weight), and every rank applies the same update.  *loss receives sum_r share_r loss_r.  A
 * rank with no samples in this step passes n_inputs 0 and share 0: it computes nothing
 * and joins the reductions.  When any rank fails (its forward or backward fails, its loss
 * or a gradient is NaN or infinite, a share is not finite), every rank returns the status of
 * the lowest failing rank R with og_last_error() "rank R: <its message>", and no weight
 * changes.  Without a communicator: og_trainer_step, share ignored.
 * Errors: as og_trainer_step; OG_ERR_INVALID_ARG (a negative or non-finite share). */
OG_API og_status og_trainer_step_shard(og_trainer *t, const char *const *input_names,
                                       const og_tensor *const *inputs, int n_inputs, double share,
                                       double *loss);

/* Where a data-parallel trainer's time went, since og_trainer_set_comm. */
typedef struct og_comm_stats {
    int ranks;             /* the communicator's size (0: no communicator) */
    int buckets;           /* gradient buckets per step */
    int64_t steps;         /* data-parallel steps */
    double bytes;          /* gradient bytes reduced by this rank */
    double step_s;         /* seconds in steps */
    double comm_s;         /* of which inside the communicator's calls */
    double exposed_s;      /* of which after the backward pass ended: communication that no
                              computation hid (the rest overlapped the backward pass; with a
                              sharded update, the gathers of the updated weights too) */
    int64_t sharded_steps; /* of the steps, those whose update was sharded */
    int shared_memory;     /* nonzero: the buckets live in the communicator's shared memory
                              (og_comm.shared_alloc) */
} og_comm_stats;

/* Fill *out (zeros without a communicator).  Errors: OG_ERR_INVALID_ARG (NULL). */
OG_API og_status og_trainer_comm_stats(const og_trainer *t, og_comm_stats *out);

/* ---------------------------------------------------------------------------------- */
/* .npy files                                                                          */
/* ---------------------------------------------------------------------------------- */

/* Read a .npy file (format 1.0-3.0, C order) of float16, float32, float64, signed and
 * unsigned 8- to 64-bit integers or bool, little- or big-endian, or of strings: numpy's unicode
 * arrays ('<U', read as UTF-8) and byte strings ('|S'), both becoming OG_STRING tensors (trailing
 * NULs dropped, as numpy does).  Anything else (Fortran order, object arrays, other dtypes) is
 * refused with OG_ERR_UNSUPPORTED and a message that says why; truncated or malformed files give
 * OG_ERR_PARSE (an invalid code point too). */
OG_API og_status og_npy_load(const char *path, const og_allocator *alloc, og_tensor **out);
OG_API og_status og_npy_load_buffer(const void *data, size_t size, const og_allocator *alloc,
                                    og_tensor **out);
/* Write a tensor as .npy (format 1.0, little-endian, C order); a string tensor as '<U<n>',
 * n its longest element in code points.  Errors: OG_ERR_IO, OG_ERR_UNSUPPORTED (a dtype
 * outside the list above, a string that is not valid UTF-8, a value that is not a
 * tensor). */
OG_API og_status og_npy_save(const char *path, const og_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* ONNXGRAD_H */
