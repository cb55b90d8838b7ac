/* value.c: string elements, and the values that are not tensors (sequences, maps,
 * optionals), which share the og_tensor handle (core.h). */
#include <string.h>

#include "core/core.h"

/* ---- strings --------------------------------------------------------------------- */

const char *og_tensor_str(const og_tensor *t, int64_t i)
{
    const char *s = ((char *const *)t->data)[i];
    return s ? s : "";
}

og_status og_tensor_set_str(og_tensor *t, int64_t i, const char *s, size_t len)
{
    const og_allocator *a = t->buf->alloc;
    char *c = og_malloc(a, len + 1);
    if (!c) return og_error(OG_ERR_NOMEM, "out of memory copying a string of %zu bytes", len);
    if (len) memcpy(c, s, len);
    c[len] = 0;
    char **p = t->data;
    og_free(a, p[i]);
    p[i] = c;
    return OG_OK;
}

og_status og_tensor_own_strings(og_tensor *t)
{
    char **p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        const char *s = p[i];
        if (!s) continue;
        size_t len = strlen(s);
        char *c = og_malloc(t->buf->alloc, len + 1);
        if (!c) {
            for (int64_t j = i; j < t->numel; j++) p[j] = NULL; /* borrowed: never freed */
            return og_error(OG_ERR_NOMEM, "out of memory copying strings");
        }
        memcpy(c, s, len + 1);
        p[i] = c;
    }
    return OG_OK;
}

og_status og_tensor_from_strings(int rank, const int64_t *dims, const char *const *strings,
                                 const og_allocator *alloc, og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_tensor_from_strings: out is NULL");
    *out = NULL;
    og_tensor *t = NULL;
    og_status st = og_tensor_alloc(OG_STRING, rank, dims, alloc, &t);
    if (st) return st;
    if (t->numel && !strings) {
        og_tensor_free(t);
        return og_error(OG_ERR_INVALID_ARG, "og_tensor_from_strings: strings is NULL");
    }
    for (int64_t i = 0; i < t->numel; i++) {
        if (!strings[i] || !strings[i][0]) continue;
        if ((st = og_tensor_set_str(t, i, strings[i], strlen(strings[i])))) {
            og_tensor_free(t);
            return st;
        }
    }
    *out = t;
    return OG_OK;
}

const char *og_tensor_string(const og_tensor *t, int64_t i)
{
    if (!t || t->kind != OG_KIND_TENSOR || t->dtype != OG_STRING || i < 0 || i >= t->numel)
        return NULL;
    return og_tensor_str(t, i);
}

og_status og_tensor_set_string(og_tensor *t, int64_t i, const char *s)
{
    if (!t || t->kind != OG_KIND_TENSOR || t->dtype != OG_STRING)
        return og_error(OG_ERR_INVALID_ARG, "og_tensor_set_string: not a string tensor");
    if (i < 0 || i >= t->numel)
        return og_error(OG_ERR_INVALID_ARG, "og_tensor_set_string: index %lld is outside 0..%lld",
                        (long long)i, (long long)t->numel - 1);
    if (t->readonly)
        return og_error(OG_ERR_INVALID_ARG, "og_tensor_set_string: the tensor is read-only");
    if (!s) s = "";
    return og_tensor_set_str(t, i, s, strlen(s));
}

/* ---- containers ------------------------------------------------------------------ */

const char *og_kind_name(og_kind kind)
{
    switch (kind) {
    case OG_KIND_TENSOR: return "tensor";
    case OG_KIND_SEQUENCE: return "sequence";
    case OG_KIND_MAP: return "map";
    case OG_KIND_OPTIONAL: return "optional";
    }
    return "unknown";
}

og_kind og_tensor_kind(const og_tensor *v) { return v ? v->kind : OG_KIND_TENSOR; }

og_status og_value_new(og_kind kind, const og_allocator *alloc, og_tensor **out)
{
    alloc = og_alloc_or_default(alloc);
    og_tensor *v = og_calloc(alloc, 1, sizeof *v);
    *out = v;
    if (!v) return og_error(OG_ERR_NOMEM, "out of memory allocating a %s", og_kind_name(kind));
    v->alloc = alloc;
    v->kind = kind;
    v->depth = kind == OG_KIND_TENSOR ? 0 : 1;
    return OG_OK;
}

og_status og_value_append(og_tensor *c, og_tensor *item)
{
    if (c->kind == OG_KIND_OPTIONAL && c->n_items > 0) {
        og_tensor_free(item);
        return og_error(OG_ERR_INTERNAL, "an optional holds one value at most");
    }
    if (item->depth + 1 > OG_MAX_NESTING) {
        int depth = item->depth + 1; /* read before the item is freed */
        og_tensor_free(item);
        return og_error(OG_ERR_UNSUPPORTED, "values nest %d deep, above the limit %d", depth,
                        OG_MAX_NESTING);
    }
    if (c->n_items == c->cap_items) {
        int64_t cap = c->cap_items ? 2 * c->cap_items : 4;
        og_tensor **p =
            og_realloc(c->alloc, c->items, (size_t)c->n_items * sizeof *p, (size_t)cap * sizeof *p);
        if (!p) {
            og_tensor_free(item);
            return og_error(OG_ERR_NOMEM, "out of memory growing a %s", og_kind_name(c->kind));
        }
        c->items = p;
        c->cap_items = cap;
    }
    c->items[c->n_items++] = item;
    if (item->depth + 1 > c->depth) c->depth = item->depth + 1;
    return OG_OK;
}

og_status og_value_share(const og_tensor *src, const og_allocator *alloc, og_tensor **out)
{
    *out = NULL;
    if (src->kind == OG_KIND_TENSOR) {
        if (!src->buf) return og_tensor_alloc(src->dtype, src->rank, src->dims, alloc, out);
        size_t off = (size_t)((const char *)src->data - (const char *)src->buf->data);
        og_status st =
            og_tensor_view_at(src->buf, off, src->dtype, src->rank, src->dims, alloc, out);
        if (!st) (*out)->readonly = src->readonly;
        return st;
    }
    og_tensor *c = NULL;
    og_status st = og_value_new(src->kind, alloc, &c);
    if (!st && src->keys) st = og_value_share(src->keys, alloc, &c->keys);
    for (int64_t i = 0; !st && i < src->n_items; i++) {
        og_tensor *item = NULL;
        st = og_value_share(src->items[i], alloc, &item);
        if (!st) st = og_value_append(c, item);
    }
    if (st) {
        og_tensor_free(c);
        return st;
    }
    *out = c;
    return OG_OK;
}

bool og_value_equal(const og_tensor *a, const og_tensor *b)
{
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->n_items != b->n_items) return false;
    if (a->kind == OG_KIND_TENSOR) {
        if (a->dtype != b->dtype || a->rank != b->rank) return false;
        for (int d = 0; d < a->rank; d++)
            if (a->dims[d] != b->dims[d]) return false;
        if (a->dtype != OG_STRING)
            return a->numel == 0 || memcmp(a->data, b->data, og_tensor_nbytes(a)) == 0;
        for (int64_t i = 0; i < a->numel; i++)
            if (strcmp(og_tensor_str(a, i), og_tensor_str(b, i)) != 0) return false;
        return true;
    }
    if ((a->keys || b->keys) && !og_value_equal(a->keys, b->keys)) return false;
    for (int64_t i = 0; i < a->n_items; i++)
        if (!og_value_equal(a->items[i], b->items[i])) return false;
    return true;
}

/* Items that may share a container: tensors of one dtype, or values of one kind. */
static og_status check_items(const char *fn, const og_tensor *const *items, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (!items[i])
            return og_error(OG_ERR_INVALID_ARG, "%s: item %lld is NULL", fn, (long long)i);
        if (i == 0) continue;
        const og_tensor *x = items[0], *y = items[i];
        if (x->kind != y->kind)
            return og_error(OG_ERR_TYPE, "%s: item 0 is a %s, item %lld a %s", fn,
                            og_kind_name(x->kind), (long long)i, og_kind_name(y->kind));
        if (x->kind == OG_KIND_TENSOR && x->dtype != y->dtype)
            return og_error(OG_ERR_TYPE, "%s: item 0 is %s, item %lld %s", fn,
                            og_dtype_name(x->dtype), (long long)i, og_dtype_name(y->dtype));
    }
    return OG_OK;
}

/* c gets copies of items[0..n-1]; c is freed on failure. */
static og_status fill(og_tensor *c, const og_tensor *const *items, int64_t n,
                      const og_allocator *alloc, og_tensor **out)
{
    og_status st = OG_OK;
    for (int64_t i = 0; !st && i < n; i++) {
        og_tensor *item = NULL;
        st = og_tensor_clone(items[i], alloc, &item);
        if (!st) st = og_value_append(c, item);
    }
    if (st) {
        og_tensor_free(c);
        return st;
    }
    *out = c;
    return OG_OK;
}

og_status og_sequence_create(const og_tensor *const *items, int64_t n, const og_allocator *alloc,
                             og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_sequence_create: out is NULL");
    *out = NULL;
    if (n < 0 || (n && !items))
        return og_error(OG_ERR_INVALID_ARG, "og_sequence_create: bad items (n %lld)", (long long)n);
    og_status st = check_items("og_sequence_create", items, n);
    og_tensor *c = NULL;
    if (!st) st = og_value_new(OG_KIND_SEQUENCE, alloc, &c);
    return st ? st : fill(c, items, n, alloc, out);
}

int64_t og_sequence_length(const og_tensor *seq)
{
    return seq && seq->kind == OG_KIND_SEQUENCE ? seq->n_items : 0;
}

const og_tensor *og_sequence_item(const og_tensor *seq, int64_t i)
{
    if (!seq || seq->kind != OG_KIND_SEQUENCE || i < 0 || i >= seq->n_items) return NULL;
    return seq->items[i];
}

og_status og_map_create(const og_tensor *keys, const og_tensor *const *values,
                        const og_allocator *alloc, og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_map_create: out is NULL");
    *out = NULL;
    if (!keys || keys->kind != OG_KIND_TENSOR || keys->rank != 1)
        return og_error(OG_ERR_INVALID_ARG, "og_map_create: keys must be a 1-D tensor");
    if (keys->dtype != OG_INT64 && keys->dtype != OG_STRING)
        return og_error(OG_ERR_TYPE, "og_map_create: keys are %s, not int64 or string",
                        og_dtype_name(keys->dtype));
    int64_t n = keys->numel;
    if (n && !values) return og_error(OG_ERR_INVALID_ARG, "og_map_create: values is NULL");
    /* distinct keys: a quadratic scan is fine for the maps models make (class labels) */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) {
            bool same = keys->dtype == OG_INT64
                            ? ((const int64_t *)keys->data)[i] == ((const int64_t *)keys->data)[j]
                            : strcmp(og_tensor_str(keys, i), og_tensor_str(keys, j)) == 0;
            if (same)
                return og_error(OG_ERR_INVALID_ARG, "og_map_create: keys %lld and %lld are equal",
                                (long long)j, (long long)i);
        }
    og_status st = check_items("og_map_create", values, n);
    og_tensor *c = NULL;
    if (!st) st = og_value_new(OG_KIND_MAP, alloc, &c);
    if (!st) st = og_tensor_clone(keys, alloc, &c->keys);
    if (st) {
        og_tensor_free(c);
        return st;
    }
    return fill(c, values, n, alloc, out);
}

int64_t og_map_size(const og_tensor *map)
{
    return map && map->kind == OG_KIND_MAP ? map->n_items : 0;
}

const og_tensor *og_map_keys(const og_tensor *map)
{
    return map && map->kind == OG_KIND_MAP ? map->keys : NULL;
}

const og_tensor *og_map_value(const og_tensor *map, int64_t i)
{
    if (!map || map->kind != OG_KIND_MAP || i < 0 || i >= map->n_items) return NULL;
    return map->items[i];
}

og_status og_optional_create(const og_tensor *value, const og_allocator *alloc, og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_optional_create: out is NULL");
    *out = NULL;
    og_tensor *c = NULL;
    og_status st = og_value_new(OG_KIND_OPTIONAL, alloc, &c);
    if (st) return st;
    return fill(c, value ? &value : NULL, value ? 1 : 0, alloc, out);
}

const og_tensor *og_optional_value(const og_tensor *opt)
{
    if (!opt || opt->kind != OG_KIND_OPTIONAL || opt->n_items == 0) return NULL;
    return opt->items[0];
}
