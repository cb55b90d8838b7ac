/* npy.c: reading and writing numpy's .npy format (versions 1.0 to 3.0). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_io.h"

#define OG_MAX_NPY_BYTES ((size_t)1 << 34)

/* Find `'key':` in the header dict and return a pointer just past the colon. */
static const char *dict_find(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(h, pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static og_status parse_descr(const char *d, og_dtype *dt, bool *swap)
{
    char q = *d;
    if (q != '\'' && q != '"') return og_error(OG_ERR_PARSE, ".npy: malformed 'descr'");
    const char *end = strchr(d + 1, q);
    if (!end || end - d - 1 > 15) return og_error(OG_ERR_PARSE, ".npy: malformed 'descr'");
    char s[16];
    memcpy(s, d + 1, (size_t)(end - d - 1));
    s[end - d - 1] = 0;
    char order = s[0];
    const char *code = s + 1;
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return og_error(OG_ERR_UNSUPPORTED, ".npy: dtype '%s' is not supported", s);
    *swap = order == '>';
    if (strcmp(code, "f2") == 0)
        *dt = OG_FLOAT16;
    else if (strcmp(code, "f4") == 0)
        *dt = OG_FLOAT;
    else if (strcmp(code, "f8") == 0)
        *dt = OG_DOUBLE;
    else if (strcmp(code, "i4") == 0)
        *dt = OG_INT32;
    else if (strcmp(code, "i8") == 0)
        *dt = OG_INT64;
    else if (strcmp(code, "b1") == 0)
        *dt = OG_BOOL;
    else
        return og_error(OG_ERR_UNSUPPORTED,
                        ".npy: dtype '%s' is not supported (float16, "
                        "float32, float64, int32, int64 and bool are)",
                        s);
    return OG_OK;
}

og_status og_npy_load_buffer(const void *data, size_t size, const og_allocator *alloc,
                             og_tensor **out)
{
    const unsigned char *b = data;
    char *hdr = NULL;
    og_status st = OG_OK;
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_npy_load_buffer: out is NULL");
    *out = NULL;
    if (!data || size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return og_error(OG_ERR_PARSE, ".npy: missing the \\x93NUMPY magic");
    int major = b[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12) return og_error(OG_ERR_PARSE, ".npy: truncated header");
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else {
        return og_error(OG_ERR_UNSUPPORTED, ".npy: format version %d is not supported", major);
    }
    if (hlen > size - off) return og_error(OG_ERR_PARSE, ".npy: truncated header");
    hdr = og_malloc(alloc, hlen + 1);
    if (!hdr) return og_error(OG_ERR_NOMEM, "out of memory");
    memcpy(hdr, b + off, hlen);
    hdr[hlen] = 0;
    off += hlen;

    const char *descr = dict_find(hdr, "descr");
    const char *fortran = dict_find(hdr, "fortran_order");
    const char *shape = dict_find(hdr, "shape");
    if (!descr || !fortran || !shape) {
        st = og_error(OG_ERR_PARSE, ".npy: header lacks descr, fortran_order or shape");
        goto done;
    }
    og_dtype dt = OG_UNDEFINED;
    bool swap = false;
    st = parse_descr(descr, &dt, &swap);
    if (st) goto done;
    if (strncmp(fortran, "True", 4) == 0) {
        st = og_error(OG_ERR_UNSUPPORTED, ".npy: Fortran-ordered arrays are not supported "
                                          "(save with np.ascontiguousarray)");
        goto done;
    }
    if (strncmp(fortran, "False", 5) != 0) {
        st = og_error(OG_ERR_PARSE, ".npy: malformed fortran_order");
        goto done;
    }
    if (*shape != '(') {
        st = og_error(OG_ERR_PARSE, ".npy: malformed shape");
        goto done;
    }
    int64_t dims[OG_MAX_RANK];
    int rank = 0;
    const char *p = shape + 1;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        if (!isdigit((unsigned char)*p)) {
            st = og_error(OG_ERR_PARSE, ".npy: malformed shape");
            goto done;
        }
        if (rank == OG_MAX_RANK) {
            st = og_error(OG_ERR_UNSUPPORTED, ".npy: rank above %d", OG_MAX_RANK);
            goto done;
        }
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            if (v > (INT64_MAX - 9) / 10) {
                st = og_error(OG_ERR_PARSE, ".npy: dim too large");
                goto done;
            }
            v = v * 10 + (*p++ - '0');
        }
        dims[rank++] = v;
    }
    size_t nbytes;
    if (!og_shape_nbytes(dt, rank, dims, &nbytes)) {
        st = og_error(OG_ERR_PARSE, ".npy: shape too large");
        goto done;
    }
    if (size - off < nbytes) {
        st = og_error(OG_ERR_PARSE, ".npy: data truncated (%zu bytes, shape needs %zu)", size - off,
                      nbytes);
        goto done;
    }
    st = og_tensor_from_data(dt, rank, dims, b + off, nbytes, alloc, out);
    if (st) goto done;
    size_t es = og_dtype_size(dt);
    if (swap && es > 1) {
        unsigned char *q = (*out)->data;
        for (size_t i = 0; i < nbytes; i += es)
            for (size_t j = 0; j < es / 2; j++) {
                unsigned char t = q[i + j];
                q[i + j] = q[i + es - 1 - j];
                q[i + es - 1 - j] = t;
            }
    }
    if (dt == OG_BOOL) {
        unsigned char *q = (*out)->data;
        for (size_t i = 0; i < nbytes; i++) q[i] = q[i] != 0;
    }
done:
    og_free(alloc, hdr);
    return st;
}

og_status og_npy_load(const char *path, const og_allocator *alloc, og_tensor **out)
{
    void *data = NULL;
    size_t size = 0;
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_npy_load: out is NULL");
    *out = NULL;
    if (!path) return og_error(OG_ERR_INVALID_ARG, "og_npy_load: path is NULL");
    og_status st = og_read_file(path, OG_MAX_NPY_BYTES, alloc, &data, &size);
    if (st) return st;
    st = og_npy_load_buffer(data, size, alloc, out);
    if (st) og_error_prefix(st, "%s", path);
    og_free(alloc, data);
    return st;
}

og_status og_npy_save(const char *path, const og_tensor *t)
{
    const char *descr;
    if (!path || !t) return og_error(OG_ERR_INVALID_ARG, "og_npy_save: NULL argument");
    switch (t->dtype) {
    case OG_FLOAT16: descr = "<f2"; break;
    case OG_FLOAT: descr = "<f4"; break;
    case OG_DOUBLE: descr = "<f8"; break;
    case OG_INT32: descr = "<i4"; break;
    case OG_INT64: descr = "<i8"; break;
    case OG_BOOL: descr = "|b1"; break;
    default:
        return og_error(OG_ERR_UNSUPPORTED, "%s: cannot write element type %s as .npy", path,
                        og_dtype_name(t->dtype));
    }
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld,%s", (long long)t->dims[i],
                      i + 1 < t->rank ? " " : "");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    /* pad with spaces so that data starts at a multiple of 64, end with \n */
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    FILE *f = fopen(path, "wb");
    if (!f) return og_error(OG_ERR_IO, "cannot create '%s'", path);
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t nbytes = og_tensor_nbytes(t);
    ok = ok && (nbytes == 0 || fwrite(t->data, 1, nbytes, f) == nbytes);
    if (fclose(f) != 0) ok = false;
    if (!ok) return og_error(OG_ERR_IO, "cannot write '%s'", path);
    return OG_OK;
}
