/* tensor.c: tensors and their reference-counted buffers. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>

#include "core/core.h"

static og_tensor *tensor_struct(og_dtype dtype, int rank, const int64_t *dims,
                                const og_allocator *a);

og_buffer *og_buffer_new(const og_allocator *a, size_t bytes)
{
    a = og_alloc_or_default(a);
    og_buffer *b = og_malloc(a, sizeof *b);
    if (!b) return NULL;
    b->data = og_malloc_aligned(a, bytes ? bytes : 1);
    if (!b->data) {
        og_free(a, b);
        return NULL;
    }
    b->alloc = a;
    b->capacity = bytes;
    b->refcount = 1;
    b->owned = true;
    b->pool = NULL;
    b->n_strings = 0;
    return b;
}

void og_buffer_hold_strings(og_buffer *b, int64_t n)
{
    if (n > 0) memset(b->data, 0, (size_t)n * sizeof(char *));
    b->n_strings = n;
}

struct og_pool {
    const og_allocator *alloc;
    atomic_flag lock; /* pool_lock: a spin lock, see there */
    _Atomic int refs; /* the owner's + one per live buffer and scratch block */
    bool closed;
    og_buffer **free;
    int n_free, cap_free;
    /* The budget: bytes of the pool's buffers (idle or in use, outputs not yet freed
     * included) and of the scratch blocks of og_pool_allocator, under the lock. */
    size_t budget, held;
    size_t refused;       /* the last request the budget refused (og_pool_usage reads and clears) */
    og_allocator scratch; /* og_pool_allocator: counts against the budget, user = the pool */
};

/* The pool's lock spins on a C11 atomic flag: its critical sections are a few list
 * operations, and ThreadSanitizer sees atomics (glibc's C11 mtx_lock goes around the
 * pthread functions it watches, so make tsan would report the pool as racy). */
static void pool_lock(og_pool *p)
{
    while (atomic_flag_test_and_set_explicit(&p->lock, memory_order_acquire)) thrd_yield();
}

static void pool_unlock(og_pool *p) { atomic_flag_clear_explicit(&p->lock, memory_order_release); }

static void pool_unref(og_pool *p)
{
    if (--p->refs > 0) return;
    og_free(p->alloc, p->free);
    og_free(p->alloc, p);
}

static void pool_unhold(og_pool *p, size_t bytes)
{
    pool_lock(p);
    p->held -= bytes;
    pool_unlock(p);
}

/* Free the strings a string tensor's buffer holds. */
static void free_strings(og_buffer *b)
{
    char **p = b->data;
    for (int64_t i = 0; i < b->n_strings; i++) og_free(b->alloc, p[i]);
    b->n_strings = 0;
}

static void buffer_destroy(og_buffer *b)
{
    og_pool *p = b->pool;
    size_t capacity = b->capacity;
    free_strings(b);
    if (b->owned) og_free_aligned(b->alloc, b->data);
    og_free(b->alloc, b);
    if (p) {
        pool_unhold(p, capacity);
        pool_unref(p);
    }
}

/* Destroy idle blocks taken off p's free list (their bytes already uncounted), outside the
 * lock: detached first, so that freeing them does not give them back. */
static void pool_drop(og_pool *p, og_buffer **idle, int n_idle)
{
    for (int i = 0; i < n_idle; i++) {
        og_buffer *b = idle[i];
        b->pool = NULL;
        if (b->owned) og_free_aligned(b->alloc, b->data);
        og_free(b->alloc, b);
        pool_unref(p);
    }
    og_free(p->alloc, idle);
}

/* Count `bytes` against the budget, freeing idle blocks first when they are in the way;
 * false (nothing counted) if it does not fit even then.  Called without the lock. */
static bool pool_hold(og_pool *p, size_t bytes)
{
    og_buffer **idle = NULL;
    int n_idle = 0;
    bool ok;
    pool_lock(p);
    if (p->held + bytes > p->budget || p->held + bytes < p->held) {
        /* idle blocks make room: drop them all (they would be dropped at close anyway) */
        idle = p->free;
        n_idle = p->n_free;
        p->free = NULL;
        p->n_free = p->cap_free = 0;
        for (int i = 0; i < n_idle; i++) p->held -= idle[i]->capacity;
    }
    ok = p->held + bytes <= p->budget && p->held + bytes >= p->held;
    if (ok)
        p->held += bytes;
    else
        p->refused = bytes;
    pool_unlock(p);
    pool_drop(p, idle, n_idle);
    return ok;
}

void og_pool_trim(og_pool *p)
{
    if (!p) return;
    pool_lock(p);
    og_buffer **idle = p->free;
    int n_idle = p->n_free;
    p->free = NULL;
    p->n_free = p->cap_free = 0;
    for (int i = 0; i < n_idle; i++) p->held -= idle[i]->capacity;
    pool_unlock(p);
    pool_drop(p, idle, n_idle);
}

/* Scratch blocks of og_pool_allocator: a 16-byte header holding the size (which keeps
 * malloc's alignment), counted against the budget, each holding a pool reference so
 * the allocator outlives every block. */
#define SCRATCH_HEADER 16

static void *scratch_malloc(void *user, size_t size)
{
    og_pool *p = user;
    if (size > SIZE_MAX - SCRATCH_HEADER) return NULL;
    size_t total = size + SCRATCH_HEADER;
    if (!pool_hold(p, total)) return NULL;
    unsigned char *m = og_malloc(p->alloc, total);
    if (!m) {
        pool_unhold(p, total);
        return NULL;
    }
    memcpy(m, &total, sizeof total);
    p->refs++;
    return m + SCRATCH_HEADER;
}

static void scratch_free(void *user, void *ptr)
{
    og_pool *p = user;
    if (!ptr) return;
    unsigned char *m = (unsigned char *)ptr - SCRATCH_HEADER;
    size_t total;
    memcpy(&total, m, sizeof total);
    og_free(p->alloc, m);
    pool_unhold(p, total);
    pool_unref(p);
}

/* Put b on p's free list; false if it must be destroyed instead. */
static bool pool_put(og_pool *p, og_buffer *b)
{
    bool kept = false;
    pool_lock(p);
    if (!p->closed) {
        if (p->n_free == p->cap_free) {
            int cap = p->cap_free ? p->cap_free * 2 : 32;
            og_buffer **f = og_realloc(p->alloc, p->free, (size_t)p->n_free * sizeof *f,
                                       (size_t)cap * sizeof *f);
            if (f) {
                p->free = f;
                p->cap_free = cap;
            }
        }
        if (p->n_free < p->cap_free) {
            p->free[p->n_free++] = b;
            kept = true;
        }
    }
    pool_unlock(p);
    return kept;
}

void og_buffer_release(og_buffer *b)
{
    if (!b || --b->refcount > 0) return;
    free_strings(b);
    if (b->pool && b->owned && pool_put(b->pool, b)) return;
    buffer_destroy(b);
}

og_pool *og_pool_new(const og_allocator *a)
{
    a = og_alloc_or_default(a);
    og_pool *p = og_calloc(a, 1, sizeof *p);
    if (!p) return NULL;
    atomic_flag_clear(&p->lock);
    p->alloc = a;
    p->refs = 1;
    p->budget = SIZE_MAX;
    p->scratch = (og_allocator){scratch_malloc, scratch_free, p};
    return p;
}

void og_pool_set_budget(og_pool *p, size_t bytes)
{
    pool_lock(p);
    p->budget = bytes;
    pool_unlock(p);
}

void og_pool_usage(og_pool *p, size_t *held, size_t *budget, size_t *refused)
{
    pool_lock(p);
    *held = p->held;
    *budget = p->budget;
    *refused = p->refused;
    p->refused = 0;
    pool_unlock(p);
}

const og_allocator *og_pool_allocator(og_pool *p) { return &p->scratch; }

og_buffer *og_pool_get(og_pool *p, size_t bytes)
{
    og_buffer *b = NULL;
    pool_lock(p);
    /* the most recently released block that fits (the list is in release order): its
     * memory is the likeliest still in cache, where the smallest fit was often one last
     * written a whole run ago (MobileNet-v2's 144x56x56 depthwise layer wrote its output
     * in 0.26 ms from a block in memory, 0.18 from one in cache; the network 5.47 -> 5.31
     * ms, EfficientNet-B0 9.24 -> 8.92, the pools' sizes the same) */
    int best = -1;
    for (int i = p->n_free - 1; i >= 0 && best < 0; i--) {
        size_t c = p->free[i]->capacity;
        if (c >= bytes && c <= 2 * bytes + 4096) best = i;
    }
    if (best >= 0) {
        b = p->free[best];
        memmove(p->free + best, p->free + best + 1,
                (size_t)(p->n_free - best - 1) * sizeof *p->free);
        p->n_free--;
    }
    pool_unlock(p);
    if (b) {
        b->refcount = 1;
        return b;
    }
    if (!pool_hold(p, bytes)) return NULL;
    b = og_buffer_new(p->alloc, bytes);
    if (b) {
        b->pool = p;
        p->refs++;
    } else {
        pool_unhold(p, bytes);
    }
    return b;
}

void og_pool_close(og_pool *p)
{
    if (!p) return;
    pool_lock(p);
    p->closed = true;
    int n = p->n_free;
    og_buffer **idle = p->free;
    p->free = NULL;
    p->n_free = p->cap_free = 0;
    pool_unlock(p);
    for (int i = 0; i < n; i++) buffer_destroy(idle[i]);
    og_free(p->alloc, idle);
    pool_unref(p);
}

og_status og_tensor_from_buffer(og_dtype dtype, int rank, const int64_t *dims, og_buffer *b,
                                const og_allocator *alloc, og_tensor **out)
{
    *out = NULL;
    og_tensor *t = tensor_struct(dtype, rank, dims, alloc);
    if (!t) return og_error(OG_ERR_NOMEM, "out of memory allocating a tensor");
    t->buf = b;
    t->data = b->data;
    *out = t;
    return OG_OK;
}

bool og_shape_numel(int rank, const int64_t *dims, int64_t *numel)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || !og_mul_i64(n, dims[i], &n)) return false;
    }
    *numel = n;
    return true;
}

bool og_shape_nbytes(og_dtype dtype, int rank, const int64_t *dims, size_t *nbytes)
{
    int64_t n;
    if (!og_shape_numel(rank, dims, &n)) return false;
    if ((uint64_t)n > SIZE_MAX) return false;
    return og_mul_size((size_t)n, og_dtype_storage_size(dtype), nbytes);
}

static og_status check_shape(og_dtype dtype, int rank, const int64_t *dims, size_t *nbytes)
{
    if (!og_dtype_is_valid(dtype))
        return og_error(OG_ERR_INVALID_ARG, "tensor dtype %d (%s) is not supported", (int)dtype,
                        og_dtype_name(dtype));
    if (rank < 0 || rank > OG_MAX_RANK)
        return og_error(OG_ERR_INVALID_ARG, "tensor rank %d outside 0..%d", rank, OG_MAX_RANK);
    if (rank > 0 && !dims) return og_error(OG_ERR_INVALID_ARG, "tensor dims is NULL");
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return og_error(OG_ERR_INVALID_ARG, "tensor dim %d is negative (%lld)", i,
                            (long long)dims[i]);
    if (!og_shape_nbytes(dtype, rank, dims, nbytes))
        return og_error(OG_ERR_INVALID_ARG, "tensor size overflows");
    return OG_OK;
}

static og_tensor *tensor_struct(og_dtype dtype, int rank, const int64_t *dims,
                                const og_allocator *a)
{
    og_tensor *t = og_calloc(a, 1, sizeof *t);
    if (!t) return NULL;
    t->dtype = dtype;
    t->rank = rank;
    if (rank > 0) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    og_shape_numel(rank, dims, &t->numel);
    t->alloc = og_alloc_or_default(a);
    return t;
}

og_status og_tensor_alloc(og_dtype dtype, int rank, const int64_t *dims, const og_allocator *alloc,
                          og_tensor **out)
{
    size_t nbytes;
    *out = NULL;
    og_status st = check_shape(dtype, rank, dims, &nbytes);
    if (st) return st;
    og_tensor *t = tensor_struct(dtype, rank, dims, alloc);
    if (!t) return og_error(OG_ERR_NOMEM, "out of memory allocating a tensor");
    t->buf = og_buffer_new(t->alloc, nbytes);
    if (!t->buf) {
        og_free(t->alloc, t);
        return og_error(OG_ERR_NOMEM, "out of memory allocating %zu bytes of tensor data", nbytes);
    }
    t->data = t->buf->data;
    if (dtype == OG_STRING) og_buffer_hold_strings(t->buf, t->numel);
    *out = t;
    return OG_OK;
}

og_status og_tensor_create(og_dtype dtype, int rank, const int64_t *dims, const og_allocator *alloc,
                           og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_tensor_create: out is NULL");
    og_status st = og_tensor_alloc(dtype, rank, dims, alloc, out);
    if (st) return st;
    memset((*out)->data, 0, og_tensor_nbytes(*out));
    return OG_OK;
}

og_status og_tensor_from_data(og_dtype dtype, int rank, const int64_t *dims, const void *data,
                              size_t nbytes, const og_allocator *alloc, og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_tensor_from_data: out is NULL");
    *out = NULL;
    if (dtype == OG_STRING)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_tensor_from_data: string tensors are made with og_tensor_from_strings");
    size_t want;
    og_status st = check_shape(dtype, rank, dims, &want);
    if (st) return st;
    if (want != nbytes)
        return og_error(OG_ERR_INVALID_ARG, "tensor data has %zu bytes, shape needs %zu", nbytes,
                        want);
    if (nbytes && !data) return og_error(OG_ERR_INVALID_ARG, "tensor data is NULL");
    st = og_tensor_alloc(dtype, rank, dims, alloc, out);
    if (st) return st;
    if (nbytes) memcpy((*out)->data, data, nbytes);
    return OG_OK;
}

og_status og_tensor_wrap(og_dtype dtype, int rank, const int64_t *dims, void *data, size_t nbytes,
                         const og_allocator *alloc, og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_tensor_wrap: out is NULL");
    *out = NULL;
    if (dtype == OG_STRING)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_tensor_wrap: string tensors cannot wrap memory (their elements are "
                        "owned copies): use og_tensor_from_strings");
    size_t want;
    og_status st = check_shape(dtype, rank, dims, &want);
    if (st) return st;
    if (want != nbytes)
        return og_error(OG_ERR_INVALID_ARG, "tensor data has %zu bytes, shape needs %zu", nbytes,
                        want);
    if (nbytes && !data) return og_error(OG_ERR_INVALID_ARG, "tensor data is NULL");
    og_tensor *t = tensor_struct(dtype, rank, dims, alloc);
    if (!t) return og_error(OG_ERR_NOMEM, "out of memory allocating a tensor");
    t->buf = og_malloc(t->alloc, sizeof *t->buf);
    if (!t->buf) {
        og_free(t->alloc, t);
        return og_error(OG_ERR_NOMEM, "out of memory allocating a tensor");
    }
    t->buf->alloc = t->alloc;
    t->buf->data = data;
    t->buf->capacity = nbytes;
    t->buf->refcount = 1;
    t->buf->owned = false;
    t->buf->pool = NULL;
    t->buf->n_strings = 0;
    t->data = data;
    *out = t;
    return OG_OK;
}

og_status og_tensor_view(const og_tensor *src, int rank, const int64_t *dims, og_tensor **out)
{
    *out = NULL;
    if (src->kind != OG_KIND_TENSOR) return og_value_share(src, src->alloc, out);
    int64_t n;
    if (rank < 0 || rank > OG_MAX_RANK || !og_shape_numel(rank, dims, &n) || n != src->numel)
        return og_error(OG_ERR_INTERNAL, "tensor view with a different element count");
    og_tensor *t = tensor_struct(src->dtype, rank, dims, src->alloc);
    if (!t) return og_error(OG_ERR_NOMEM, "out of memory allocating a tensor");
    t->buf = src->buf;
    if (t->buf) t->buf->refcount++;
    t->data = src->data;
    t->readonly = src->readonly;
    *out = t;
    return OG_OK;
}

og_status og_tensor_view_at(og_buffer *b, size_t offset, og_dtype dtype, int rank,
                            const int64_t *dims, const og_allocator *alloc, og_tensor **out)
{
    *out = NULL;
    size_t nbytes;
    if (!og_shape_nbytes(dtype, rank, dims, &nbytes) || offset > b->capacity ||
        b->capacity - offset < nbytes)
        return og_error(OG_ERR_INTERNAL, "tensor view outside its buffer");
    og_tensor *t = tensor_struct(dtype, rank, dims, alloc);
    if (!t) return og_error(OG_ERR_NOMEM, "out of memory allocating a tensor");
    t->buf = b;
    b->refcount++;
    t->data = (char *)b->data + offset;
    *out = t;
    return OG_OK;
}

/* A deep copy of a tensor (strings copied one by one). */
static og_status clone_tensor(const og_tensor *src, const og_allocator *alloc, og_tensor **out)
{
    if (src->dtype != OG_STRING)
        return og_tensor_from_data(src->dtype, src->rank, src->dims, src->data,
                                   og_tensor_nbytes(src), alloc, out);
    og_status st = og_tensor_alloc(OG_STRING, src->rank, src->dims, alloc, out);
    for (int64_t i = 0; !st && i < src->numel; i++) {
        const char *s = og_tensor_str(src, i);
        if (s[0]) st = og_tensor_set_str(*out, i, s, strlen(s));
    }
    if (st) {
        og_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

og_status og_tensor_clone(const og_tensor *src, const og_allocator *alloc, og_tensor **out)
{
    *out = NULL;
    if (src->kind == OG_KIND_TENSOR) return clone_tensor(src, alloc, out);
    og_tensor *c = NULL;
    og_status st = og_value_new(src->kind, alloc, &c);
    if (!st && src->keys) st = clone_tensor(src->keys, alloc, &c->keys);
    for (int64_t i = 0; !st && i < src->n_items; i++) {
        og_tensor *item = NULL;
        st = og_tensor_clone(src->items[i], alloc, &item);
        if (!st) st = og_value_append(c, item);
    }
    if (st) {
        og_tensor_free(c);
        return st;
    }
    *out = c;
    return OG_OK;
}

void og_tensor_free(og_tensor *t)
{
    if (!t) return;
    for (int64_t i = 0; i < t->n_items; i++) og_tensor_free(t->items[i]);
    if (t->items) og_free(t->alloc, t->items);
    og_tensor_free(t->keys);
    og_buffer_release(t->buf);
    og_free(t->alloc, t);
}

static bool is_tensor(const og_tensor *t) { return t && t->kind == OG_KIND_TENSOR; }

og_dtype og_tensor_dtype(const og_tensor *t) { return is_tensor(t) ? t->dtype : OG_UNDEFINED; }
int og_tensor_rank(const og_tensor *t) { return is_tensor(t) ? t->rank : 0; }
const int64_t *og_tensor_dims(const og_tensor *t) { return is_tensor(t) ? t->dims : NULL; }
int64_t og_tensor_numel(const og_tensor *t) { return is_tensor(t) ? t->numel : 0; }
size_t og_tensor_nbytes(const og_tensor *t)
{
    return is_tensor(t) ? (size_t)t->numel * og_dtype_size(t->dtype) : 0;
}
void *og_tensor_data(og_tensor *t)
{
    return is_tensor(t) && t->dtype != OG_STRING ? t->data : NULL;
}
const void *og_tensor_cdata(const og_tensor *t)
{
    return is_tensor(t) && t->dtype != OG_STRING ? t->data : NULL;
}

void og_tensor_info(const og_tensor *const *tensors, int n, int64_t *info)
{
    for (int i = 0; tensors && info && i < n; i++) {
        int64_t *e = info + (size_t)i * OG_TENSOR_INFO_SIZE;
        const og_tensor *t = tensors[i];
        memset(e, 0, OG_TENSOR_INFO_SIZE * sizeof *e);
        if (!t) continue;
        e[0] = (int64_t)(intptr_t)og_tensor_cdata(t); /* NULL for strings, containers */
        e[1] = (int64_t)t->dtype;
        e[2] = (int64_t)t->rank;
        for (int d = 0; d < t->rank; d++) e[3 + d] = t->dims[d];
    }
}

char *og_shape_str(int rank, const int64_t *dims, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0) return buf;
    buf[0] = 0;
    used += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && used < n; i++) {
        if (dims[i] >= 0)
            used +=
                (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)dims[i]);
        else
            used += (size_t)snprintf(buf + used, n - used, "%s?", i ? ", " : "");
    }
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

/* float to int64, saturating (NaN: 0): an out-of-range conversion is undefined in C, and a
 * hostile model may store 1e30 where an index or a shape is read */
static int64_t f64_to_i64(double x)
{
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

int64_t og_tensor_get_i64(const og_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case OG_INT64: return ((const int64_t *)d)[i];
    case OG_INT32: return ((const int32_t *)d)[i];
    case OG_INT16: return ((const int16_t *)d)[i];
    case OG_INT8:
    case OG_INT4: return ((const int8_t *)d)[i];
    case OG_UINT8:
    case OG_UINT4:
    case OG_BOOL: return ((const uint8_t *)d)[i];
    case OG_UINT16: return ((const uint16_t *)d)[i];
    case OG_UINT32: return ((const uint32_t *)d)[i];
    case OG_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case OG_FLOAT: return f64_to_i64(((const float *)d)[i]);
    case OG_DOUBLE: return f64_to_i64(((const double *)d)[i]);
    case OG_FLOAT8E4M3FN:
    case OG_FLOAT8E4M3FNUZ:
    case OG_FLOAT8E5M2:
    case OG_FLOAT8E5M2FNUZ:
        return f64_to_i64(og_float8_to_double(((const uint8_t *)d)[i], t->dtype));
    default: return 0;
    }
}

double og_tensor_get_f64(const og_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case OG_FLOAT: return ((const float *)d)[i];
    case OG_DOUBLE: return ((const double *)d)[i];
    case OG_FLOAT16: return og_half_to_float(((const uint16_t *)d)[i]);
    case OG_BFLOAT16: return og_bfloat16_to_float(((const uint16_t *)d)[i]);
    case OG_FLOAT8E4M3FN:
    case OG_FLOAT8E4M3FNUZ:
    case OG_FLOAT8E5M2:
    case OG_FLOAT8E5M2FNUZ: return og_float8_to_double(((const uint8_t *)d)[i], t->dtype);
    case OG_UINT64: return (double)((const uint64_t *)d)[i];
    default: return (double)og_tensor_get_i64(t, i);
    }
}

/* double -> integer: NaN gives 0, out-of-range values saturate (C leaves both undefined). */
#define SAT(T, lo, hi)                                                                             \
    (v != v ? (T)0 : v <= (double)(lo) ? (T)(lo) : v >= (double)(hi) ? (T)(hi) : (T)v)

void og_tensor_set_f64(og_tensor *t, int64_t i, double v)
{
    void *d = t->data;
    switch (t->dtype) {
    case OG_FLOAT: ((float *)d)[i] = (float)v; break;
    case OG_DOUBLE: ((double *)d)[i] = v; break;
    case OG_FLOAT16: ((uint16_t *)d)[i] = og_float_to_half((float)v); break;
    case OG_BFLOAT16: ((uint16_t *)d)[i] = og_float_to_bfloat16((float)v); break;
    case OG_FLOAT8E4M3FN:
    case OG_FLOAT8E4M3FNUZ:
    case OG_FLOAT8E5M2:
    case OG_FLOAT8E5M2FNUZ: ((uint8_t *)d)[i] = og_double_to_float8(v, t->dtype, true); break;
    case OG_INT4:
    case OG_UINT4: ((int8_t *)d)[i] = og_saturate_int4(v, t->dtype); break;
    case OG_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    case OG_INT8: ((int8_t *)d)[i] = SAT(int8_t, INT8_MIN, INT8_MAX); break;
    case OG_INT16: ((int16_t *)d)[i] = SAT(int16_t, INT16_MIN, INT16_MAX); break;
    case OG_INT32: ((int32_t *)d)[i] = SAT(int32_t, INT32_MIN, INT32_MAX); break;
    case OG_INT64: ((int64_t *)d)[i] = SAT(int64_t, INT64_MIN, INT64_MAX); break;
    case OG_UINT8: ((uint8_t *)d)[i] = SAT(uint8_t, 0, UINT8_MAX); break;
    case OG_UINT16: ((uint16_t *)d)[i] = SAT(uint16_t, 0, UINT16_MAX); break;
    case OG_UINT32: ((uint32_t *)d)[i] = SAT(uint32_t, 0, UINT32_MAX); break;
    case OG_UINT64: ((uint64_t *)d)[i] = SAT(uint64_t, 0, UINT64_MAX); break;
    default: break;
    }
}
#undef SAT
