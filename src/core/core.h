/*
 * core.h: what every layer of onnxgrad shares: allocation through the handle's
 * allocator, error messages, tensors and their buffers.  Internal header.
 */
#ifndef OG_CORE_H
#define OG_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxgrad.h"

/* ---- allocation ------------------------------------------------------------------ */

/* The allocator used when a caller passes NULL. */
const og_allocator *og_default_allocator(void);
/* a ? a : default */
const og_allocator *og_alloc_or_default(const og_allocator *a);

void *og_malloc(const og_allocator *a, size_t size);
void *og_calloc(const og_allocator *a, size_t count, size_t size);
/* realloc through malloc+copy+free (the hook has no realloc); old_size bytes are kept. */
void *og_realloc(const og_allocator *a, void *p, size_t old_size, size_t new_size);
void og_free(const og_allocator *a, void *p);
char *og_strdup(const og_allocator *a, const char *s);
/* A printf-formatted string of any length (free with og_free); NULL when out of memory. */
char *og_strfmt(const og_allocator *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* 64-byte aligned block for tensor data; free with og_free_aligned. */
void *og_malloc_aligned(const og_allocator *a, size_t size);
void og_free_aligned(const og_allocator *a, void *p);

/* size_t multiply/add with overflow detection: return false on overflow. */
bool og_mul_size(size_t a, size_t b, size_t *out);
bool og_mul_i64(int64_t a, int64_t b, int64_t *out); /* a, b >= 0 */
bool og_add_i64(int64_t a, int64_t b, int64_t *out); /* any signs */

/* ---- errors ---------------------------------------------------------------------- */

/* Store a printf-formatted message for this thread and return `status`.
 * Usage: return og_error(OG_ERR_SHAPE, "input '%s' has rank %d", name, r); */
og_status og_error(og_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
og_status og_verror(og_status status, const char *fmt, va_list ap);
/* Prefix the current message with "prefix: " (for adding context on the way up). */
og_status og_error_prefix(og_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Send a printf-formatted message to a log callback (nothing when log is NULL); messages
 * past 511 bytes are cut. */
void og_logf(og_log_fn log, void *user, og_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Internal invariant; active unless OG_NDEBUG is defined.  It reports and aborts: it is
 * for onnxgrad's own bugs, never for bad input. */
#ifndef OG_NDEBUG
#define OG_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) og_assert_fail(#cond, __FILE__, __LINE__);                                    \
    } while (0)
#else
#define OG_ASSERT(cond) ((void)0)
#endif
void og_assert_fail(const char *expr, const char *file, int line);

/* ---- dtypes ---------------------------------------------------------------------- */

bool og_dtype_is_float(og_dtype t);   /* float16, bfloat16, float, double */
bool og_dtype_is_integer(og_dtype t); /* signed and unsigned ints */
bool og_dtype_is_known(og_dtype t);   /* a code with a size, i.e. not string/undefined */
/* Bytes one element takes in a tensor's buffer: og_dtype_size, and for OG_STRING the size of
 * the char * each element is (0 for undefined codes). */
size_t og_dtype_storage_size(og_dtype t);
/* A dtype a tensor can hold: a known one or OG_STRING. */
bool og_dtype_is_valid(og_dtype t);

float og_half_to_float(uint16_t h);
uint16_t og_float_to_half(float f);
float og_bfloat16_to_float(uint16_t h);
uint16_t og_float_to_bfloat16(float f);
/* 8-bit floats (OG_FLOAT8*): whether t is one; a code to its value (exact); a value to the
 * nearest code, ties to even, out-of-range values as Cast's table says: saturate gives the
 * largest finite value of the sign, else infinity (E5M2) or NaN (the others); an infinite
 * input is the largest value (FN and E5M2 saturating) or NaN (FNUZ, and E4M3FN unsaturated)
 * or itself (E5M2 unsaturated). */
bool og_dtype_is_float8(og_dtype t);
double og_float8_to_double(uint8_t code, og_dtype t);
uint8_t og_double_to_float8(double v, og_dtype t, bool saturate);
/* The same for one format each, for loops bound to it (they test no format). */
double og_float8e4m3fn_to_double(uint8_t code);
double og_float8e4m3fnuz_to_double(uint8_t code);
double og_float8e5m2_to_double(uint8_t code);
double og_float8e5m2fnuz_to_double(uint8_t code);
uint8_t og_double_to_float8e4m3fn(double v, bool saturate);
uint8_t og_double_to_float8e4m3fnuz(double v, bool saturate);
uint8_t og_double_to_float8e5m2(double v, bool saturate);
uint8_t og_double_to_float8e5m2fnuz(double v, bool saturate);
/* 4-bit integers (OG_INT4, OG_UINT4): whether t is one; v saturated to its range. */
bool og_dtype_is_int4(og_dtype t);
int8_t og_saturate_int4(double v, og_dtype t);

/* ---- tensors --------------------------------------------------------------------- */

struct og_pool;

/* A reference-counted block of tensor data.  Views (Reshape, Identity, ...) share it; the
 * count is atomic because sessions of one model share its initializers across threads. */
typedef struct og_buffer {
    const og_allocator *alloc;
    void *data;      /* 64-byte aligned, or caller memory when !owned */
    size_t capacity; /* bytes */
    _Atomic int refcount;
    bool owned;
    struct og_pool *pool; /* when set, a released buffer goes back to this session pool */
    /* A string tensor's buffer holds n_strings char * (NULL: ""), each allocated with
     * `alloc` and freed with the buffer (or before it goes back to its pool). */
    int64_t n_strings;
} og_buffer;

/* A session's free list of buffers, so that a run reuses the blocks of the previous one
 * instead of going back to malloc (and the kernel's page faults) for every value.  Output
 * tensors handed to the caller keep their buffer tied to the pool: when the caller frees
 * one, its block comes back for the next run.  So the pool is reference-counted (the
 * session and every live buffer hold a reference) and locked (a caller may free an output
 * in another thread); once the session closes it, returned blocks are freed instead. */
typedef struct og_pool og_pool;
og_pool *og_pool_new(const og_allocator *a);
/* A buffer of at least `bytes` (the most recently released one that fits within 2x, else
 * a new one), NULL on OOM or when a new block would take the pool past its budget (idle
 * blocks are freed first to make room; og_pool_usage tells the two apart). */
og_buffer *og_pool_get(og_pool *p, size_t bytes);
/* The most bytes the pool may hold at once: its blocks, idle or in use (outputs handed to
 * a caller included, until freed), and the scratch blocks of og_pool_allocator.  New
 * pools have no limit (SIZE_MAX). */
void og_pool_set_budget(og_pool *p, size_t bytes);
/* Bytes held now, the budget, and the size of the last request the budget refused (0 if
 * none since the last call: the call clears it). */
void og_pool_usage(og_pool *p, size_t *held, size_t *budget, size_t *refused);
/* An allocator over the pool's that counts every block against the budget (malloc returns
 * NULL past it); valid while any of its blocks or the pool lives.  For kernels' scratch. */
const og_allocator *og_pool_allocator(og_pool *p);
/* Free the idle blocks (a subgraph's pool after its node ran: a budget shared with the
 * parent session cannot reach them otherwise). */
void og_pool_trim(og_pool *p);
/* Free the idle blocks and drop the owner's reference: blocks still in use are freed when
 * released.  NULL is a no-op. */
void og_pool_close(og_pool *p);

/* ---- worker threads ---------------------------------------------------------------- */

/* A session's threads beside the caller's (workers.c).  A job is a range of items cut
 * into chunks that the caller and the workers claim in order; the caller starts at once
 * and, once every chunk is claimed, waits only for the chunks still running: never for a
 * worker that has not woken yet (which may take tens of microseconds when waiting threads
 * block), so that a job of a few hundred microseconds gains from a second thread instead of
 * losing to it.  Between jobs a worker polls for the next one for a while (0.5 ms) before
 * it blocks, unless OMP_WAIT_POLICY is "passive": then it blocks at once. */
typedef struct og_workers og_workers;
/* fn(ctx, i0, i1, slot) computes items [i0, i1); slot (0 for the caller, 1.. for the
 * workers) is below the job's thread count: for per-thread scratch. */
typedef void (*og_range_fn)(void *ctx, int64_t i0, int64_t i1, int slot);
/* threads - 1 workers (fewer if the system refuses some); NULL for threads < 2 or when
 * none could be made.  The wait policy is read here, from OMP_WAIT_POLICY. */
og_workers *og_workers_new(const og_allocator *a, int threads);
/* Stops and joins the workers.  NULL is a no-op. */
void og_workers_free(og_workers *w);
/* Whether w's workers poll for the next job before they block (false for NULL): then the
 * kernels use no OpenMP region, whose threads poll too after it (kernels/cpu/kernel.h). */
bool og_workers_poll(const og_workers *w);
/* Participants: the workers and the caller (1 for NULL). */
int og_workers_count(const og_workers *w);
/* fn over [0, items) in chunks of `grain` items, by at most `threads` participants; returns
 * when every item is done.  With no workers, threads < 2, a single chunk, or a job of w
 * already running (a call from inside fn), the caller runs fn(ctx, 0, items, 0) alone. */
void og_workers_run(og_workers *w, int threads, int64_t items, int64_t grain, og_range_fn fn,
                    void *ctx);

/* One handle for every kind of value (onnxgrad.h: og_kind).  A tensor uses dtype..buf; a
 * value of another kind has dtype OG_UNDEFINED, rank 0, numel 0, data and buf NULL, and
 * holds other values:
 *   sequence: items[0..n_items-1];
 *   map:      keys (a 1-D int64 or string tensor of n_items keys), items[i] the value of
 *             key i;
 *   optional: n_items 0 (none) or 1.
 * Contained values are owned (freed with their container).  depth: 0 for a tensor, else 1 +
 * the deepest item (at most OG_MAX_NESTING). */
struct og_tensor {
    og_dtype dtype;
    int rank;
    int64_t dims[OG_MAX_RANK];
    int64_t numel;
    void *data;                /* buf->data, or inside it for a view at an offset */
    og_buffer *buf;            /* NULL for a tensor with no elements */
    const og_allocator *alloc; /* for the og_tensor struct itself */
    bool readonly;
    og_kind kind;
    int depth;
    og_tensor **items;
    int64_t n_items, cap_items;
    og_tensor *keys;
};

/* Element count of a shape; false on overflow or negative dims. */
bool og_shape_numel(int rank, const int64_t *dims, int64_t *numel);
/* Bytes of a shape of dtype; false on overflow. */
bool og_shape_nbytes(og_dtype dtype, int rank, const int64_t *dims, size_t *nbytes);

/* Tensor struct + fresh buffer, uninitialized data (zeroed by og_tensor_create only). */
og_status og_tensor_alloc(og_dtype dtype, int rank, const int64_t *dims, const og_allocator *alloc,
                          og_tensor **out);
/* New tensor struct sharing src's buffer with another shape of the same element count. */
og_status og_tensor_view(const og_tensor *src, int rank, const int64_t *dims, og_tensor **out);
/* Deep copy. */
og_status og_tensor_clone(const og_tensor *src, const og_allocator *alloc, og_tensor **out);

og_buffer *og_buffer_new(const og_allocator *a, size_t bytes);
/* Tensor struct around a buffer (takes the caller's reference). */
og_status og_tensor_from_buffer(og_dtype dtype, int rank, const int64_t *dims, og_buffer *b,
                                const og_allocator *alloc, og_tensor **out);
void og_buffer_release(og_buffer *b);

/* A tensor of `rank`/`dims` whose data starts `offset` bytes into b (which must hold it),
 * sharing b (a reference is taken): a scalar of a row, a slice of a buffer.  Errors:
 * OG_ERR_NOMEM, OG_ERR_INTERNAL (outside b). */
og_status og_tensor_view_at(og_buffer *b, size_t offset, og_dtype dtype, int rank,
                            const int64_t *dims, const og_allocator *alloc, og_tensor **out);

/* ---- strings --------------------------------------------------------------------- */

/* Element i of a string tensor ("" for an empty one). */
const char *og_tensor_str(const og_tensor *t, int64_t i);
/* Set element i of string tensor t to a copy of s[0..len-1] (len bytes, NUL added),
 * allocated with the buffer's allocator; the old string is freed.  Errors: OG_ERR_NOMEM
 * (unchanged then). */
og_status og_tensor_set_str(og_tensor *t, int64_t i, const char *s, size_t len);
/* After a kernel copied the char * of string tensors into t (memcpy of pointers, as the copy
 * kernels do by element size), make t own them: each one is replaced by a copy.  On
 * failure the entries not yet copied are cleared, so nothing is freed twice.  Errors:
 * OG_ERR_NOMEM. */
og_status og_tensor_own_strings(og_tensor *t);
/* Mark a fresh buffer of n elements as a string tensor's: zero the pointers, count them. */
void og_buffer_hold_strings(og_buffer *b, int64_t n);

/* ---- values that are not tensors --------------------------------------------------- */

/* An empty sequence, map (keys NULL until set) or optional (none). */
og_status og_value_new(og_kind kind, const og_allocator *alloc, og_tensor **out);
/* Append item to a sequence or map (taking it: the container frees it), or set the value of
 * an optional.  Depth is checked (OG_ERR_UNSUPPORTED past OG_MAX_NESTING).  On failure the
 * item is freed.  Errors: OG_ERR_NOMEM, OG_ERR_UNSUPPORTED. */
og_status og_value_append(og_tensor *container, og_tensor *item);
/* A new value sharing every buffer of src (tensors are views of the same data; containers
 * are new structs holding shares of their items).  Errors: OG_ERR_NOMEM. */
og_status og_value_share(const og_tensor *src, const og_allocator *alloc, og_tensor **out);
/* Whether a and b hold equal values: same kind, dtype, shape and elements (strings by
 * content, floats bit for bit), recursively. */
bool og_value_equal(const og_tensor *a, const og_tensor *b);

/* "[2, 3, 4]" into buf (size n); returns buf. */
char *og_shape_str(int rank, const int64_t *dims, char *buf, size_t n);

/* Read element i of an integer tensor (int32/int64/uint8/...), as int64. */
int64_t og_tensor_get_i64(const og_tensor *t, int64_t i);
/* Read element i of a float or integer tensor as double. */
double og_tensor_get_f64(const og_tensor *t, int64_t i);
/* Write v into element i of a float, integer or bool tensor: rounded to a float type,
 * truncated toward zero for an integer (NaN gives 0, values outside the type saturate), v != 0
 * for bool. */
void og_tensor_set_f64(og_tensor *t, int64_t i, double v);

#endif /* OG_CORE_H */
