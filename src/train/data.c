/*
 * data.c: datasets (features, targets, optional sample weights) read from CSV, .npy and
 * .npz files or copied from tensors; seeded splits; batches gathered by index.
 *
 * The CSV reader works on the whole file in memory: one pass, numbers parsed in place
 * (no allocation per cell), output rows written straight into the tensors' buffers, which
 * are sized from the file's newline count (an upper bound on the rows).
 */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "onnx/onnx_io.h"
#include "train/train.h"

struct og_dataset {
    og_allocator alloc;             /* own copy: the dataset's tensors and names use it */
    const og_allocator *user_alloc; /* the caller's: batches and split halves use it */
    int64_t n;
    og_tensor *x, *y, *w;
    char **names; /* n_names feature names (CSV with header), else NULL */
    int64_t n_names;
};

/* ---- the dataset object -------------------------------------------------------------- */

static og_dataset *dataset_new(const og_allocator *a)
{
    a = og_alloc_or_default(a);
    og_dataset *d = og_calloc(a, 1, sizeof *d);
    if (!d) return NULL;
    d->alloc = *a;
    d->user_alloc = a;
    return d;
}

void og_dataset_free(og_dataset *d)
{
    if (!d) return;
    og_allocator a = d->alloc; /* the dataset's copy dies with it */
    og_tensor_free(d->x);
    og_tensor_free(d->y);
    og_tensor_free(d->w);
    if (d->names)
        for (int64_t i = 0; i < d->n_names; i++) og_free(&a, d->names[i]);
    og_free(&a, d->names);
    og_free(&a, d);
}

int64_t og_dataset_size(const og_dataset *d) { return d ? d->n : 0; }
const og_tensor *og_dataset_features(const og_dataset *d) { return d ? d->x : NULL; }
const og_tensor *og_dataset_targets(const og_dataset *d) { return d ? d->y : NULL; }
const og_tensor *og_dataset_weights(const og_dataset *d) { return d ? d->w : NULL; }

const char *og_dataset_feature_name(const og_dataset *d, int64_t i)
{
    if (!d || !d->names) return NULL; /* no header: no names, and no error */
    if (i < 0 || i >= d->n_names) {
        og_error(OG_ERR_INVALID_ARG,
                 "og_dataset_feature_name: index %lld is outside 0..%lld (the dataset has %lld "
                 "named columns)",
                 (long long)i, (long long)d->n_names - 1, (long long)d->n_names);
        return NULL;
    }
    return d->names[i];
}

/* Copies of src[0..n) (NULL entries stay NULL) into d->names. */
static og_status set_names(og_dataset *d, char *const *src, int64_t n)
{
    d->names = og_calloc(&d->alloc, (size_t)n, sizeof *d->names);
    if (!d->names) return og_error(OG_ERR_NOMEM, "out of memory");
    d->n_names = n;
    for (int64_t i = 0; i < n; i++) {
        if (!src[i]) continue;
        d->names[i] = og_strdup(&d->alloc, src[i]);
        if (!d->names[i]) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    return OG_OK;
}

/* Checks shared by og_dataset_from_tensors and the file readers. */
static og_status check_parts(const og_tensor *x, const og_tensor *y, const og_tensor *w)
{
    char s1[64], s2[64], s3[64];
    if (x->dtype != OG_FLOAT)
        return og_error(OG_ERR_TYPE, "dataset features must be float32, not %s",
                        og_dtype_name(x->dtype));
    if (y->dtype != OG_FLOAT && y->dtype != OG_INT64)
        return og_error(OG_ERR_TYPE, "dataset targets must be float32 or int64, not %s",
                        og_dtype_name(y->dtype));
    if (w && w->dtype != OG_FLOAT)
        return og_error(OG_ERR_TYPE, "dataset sample weights must be float32, not %s",
                        og_dtype_name(w->dtype));
    if (x->rank < 1 || y->rank < 1)
        return og_error(OG_ERR_SHAPE, "dataset features %s and targets %s need a sample dim",
                        og_shape_str(x->rank, x->dims, s1, sizeof s1),
                        og_shape_str(y->rank, y->dims, s2, sizeof s2));
    if (w && w->rank != 1)
        return og_error(OG_ERR_SHAPE, "dataset sample weights must be [N], not %s",
                        og_shape_str(w->rank, w->dims, s1, sizeof s1));
    if (x->dims[0] != y->dims[0] || (w && w->dims[0] != x->dims[0]))
        return og_error(OG_ERR_SHAPE, "sample counts differ: features %s, targets %s%s%s",
                        og_shape_str(x->rank, x->dims, s1, sizeof s1),
                        og_shape_str(y->rank, y->dims, s2, sizeof s2), w ? ", weights " : "",
                        w ? og_shape_str(w->rank, w->dims, s3, sizeof s3) : "");
    if (x->dims[0] == 0) return og_error(OG_ERR_INVALID_ARG, "empty dataset (no samples)");
    return OG_OK;
}

og_status og_dataset_from_tensors(const og_tensor *x, const og_tensor *y, const og_tensor *w,
                                  const og_allocator *alloc, og_dataset **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_dataset_from_tensors: out is NULL");
    *out = NULL;
    if (!x || !y) return og_error(OG_ERR_INVALID_ARG, "og_dataset_from_tensors: x or y is NULL");
    og_status st = check_parts(x, y, w);
    if (st) return st;
    og_dataset *d = dataset_new(alloc);
    if (!d) return og_error(OG_ERR_NOMEM, "out of memory");
    d->n = x->dims[0];
    st = og_tensor_clone(x, &d->alloc, &d->x);
    if (!st) st = og_tensor_clone(y, &d->alloc, &d->y);
    if (!st && w) st = og_tensor_clone(w, &d->alloc, &d->w);
    if (st) {
        og_dataset_free(d);
        return st;
    }
    *out = d;
    return OG_OK;
}

/* ---- batches and splits -------------------------------------------------------------- */

/* Rows idx[0..n) of src (indices already checked) into a new tensor. */
static og_status gather(const og_tensor *src, const int64_t *idx, int64_t n, const og_allocator *a,
                        og_tensor **out)
{
    int64_t dims[OG_MAX_RANK];
    memcpy(dims, src->dims, sizeof dims);
    dims[0] = n;
    og_status st = og_tensor_alloc(src->dtype, src->rank, dims, a, out);
    if (st) return st;
    size_t row = og_tensor_nbytes(src) / (size_t)src->dims[0];
    const unsigned char *s = src->data;
    unsigned char *o = (*out)->data;
    for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * row, s + (size_t)idx[i] * row, row);
    return OG_OK;
}

og_status og_dataset_batch(const og_dataset *d, const int64_t *indices, int64_t n, og_tensor **x,
                           og_tensor **y, og_tensor **w)
{
    if (x) *x = NULL;
    if (y) *y = NULL;
    if (w) *w = NULL;
    if (!d || !x || !y || n < 0 || (n > 0 && !indices))
        return og_error(OG_ERR_INVALID_ARG, "og_dataset_batch: NULL argument or negative count");
    for (int64_t i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= d->n)
            return og_error(OG_ERR_INVALID_ARG,
                            "og_dataset_batch: indices[%lld] = %lld is outside 0..%lld",
                            (long long)i, (long long)indices[i], (long long)d->n - 1);
    og_status st = gather(d->x, indices, n, d->user_alloc, x);
    if (!st) st = gather(d->y, indices, n, d->user_alloc, y);
    if (!st && w && d->w) st = gather(d->w, indices, n, d->user_alloc, w);
    if (st) {
        og_tensor_free(*x);
        og_tensor_free(*y);
        *x = *y = NULL;
    }
    return st;
}

/* A dataset of rows idx[0..n) of d. */
static og_status subset(const og_dataset *d, const int64_t *idx, int64_t n, og_dataset **out)
{
    og_dataset *s = dataset_new(d->user_alloc);
    if (!s) return og_error(OG_ERR_NOMEM, "out of memory");
    s->n = n;
    og_status st = gather(d->x, idx, n, &s->alloc, &s->x);
    if (!st) st = gather(d->y, idx, n, &s->alloc, &s->y);
    if (!st && d->w) st = gather(d->w, idx, n, &s->alloc, &s->w);
    if (!st && d->names) st = set_names(s, d->names, d->n_names);
    if (st) {
        og_dataset_free(s);
        return st;
    }
    *out = s;
    return OG_OK;
}

og_status og_dataset_split(const og_dataset *d, double fraction, uint64_t seed, og_dataset **train,
                           og_dataset **val)
{
    if (train) *train = NULL;
    if (val) *val = NULL;
    if (!d || !train || !val)
        return og_error(OG_ERR_INVALID_ARG, "og_dataset_split: NULL argument");
    if (!(fraction > 0.0 && fraction < 1.0))
        return og_error(OG_ERR_INVALID_ARG, "og_dataset_split: fraction %g is outside (0, 1)",
                        fraction);
    int64_t n_val = (int64_t)llround(fraction * (double)d->n), n_train = d->n - n_val;
    if (n_val < 1 || n_train < 1)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_dataset_split: fraction %g of %lld samples leaves %lld for training "
                        "and %lld for validation (both must be at least 1)",
                        fraction, (long long)d->n, (long long)n_train, (long long)n_val);
    int64_t *perm = og_malloc(d->user_alloc, (size_t)d->n * sizeof *perm);
    if (!perm) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < d->n; i++) perm[i] = i;
    og_rng r;
    og_rng_seed(&r, seed);
    og_rng_shuffle(&r, perm, d->n);
    og_status st = subset(d, perm, n_train, train);
    if (!st) st = subset(d, perm + n_train, n_val, val);
    if (st) {
        og_dataset_free(*train);
        *train = NULL;
    }
    og_free(d->user_alloc, perm);
    return st;
}

/* ---- columns: which file columns become features, targets, weights ------------------ */

typedef struct roles {
    int64_t *feat, n_feat; /* source column of each feature */
    int64_t *tgt, n_tgt;   /* source column of each target */
    int64_t weight;        /* -1: none */
} roles;

static void roles_free(const og_allocator *a, roles *r)
{
    og_free(a, r->feat);
    og_free(a, r->tgt);
}

/* A non-negative decimal integer, nothing else. */
static bool parse_index(const char *s, int64_t *out)
{
    int64_t v = 0;
    if (!*s) return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10) return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

/* "a, b, c, ... (785 in all)" into buf. */
static void list_names(char *buf, size_t cap, char *const *names, int64_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (used + len + 24 >= cap) {
            snprintf(buf + used, cap - used, "%s... (%lld in all)", i ? " " : "", (long long)n);
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", names[i], i + 1 < n ? ", " : "");
    }
}

static og_status find_column(const char *path, const char *spec, char *const *names, int64_t ncols,
                             int64_t *out)
{
    int64_t k;
    if (!spec) return og_error(OG_ERR_INVALID_ARG, "%s: a column name is NULL", path);
    if (names)
        for (int64_t i = 0; i < ncols; i++)
            if (strcmp(names[i], spec) == 0) {
                *out = i;
                return OG_OK;
            }
    if (parse_index(spec, &k)) {
        if (k < ncols) {
            *out = k;
            return OG_OK;
        }
        return og_error(OG_ERR_INVALID_ARG, "%s: column index %lld is out of range (%lld columns)",
                        path, (long long)k, (long long)ncols);
    }
    if (names) {
        char list[600];
        list_names(list, sizeof list, names, ncols);
        return og_error(OG_ERR_INVALID_ARG, "%s: no column '%s'; the columns are: %s", path, spec,
                        list);
    }
    return og_error(OG_ERR_INVALID_ARG,
                    "%s: no column '%s': without a header, columns are chosen by 0-based index "
                    "(0..%lld)",
                    path, spec, (long long)ncols - 1);
}

static og_status resolve_roles(const char *path, const og_data_options *o, char *const *names,
                               int64_t ncols, const og_allocator *a, roles *r)
{
    og_status st = OG_OK;
    memset(r, 0, sizeof *r);
    r->weight = -1;
    bool own_t = o && o->targets && o->n_targets > 0;
    bool own_f = o && o->features && o->n_features > 0;
    if (o && o->weight) {
        st = find_column(path, o->weight, names, ncols, &r->weight);
        if (st) return st;
    }
    r->n_tgt = own_t ? o->n_targets : 1;
    r->tgt = og_malloc(a, (size_t)r->n_tgt * sizeof *r->tgt);
    r->feat = og_malloc(a, (size_t)ncols * sizeof *r->feat +
                               (own_f ? (size_t)o->n_features : 0) * sizeof *r->feat);
    if (!r->tgt || !r->feat) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (own_t) {
        for (int64_t i = 0; i < r->n_tgt; i++) {
            st = find_column(path, o->targets[i], names, ncols, &r->tgt[i]);
            if (st) goto fail;
        }
    } else {
        r->tgt[0] = ncols - 1 == r->weight ? ncols - 2 : ncols - 1;
        if (r->tgt[0] < 0) {
            st = og_error(OG_ERR_INVALID_ARG, "%s: no column is left for the target", path);
            goto fail;
        }
    }
    if (own_f) {
        r->n_feat = o->n_features;
        for (int64_t i = 0; i < r->n_feat; i++) {
            st = find_column(path, o->features[i], names, ncols, &r->feat[i]);
            if (st) goto fail;
        }
    } else {
        for (int64_t c = 0; c < ncols; c++) {
            bool used = c == r->weight;
            for (int64_t k = 0; k < r->n_tgt && !used; k++) used = r->tgt[k] == c;
            if (!used) r->feat[r->n_feat++] = c;
        }
        if (r->n_feat == 0) {
            st = og_error(OG_ERR_INVALID_ARG,
                          "%s: no feature column is left (every column is a target or the weight)",
                          path);
            goto fail;
        }
    }
    return OG_OK;
fail:
    roles_free(a, r);
    memset(r, 0, sizeof *r);
    return st;
}

/* ---- numbers --------------------------------------------------------------------------- */

static float to_f32(double v)
{
    if (v > FLT_MAX) return INFINITY;
    if (v < -FLT_MAX) return -INFINITY;
    return (float)v;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Case-insensitive match of the ASCII word w at [p, end). */
static bool word_at(const char *p, const char *end, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(end - p) < n) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)p[i]) != w[i]) return false;
    return true;
}

/* Powers of ten exact in a double. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A decimal number at [p, end): [+-]digits[.digits][(e|E)[+-]digits] (digits on at least
 * one side of the point), or nan / inf / infinity in any case.  Returns where it stopped;
 * p itself when there is no number.  Independent of the C locale.  Up to 19 significant
 * digits and |exponent| <= 22 are converted exactly (correctly rounded); longer ones go
 * through long double, close enough for the float32 the values become. */
static const char *parse_number(const char *p, const char *end, double *out)
{
    const char *start = p;
    bool neg = false;
    if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
    uint64_t m = 0;
    int nd = 0;
    int64_t e = 0;
    bool any = false, inexact = false;
    for (; p < end && is_digit(*p); p++) {
        int dg = *p - '0';
        any = true;
        if (nd < 19) {
            if (m || dg) m = m * 10 + (uint64_t)dg, nd += m != 0;
        } else {
            e++;
            inexact |= dg != 0;
        }
    }
    if (p < end && *p == '.') {
        for (p++; p < end && is_digit(*p); p++) {
            int dg = *p - '0';
            any = true;
            if (nd < 19) {
                m = m * 10 + (uint64_t)dg;
                nd += m != 0;
                e--;
            } else {
                inexact |= dg != 0;
            }
        }
    }
    if (!any) {
        if (p != start + (neg || (start < end && *start == '+'))) return start; /* a lone "." */
        double v;
        if (word_at(p, end, "infinity"))
            v = INFINITY, p += 8;
        else if (word_at(p, end, "inf"))
            v = INFINITY, p += 3;
        else if (word_at(p, end, "nan"))
            v = NAN, p += 3;
        else
            return start;
        *out = neg ? -v : v;
        return p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        bool eneg = false;
        if (q < end && (*q == '+' || *q == '-')) eneg = *q++ == '-';
        if (q < end && is_digit(*q)) {
            int64_t x = 0;
            for (; q < end && is_digit(*q); q++)
                if (x < 100000) x = x * 10 + (*q - '0');
            e += eneg ? -x : x;
            p = q;
        }
    }
    double v;
    if (m == 0)
        v = 0.0;
    else if (!inexact && m <= ((uint64_t)1 << 53) && e >= -22 && e <= 22)
        v = e < 0 ? (double)m / pow10_exact[-e] : (double)m * pow10_exact[e];
    else if (e > 400)
        v = INFINITY;
    else if (e < -400)
        v = 0.0;
    else
        v = (double)((long double)m * powl(10.0L, (long double)e));
    *out = neg ? -v : v;
    return p;
}

/* An integer at [s, e) exactly: [+-]digits, or a number with an integral value that a
 * double holds exactly ("3.0", "1e3"). */
static bool parse_int_cell(const char *s, const char *e, int64_t *out)
{
    const char *p = s;
    bool neg = false;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (p < e) {
        uint64_t v = 0;
        const char *q = p;
        for (; q < e && is_digit(*q) && v <= (uint64_t)INT64_MAX / 10; q++)
            v = v * 10 + (uint64_t)(*q - '0');
        if (q == e && v <= (uint64_t)INT64_MAX) {
            *out = neg ? -(int64_t)v : (int64_t)v;
            return true;
        }
    }
    double d;
    if (parse_number(s, e, &d) != e || s == e) return false;
    if (!(fabs(d) <= 9007199254740992.0) || d != floor(d)) return false;
    *out = (int64_t)d;
    return true;
}

static bool has_ext(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return false;
    size_t n = strlen(ext);
    if (strlen(dot) != n) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)dot[i]) != ext[i]) return false;
    return true;
}

/* ---- CSV ----------------------------------------------------------------------------- */

typedef struct csv {
    const char *path;
    const char *p, *end;
    char delim;
    int64_t line; /* 1-based line of p */
} csv;

static bool is_ws(const csv *c, char ch)
{
    return (ch == ' ' || ch == '\t' || ch == '\r') && ch != c->delim;
}

/* Consume one field, leaving c->p at the delimiter, the newline or the end.  Its content
 * is [*s, *e): trimmed when unquoted, between the quotes (with "" escapes left in, *esc
 * set) when quoted. */
static og_status scan_field(csv *c, const char **s, const char **e, bool *quoted, bool *esc)
{
    const char *p = c->p, *end = c->end;
    *esc = false;
    while (p < end && is_ws(c, *p)) p++;
    if (p < end && *p == '"') {
        int64_t open_line = c->line;
        *s = ++p;
        for (;;) {
            if (p == end)
                return og_error(OG_ERR_PARSE, "%s: line %lld: unterminated quoted field", c->path,
                                (long long)open_line);
            if (*p == '"') {
                if (p + 1 < end && p[1] == '"') {
                    *esc = true;
                    p += 2;
                    continue;
                }
                break;
            }
            if (*p == '\n') c->line++;
            p++;
        }
        *e = p++;
        while (p < end && is_ws(c, *p)) p++;
        if (p < end && *p != c->delim && *p != '\n')
            return og_error(OG_ERR_PARSE, "%s: line %lld: unexpected '%c' after a closing quote",
                            c->path, (long long)c->line, *p);
        *quoted = true;
    } else {
        *s = p;
        while (p < end && *p != c->delim && *p != '\n') p++;
        const char *r = p;
        while (r > *s && is_ws(c, r[-1])) r--;
        *e = r;
        *quoted = false;
    }
    c->p = p;
    return OG_OK;
}

/* After a field: true (and past it) at a delimiter; false at the end of the record (the
 * newline consumed). */
static bool next_field(csv *c)
{
    if (c->p < c->end && *c->p == c->delim) {
        c->p++;
        return true;
    }
    if (c->p < c->end && *c->p == '\n') {
        c->p++;
        c->line++;
    }
    return false;
}

/* Skip lines of only whitespace; false at the end of the input. */
static bool skip_blank(csv *c)
{
    for (;;) {
        const char *p = c->p;
        while (p < c->end && is_ws(c, *p)) p++;
        if (p == c->end) {
            c->p = p;
            return false;
        }
        if (*p != '\n') return true;
        c->p = p + 1;
        c->line++;
    }
}

/* Number of fields of the record at c->p (c is left unchanged). */
static og_status count_fields(csv c, int64_t *n)
{
    const char *s, *e;
    bool q, esc;
    *n = 0;
    do {
        og_status st = scan_field(&c, &s, &e, &q, &esc);
        if (st) return st;
        ++*n;
    } while (next_field(&c));
    return OG_OK;
}

/* The header record as names (quotes removed, "" unescaped). */
static og_status read_header(csv *c, const og_allocator *a, char ***names, int64_t *n)
{
    int64_t cap = 0;
    *names = NULL;
    *n = 0;
    og_status st = count_fields(*c, &cap);
    if (st) return st;
    *names = og_calloc(a, (size_t)cap, sizeof **names);
    if (!*names) return og_error(OG_ERR_NOMEM, "out of memory");
    do {
        const char *s, *e;
        bool quoted, esc;
        st = scan_field(c, &s, &e, &quoted, &esc);
        if (st) return st;
        OG_ASSERT(*n < cap);
        char *name = og_malloc(a, (size_t)(e - s) + 1);
        if (!name) return og_error(OG_ERR_NOMEM, "out of memory");
        size_t k = 0;
        for (const char *p = s; p < e; p++) {
            name[k++] = *p;
            if (esc && *p == '"') p++; /* "" -> " */
        }
        name[k] = 0;
        (*names)[(*n)++] = name;
    } while (next_field(c));
    return OG_OK;
}

static void free_names(const og_allocator *a, char **names, int64_t n)
{
    if (!names) return;
    for (int64_t i = 0; i < n; i++) og_free(a, names[i]);
    og_free(a, names);
}

/* "'age' (index 2)" or "index 2", for messages. */
static const char *col_desc(char *buf, size_t cap, char *const *names, int64_t col)
{
    if (names)
        snprintf(buf, cap, "'%s' (index %lld)", names[col], (long long)col);
    else
        snprintf(buf, cap, "index %lld", (long long)col);
    return buf;
}

/* The rest of the record after field `have`: its full field count, as an error. */
static og_status ragged(csv *c, int64_t rec_line, int64_t have, bool more, int64_t want,
                        bool header)
{
    const char *s, *e;
    bool q, esc;
    while (more) {
        og_status st = scan_field(c, &s, &e, &q, &esc);
        if (st) return st;
        have++;
        more = next_field(c);
    }
    return og_error(OG_ERR_PARSE, "%s: line %lld has %lld fields, expected %lld (as %s)", c->path,
                    (long long)rec_line, (long long)have, (long long)want,
                    header ? "the header" : "the first row");
}

static og_status load_csv(og_dataset *d, const char *path, const og_data_options *o,
                          const char *text, size_t size)
{
    const og_allocator *a = &d->alloc;
    og_status st = OG_OK;
    char **names = NULL;
    int64_t ncols = 0;
    roles r = {0};
    double *vals = NULL;
    int64_t *ivals = NULL;
    unsigned char *need = NULL;
    og_buffer *bx = NULL, *by = NULL, *bw = NULL;
    char cd[160];
    bool int_targets = o && o->target_dtype == OG_INT64;
    csv c = {path, text, text + size, o && o->delimiter ? o->delimiter : ',', 1};
    if (!(o && o->delimiter) && has_ext(path, ".tsv")) c.delim = '\t';
    if (c.delim == '"' || c.delim == '\n' || c.delim == '\r')
        return og_error(OG_ERR_INVALID_ARG, "%s: delimiter 0x%02x is not allowed", path,
                        (unsigned)(unsigned char)c.delim);
    if (size >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) c.p += 3; /* UTF-8 BOM */
    if (!skip_blank(&c)) return og_error(OG_ERR_INVALID_ARG, "%s: empty file", path);
    bool header = !(o && o->no_header);
    if (header) {
        st = read_header(&c, a, &names, &ncols);
    } else {
        st = count_fields(c, &ncols);
    }
    if (st) goto done;
    st = resolve_roles(path, o, names, ncols, a, &r);
    if (st) goto done;

    vals = og_malloc(a, (size_t)ncols * sizeof *vals);
    ivals = og_malloc(a, (size_t)ncols * sizeof *ivals);
    need = og_calloc(a, (size_t)ncols, 1); /* bit 1: as float, bit 2: as integer */
    if (!vals || !ivals || !need) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t j = 0; j < r.n_feat; j++) need[r.feat[j]] |= 1;
    for (int64_t k = 0; k < r.n_tgt; k++) need[r.tgt[k]] |= int_targets ? 2 : 1;
    if (r.weight >= 0) need[r.weight] |= 1;

    /* an upper bound on the rows: the lines left */
    int64_t max_rows = 1;
    for (const char *p = c.p; (p = memchr(p, '\n', (size_t)(c.end - p))) != NULL; p++) max_rows++;
    size_t nbx, nby, nbw;
    if (!og_mul_size((size_t)max_rows, (size_t)r.n_feat * sizeof(float), &nbx) ||
        !og_mul_size((size_t)max_rows, (size_t)r.n_tgt * 8, &nby) ||
        !og_mul_size((size_t)max_rows, sizeof(float), &nbw)) {
        st = og_error(OG_ERR_NOMEM, "%s: too many rows", path);
        goto done;
    }
    bx = og_buffer_new(a, nbx);
    by = og_buffer_new(a, nby);
    bw = r.weight >= 0 ? og_buffer_new(a, nbw) : NULL;
    if (!bx || !by || (r.weight >= 0 && !bw)) {
        st = og_error(OG_ERR_NOMEM, "out of memory for the data of %s (%lld lines)", path,
                      (long long)max_rows);
        goto done;
    }
    float *X = bx->data, *Yf = by->data, *W = bw ? bw->data : NULL;
    int64_t *Yi = by->data;
    int64_t n = 0;
    while (skip_blank(&c)) {
        int64_t rec_line = c.line, col = 0;
        bool more = true;
        while (more) {
            if (col == ncols) {
                st = ragged(&c, rec_line, col, more, ncols, header);
                goto done;
            }
            int64_t cell_line = c.line;
            const char *s, *e;
            bool quoted, esc;
            st = scan_field(&c, &s, &e, &quoted, &esc);
            if (st) goto done;
            if (need[col]) {
                if (quoted)
                    while (s < e && is_ws(&c, *s)) s++;
                if (quoted)
                    while (e > s && is_ws(&c, e[-1])) e--;
                if (s == e) {
                    st = og_error(OG_ERR_PARSE, "%s: line %lld, column %s: empty cell", path,
                                  (long long)cell_line, col_desc(cd, sizeof cd, names, col));
                    goto done;
                }
                bool ok = !esc;
                if (ok && (need[col] & 1)) ok = parse_number(s, e, &vals[col]) == e;
                if (ok && (need[col] & 2)) ok = parse_int_cell(s, e, &ivals[col]);
                if (!ok) {
                    char cell[48];
                    size_t len = (size_t)(e - s) > 40 ? 40 : (size_t)(e - s);
                    for (size_t i = 0; i < len; i++) /* the message stays one line */
                        cell[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
                    cell[len] = 0;
                    st = og_error(OG_ERR_PARSE, "%s: line %lld, column %s: '%s%s' is not %s", path,
                                  (long long)cell_line, col_desc(cd, sizeof cd, names, col), cell,
                                  e - s > 40 ? "..." : "",
                                  (need[col] & 2) ? "an integer (the targets are int64)"
                                                  : "a number");
                    goto done;
                }
            }
            col++;
            more = next_field(&c);
        }
        if (col != ncols) {
            st = ragged(&c, rec_line, col, false, ncols, header);
            goto done;
        }
        OG_ASSERT(n < max_rows);
        float *xr = X + n * r.n_feat;
        for (int64_t j = 0; j < r.n_feat; j++) xr[j] = to_f32(vals[r.feat[j]]);
        if (int_targets)
            for (int64_t k = 0; k < r.n_tgt; k++) Yi[n * r.n_tgt + k] = ivals[r.tgt[k]];
        else
            for (int64_t k = 0; k < r.n_tgt; k++) Yf[n * r.n_tgt + k] = to_f32(vals[r.tgt[k]]);
        if (W) W[n] = to_f32(vals[r.weight]);
        n++;
    }
    if (n == 0) {
        st = og_error(OG_ERR_INVALID_ARG, "%s: empty dataset (%s)", path,
                      header ? "a header and no data rows" : "no data rows");
        goto done;
    }
    d->n = n;
    int64_t dx[2] = {n, r.n_feat}, dy[2] = {n, r.n_tgt};
    st = og_tensor_from_buffer(OG_FLOAT, 2, dx, bx, a, &d->x);
    if (st) goto done;
    bx = NULL;
    st = og_tensor_from_buffer(int_targets ? OG_INT64 : OG_FLOAT, r.n_tgt == 1 ? 1 : 2, dy, by, a,
                               &d->y);
    if (st) goto done;
    by = NULL;
    if (bw) {
        st = og_tensor_from_buffer(OG_FLOAT, 1, dx, bw, a, &d->w);
        if (st) goto done;
        bw = NULL;
    }
    if (names) {
        d->names = og_calloc(a, (size_t)r.n_feat, sizeof *d->names);
        if (!d->names) {
            st = og_error(OG_ERR_NOMEM, "out of memory");
            goto done;
        }
        d->n_names = r.n_feat;
        for (int64_t j = 0; j < r.n_feat; j++) {
            d->names[j] = og_strdup(a, names[r.feat[j]]);
            if (!d->names[j]) {
                st = og_error(OG_ERR_NOMEM, "out of memory");
                goto done;
            }
        }
    }
done:
    og_buffer_release(bx);
    og_buffer_release(by);
    og_buffer_release(bw);
    og_free(a, vals);
    og_free(a, ivals);
    og_free(a, need);
    roles_free(a, &r);
    free_names(a, names, ncols);
    return st;
}

/* ---- arrays: .npy and .npz ----------------------------------------------------------- */

/* *t as float32: unchanged when it is already, else replaced by a converted copy. */
static og_status to_float_tensor(const og_allocator *a, og_tensor **t)
{
    og_tensor *s = *t, *f = NULL;
    if (s->dtype == OG_FLOAT) return OG_OK;
    og_status st = og_tensor_alloc(OG_FLOAT, s->rank, s->dims, a, &f);
    if (st) return st;
    float *o = f->data;
    if (s->dtype == OG_DOUBLE) {
        const double *v = s->data;
        for (int64_t i = 0; i < s->numel; i++) o[i] = to_f32(v[i]);
    } else {
        for (int64_t i = 0; i < s->numel; i++) o[i] = to_f32(og_tensor_get_f64(s, i));
    }
    og_tensor_free(s);
    *t = f;
    return OG_OK;
}

/* *t as int64: integers and bools are widened; floats must hold integral values. */
static og_status to_int64_tensor(const og_allocator *a, og_tensor **t, const char *what)
{
    og_tensor *s = *t, *f = NULL;
    if (s->dtype == OG_INT64) return OG_OK;
    og_status st = og_tensor_alloc(OG_INT64, s->rank, s->dims, a, &f);
    if (st) return st;
    int64_t *o = f->data;
    bool is_float = og_dtype_is_float(s->dtype);
    for (int64_t i = 0; i < s->numel; i++) {
        if (!is_float) {
            o[i] = og_tensor_get_i64(s, i);
            continue;
        }
        double v = og_tensor_get_f64(s, i);
        if (!(fabs(v) <= 9007199254740992.0) || v != floor(v)) {
            og_tensor_free(f);
            return og_error(OG_ERR_TYPE,
                            "%s: element %lld is %g, not an integer (the targets are int64)", what,
                            (long long)i, v);
        }
        o[i] = (int64_t)v;
    }
    og_tensor_free(s);
    *t = f;
    return OG_OK;
}

static og_status load_npy(og_dataset *d, const char *path, const og_data_options *o,
                          const void *bytes, size_t size)
{
    const og_allocator *a = &d->alloc;
    og_tensor *t = NULL;
    roles r = {0};
    char sh[64];
    bool int_targets = o && o->target_dtype == OG_INT64;
    og_status st = og_npy_load_buffer(bytes, size, a, &t);
    if (st) return og_error_prefix(st, "%s", path);
    if (t->dtype == OG_STRING) {
        st = og_error(OG_ERR_UNSUPPORTED, "%s holds strings; datasets hold numbers", path);
        goto done;
    }
    if (t->rank != 2) {
        st = og_error(OG_ERR_SHAPE, "%s: a .npy dataset is a 2-D array [samples, columns], not %s",
                      path, og_shape_str(t->rank, t->dims, sh, sizeof sh));
        goto done;
    }
    int64_t n = t->dims[0], ncols = t->dims[1];
    if (n == 0 || ncols == 0) {
        st = og_error(OG_ERR_INVALID_ARG, "%s: empty dataset (shape %s)", path,
                      og_shape_str(t->rank, t->dims, sh, sizeof sh));
        goto done;
    }
    st = resolve_roles(path, o, NULL, ncols, a, &r);
    if (st) goto done;
    d->n = n;
    int64_t dx[2] = {n, r.n_feat}, dy[2] = {n, r.n_tgt};
    st = og_tensor_alloc(OG_FLOAT, 2, dx, a, &d->x);
    if (!st)
        st = og_tensor_alloc(int_targets ? OG_INT64 : OG_FLOAT, r.n_tgt == 1 ? 1 : 2, dy, a, &d->y);
    if (!st && r.weight >= 0) st = og_tensor_alloc(OG_FLOAT, 1, dx, a, &d->w);
    if (st) goto done;
    float *X = d->x->data, *W = d->w ? d->w->data : NULL;
    bool is_float = og_dtype_is_float(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t row = i * ncols;
        for (int64_t j = 0; j < r.n_feat; j++)
            X[i * r.n_feat + j] = to_f32(og_tensor_get_f64(t, row + r.feat[j]));
        for (int64_t k = 0; k < r.n_tgt; k++) {
            int64_t at = row + r.tgt[k], out = i * r.n_tgt + k;
            if (!int_targets) {
                ((float *)d->y->data)[out] = to_f32(og_tensor_get_f64(t, at));
            } else if (!is_float) {
                ((int64_t *)d->y->data)[out] = og_tensor_get_i64(t, at);
            } else {
                double v = og_tensor_get_f64(t, at);
                if (!(fabs(v) <= 9007199254740992.0) || v != floor(v)) {
                    st = og_error(OG_ERR_TYPE,
                                  "%s: row %lld, column %lld is %g, not an integer (the targets "
                                  "are int64)",
                                  path, (long long)i, (long long)r.tgt[k], v);
                    goto done;
                }
                ((int64_t *)d->y->data)[out] = (int64_t)v;
            }
        }
        if (W) W[i] = to_f32(og_tensor_get_f64(t, row + r.weight));
    }
done:
    og_tensor_free(t);
    roles_free(a, &r);
    return st;
}

/* "X, y, sample_weight": the arrays of an archive, for messages. */
static void list_arrays(char *buf, size_t cap, const og_zip *z)
{
    size_t used = 0;
    buf[0] = 0;
    for (int64_t i = 0; i < z->n_entries; i++) {
        const char *nm = z->entries[i].name;
        size_t len = strlen(nm);
        if (len >= 4 && strcmp(nm + len - 4, ".npy") == 0) len -= 4;
        if (used + len + 24 >= cap) {
            snprintf(buf + used, cap - used, "%s... (%lld in all)", i ? " " : "",
                     (long long)z->n_entries);
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%.*s%s", (int)len, nm,
                                 i + 1 < z->n_entries ? ", " : "");
    }
}

/* The array name to use: `given`, else the first of `defaults` present in the archive. */
static og_status pick_array(const char *path, const og_zip *z, const char *role, const char *given,
                            const char *const *defaults, const char **out)
{
    char list[600];
    if (given) {
        if (og_npz_find(z, given) >= 0) {
            *out = given;
            return OG_OK;
        }
        list_arrays(list, sizeof list, z);
        return og_error(OG_ERR_INVALID_ARG, "%s: no array '%s' (%s); the arrays are: %s", path,
                        given, role, list);
    }
    for (int i = 0; defaults[i]; i++)
        if (og_npz_find(z, defaults[i]) >= 0) {
            *out = defaults[i];
            return OG_OK;
        }
    list_arrays(list, sizeof list, z);
    return og_error(OG_ERR_INVALID_ARG,
                    "%s: no %s array (name it in the options); the arrays are: %s", path, role,
                    list);
}

/* The most bytes a load may read and decode (og_data_options.max_memory). */
static uint64_t data_limit(const og_data_options *o)
{
    return o && o->max_memory > 0 ? (uint64_t)o->max_memory : (uint64_t)OG_DEFAULT_MAX_DATA_MEMORY;
}

static og_status load_npz(og_dataset *d, const char *path, const og_data_options *o,
                          const void *bytes, size_t size)
{
    static const char *const x_names[] = {"X", "x", "data", "features", NULL};
    static const char *const y_names[] = {"y", "Y", "target", "targets", "label", "labels", NULL};
    const og_allocator *a = &d->alloc;
    og_zip z;
    char what[160];
    const char *xn = NULL, *yn = NULL, *wn = NULL;
    char *feat_name = NULL; /* the features array found by elimination */
    bool int_targets = o && o->target_dtype == OG_INT64;
    og_status st = og_zip_open(bytes, size, path, a, &z);
    if (st) return st;
    /* the archive's bytes count against the limit, then each array as it inflates */
    uint64_t budget = data_limit(o);
    budget = budget > size ? budget - size : 0;
    z.budget = &budget;
    if (o && ((o->targets && o->n_targets != 1) || (o->features && o->n_features != 1))) {
        st = og_error(OG_ERR_INVALID_ARG,
                      "%s: a .npz dataset takes one features array and one targets array "
                      "(n_features %d, n_targets %d)",
                      path, o->n_features, o->n_targets);
        goto done;
    }
    st = pick_array(path, &z, "targets", o && o->targets ? o->targets[0] : NULL, y_names, &yn);
    if (st) goto done;
    if (o && o->weight) {
        const char *none[] = {NULL};
        st = pick_array(path, &z, "sample weights", o->weight, none, &wn);
        if (st) goto done;
    } else if (og_npz_find(&z, "sample_weight") >= 0) {
        wn = "sample_weight";
    }
    /* features: the array named, else a usual name, else the one array left once the
     * targets and the weights are taken ("default: the others") */
    bool usual = false;
    for (int i = 0; x_names[i] && !usual; i++) usual = og_npz_find(&z, x_names[i]) >= 0;
    if ((o && o->features) || usual) {
        st = pick_array(path, &z, "features", o && o->features ? o->features[0] : NULL, x_names,
                        &xn);
        if (st) goto done;
    } else {
        int64_t left = -1, n_left = 0;
        for (int64_t i = 0; i < z.n_entries; i++) {
            const char *nm = z.entries[i].name;
            size_t len = strlen(nm), ly = strlen(yn), lw = wn ? strlen(wn) : 0;
            if (len >= 4 && strcmp(nm + len - 4, ".npy") == 0) len -= 4;
            if ((len == ly && strncmp(nm, yn, len) == 0) ||
                (wn && len == lw && strncmp(nm, wn, len) == 0))
                continue;
            left = i;
            n_left++;
        }
        if (n_left != 1) {
            char list[600];
            list_arrays(list, sizeof list, &z);
            st = og_error(OG_ERR_INVALID_ARG,
                          "%s: no features array: none is named X, x, data or features, and %lld "
                          "arrays are left besides the targets '%s' (name one in the options); "
                          "the arrays are: %s",
                          path, (long long)n_left, yn, list);
            goto done;
        }
        size_t len = strlen(z.entries[left].name);
        if (len >= 4 && strcmp(z.entries[left].name + len - 4, ".npy") == 0) len -= 4;
        feat_name = og_malloc(a, len + 1);
        if (!feat_name) {
            st = og_error(OG_ERR_NOMEM, "out of memory");
            goto done;
        }
        memcpy(feat_name, z.entries[left].name, len);
        feat_name[len] = 0;
        xn = feat_name;
    }
    st = og_npz_load_array(&z, xn, a, &d->x);
    if (!st) st = og_npz_load_array(&z, yn, a, &d->y);
    if (!st && wn) st = og_npz_load_array(&z, wn, a, &d->w);
    if (st) {
        og_error_prefix(st, "%s", path);
        goto done;
    }
    snprintf(what, sizeof what, "%s: array '%s'", path, yn);
    st = to_float_tensor(a, &d->x);
    if (!st) st = int_targets ? to_int64_tensor(a, &d->y, what) : to_float_tensor(a, &d->y);
    if (!st && d->w) st = to_float_tensor(a, &d->w);
    if (st) goto done;
    st = check_parts(d->x, d->y, d->w);
    if (st) {
        og_error_prefix(st, "%s", path);
        goto done;
    }
    d->n = d->x->dims[0];
done:
    og_free(a, feat_name);
    og_zip_close(&z);
    return st;
}

/* ---- loading --------------------------------------------------------------------------- */

/* The checks both loaders share. */
static og_status check_load(const og_data_options *opts, og_dataset **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_dataset_load: out is NULL");
    *out = NULL;
    if (opts &&
        ((opts->targets && opts->n_targets < 0) || (opts->features && opts->n_features < 0)))
        return og_error(OG_ERR_INVALID_ARG, "og_dataset_load: negative column count");
    if (opts && opts->max_memory < 0)
        return og_error(OG_ERR_INVALID_ARG, "og_data_options.max_memory must be >= 0, got %lld",
                        (long long)opts->max_memory);
    if (opts && opts->target_dtype != OG_UNDEFINED && opts->target_dtype != OG_FLOAT &&
        opts->target_dtype != OG_INT64)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_dataset_load: target_dtype %s (float32 or int64 are allowed)",
                        og_dtype_name(opts->target_dtype));
    return OG_OK;
}

/* Parse bytes[0..size) as the format `name`'s extension says into d. */
static og_status load_bytes(og_dataset *d, const char *name, const og_data_options *opts,
                            const void *bytes, size_t size)
{
    if (has_ext(name, ".npy")) return load_npy(d, name, opts, bytes, size);
    if (has_ext(name, ".npz")) return load_npz(d, name, opts, bytes, size);
    return load_csv(d, name, opts, bytes, size);
}

og_status og_dataset_load(const char *path, const og_data_options *opts, const og_allocator *alloc,
                          og_dataset **out)
{
    og_status st = check_load(opts, out);
    if (st) return st;
    if (!path) return og_error(OG_ERR_INVALID_ARG, "og_dataset_load: path is NULL");
    og_dataset *d = dataset_new(alloc);
    if (!d) return og_error(OG_ERR_NOMEM, "out of memory");
    void *bytes = NULL;
    size_t size = 0;
    st = og_read_file(path, (size_t)data_limit(opts), &d->alloc, &bytes, &size);
    if (st == OG_ERR_LIMIT) og_error_prefix(st, "og_data_options.max_memory");
    if (!st) st = load_bytes(d, path, opts, bytes, size);
    og_free(&d->alloc, bytes);
    if (st) {
        og_dataset_free(d);
        return st;
    }
    *out = d;
    return OG_OK;
}

og_status og_dataset_load_buffer(const void *data, size_t size, const char *name,
                                 const og_data_options *opts, const og_allocator *alloc,
                                 og_dataset **out)
{
    og_status st = check_load(opts, out);
    if (st) return st;
    if (!name || (!data && size))
        return og_error(OG_ERR_INVALID_ARG, "og_dataset_load_buffer: NULL argument");
    if ((uint64_t)size > data_limit(opts))
        return og_error(OG_ERR_LIMIT,
                        "%s: %zu bytes, more than the dataset memory limit %llu "
                        "(og_data_options.max_memory)",
                        name, size, (unsigned long long)data_limit(opts));
    og_dataset *d = dataset_new(alloc);
    if (!d) return og_error(OG_ERR_NOMEM, "out of memory");
    st = load_bytes(d, name, opts, size ? data : "", size);
    if (st) {
        og_dataset_free(d);
        return st;
    }
    *out = d;
    return OG_OK;
}
