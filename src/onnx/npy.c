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

/* String arrays: numpy's '<U<n>' (n UTF-32 code units per element, NUL-padded) and
 * '|S<n>' (n bytes).  kind 'U' or 'S', width n. */
typedef struct npy_str {
    char kind;
    size_t width;
} npy_str;

static og_status parse_descr(const char *d, og_dtype *dt, bool *swap, npy_str *str)
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
    str->kind = 0;
    if (code[0] == 'O')
        return og_error(OG_ERR_UNSUPPORTED,
                        ".npy: an object array (dtype 'O': pickled Python objects) cannot be "
                        "read; save strings as a unicode array, np.asarray(x, dtype=str)");
    if ((code[0] == 'U' || code[0] == 'S') && isdigit((unsigned char)code[1])) {
        size_t w = 0;
        for (const char *c = code + 1; *c; c++) {
            if (!isdigit((unsigned char)*c) || w > 100000000)
                return og_error(OG_ERR_PARSE, ".npy: malformed dtype '%s'", s);
            w = w * 10 + (size_t)(*c - '0');
        }
        if (w == 0) return og_error(OG_ERR_PARSE, ".npy: dtype '%s' has no width", s);
        str->kind = code[0];
        str->width = w;
        *dt = OG_STRING;
        return OG_OK;
    }
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
    else if (strcmp(code, "i1") == 0)
        *dt = OG_INT8;
    else if (strcmp(code, "u1") == 0)
        *dt = OG_UINT8;
    else if (strcmp(code, "i2") == 0)
        *dt = OG_INT16;
    else if (strcmp(code, "u2") == 0)
        *dt = OG_UINT16;
    else if (strcmp(code, "u4") == 0)
        *dt = OG_UINT32;
    else if (strcmp(code, "u8") == 0)
        *dt = OG_UINT64;
    else
        return og_error(OG_ERR_UNSUPPORTED,
                        ".npy: dtype '%s' is not supported (float16/32/64, int8/16/32/64, "
                        "uint8/16/32/64, bool and strings, '<U' or '|S', are)",
                        s);
    return OG_OK;
}

/* UTF-8 encoding of code point c into o (4 bytes at most); 0 for an invalid one. */
static size_t utf8_put(uint32_t c, char *o)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c >= 0xD800 && c < 0xE000) return 0; /* surrogates are not characters */
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    if (c < 0x110000) {
        o[0] = (char)(0xF0 | (c >> 18));
        o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[3] = (char)(0x80 | (c & 0x3F));
        return 4;
    }
    return 0;
}

/* Decode one UTF-8 character of s[0..n-1] into *c; its length, 0 if malformed. */
static size_t utf8_get(const unsigned char *s, size_t n, uint32_t *c)
{
    if (s[0] < 0x80) {
        *c = s[0];
        return 1;
    }
    size_t len = (s[0] & 0xE0) == 0xC0   ? 2
                 : (s[0] & 0xF0) == 0xE0 ? 3
                 : (s[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (!len || len > n) return 0;
    uint32_t v = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return 0;
    *c = v;
    return len;
}

/* The elements of a '<U' or '|S' array: fixed-width, NUL-padded. */
static og_status load_strings(const unsigned char *p, size_t avail, const npy_str *str, bool swap,
                              int rank, const int64_t *dims, const og_allocator *alloc,
                              og_tensor **out)
{
    int64_t numel;
    size_t unit = str->kind == 'U' ? 4 : 1, esz, nbytes;
    if (!og_shape_numel(rank, dims, &numel) || !og_mul_size(str->width, unit, &esz) ||
        !og_mul_size((size_t)numel, esz, &nbytes))
        return og_error(OG_ERR_PARSE, ".npy: shape too large");
    if (avail < nbytes)
        return og_error(OG_ERR_PARSE, ".npy: data truncated (%zu bytes, shape needs %zu)", avail,
                        nbytes);
    og_tensor *t = NULL;
    og_status st = og_tensor_alloc(OG_STRING, rank, dims, alloc, &t);
    char *buf = st ? NULL : og_malloc(alloc, str->width * 4 + 1);
    if (!st && !buf) st = og_error(OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; !st && i < numel; i++) {
        const unsigned char *e = p + (size_t)i * esz;
        size_t len = 0;
        for (size_t k = 0; k < str->width; k++) {
            uint32_t c;
            if (unit == 1) {
                c = e[k];
            } else {
                const unsigned char *q = e + 4 * k;
                c = swap ? (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]
                         : (uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[1] << 8 | q[0];
            }
            if (c == 0) break; /* numpy pads with NULs and strips them */
            if (unit == 1) {
                buf[len++] = (char)c;
                continue;
            }
            size_t w = utf8_put(c, buf + len);
            if (!w) {
                st = og_error(OG_ERR_PARSE, ".npy: element %lld holds an invalid code point U+%X",
                              (long long)i, (unsigned)c);
                break;
            }
            len += w;
        }
        if (!st && len) st = og_tensor_set_str(t, i, buf, len);
    }
    og_free(alloc, buf);
    if (st) {
        og_tensor_free(t);
        return st;
    }
    *out = t;
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
    npy_str str = {0, 0};
    st = parse_descr(descr, &dt, &swap, &str);
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
    if (dt == OG_STRING) {
        st = load_strings(b + off, size - off, &str, swap, rank, dims, alloc, out);
        goto done;
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

/* Code points of a UTF-8 string (false if malformed). */
static bool utf8_count(const char *s, size_t *n)
{
    size_t len = strlen(s), k = 0;
    for (size_t i = 0; i < len; k++) {
        uint32_t c;
        size_t w = utf8_get((const unsigned char *)s + i, len - i, &c);
        if (!w) return false;
        i += w;
    }
    *n = k;
    return true;
}

/* A string tensor's elements as numpy's '<U<width>': UTF-32LE, NUL-padded. */
static bool write_strings(FILE *f, const og_tensor *t, size_t width)
{
    for (int64_t i = 0; i < t->numel; i++) {
        const unsigned char *s = (const unsigned char *)og_tensor_str(t, i);
        size_t len = strlen((const char *)s), k = 0;
        for (size_t j = 0; j < len; k++) {
            uint32_t c = 0;
            j += utf8_get(s + j, len - j, &c); /* checked valid before */
            unsigned char q[4] = {(unsigned char)c, (unsigned char)(c >> 8),
                                  (unsigned char)(c >> 16), (unsigned char)(c >> 24)};
            if (fwrite(q, 1, 4, f) != 4) return false;
        }
        for (; k < width; k++)
            if (fwrite("\0\0\0\0", 1, 4, f) != 4) return false;
    }
    return true;
}

og_status og_npy_save(const char *path, const og_tensor *t)
{
    const char *descr;
    char ustr[32];
    size_t width = 1;
    if (!path || !t) return og_error(OG_ERR_INVALID_ARG, "og_npy_save: NULL argument");
    if (t->kind != OG_KIND_TENSOR)
        return og_error(OG_ERR_UNSUPPORTED, "%s: a %s cannot be written as .npy", path,
                        og_kind_name(t->kind));
    switch (t->dtype) {
    case OG_FLOAT16: descr = "<f2"; break;
    case OG_FLOAT: descr = "<f4"; break;
    case OG_DOUBLE: descr = "<f8"; break;
    case OG_INT32: descr = "<i4"; break;
    case OG_INT64: descr = "<i8"; break;
    case OG_BOOL: descr = "|b1"; break;
    case OG_INT8: descr = "|i1"; break;
    case OG_UINT8: descr = "|u1"; break;
    case OG_INT16: descr = "<i2"; break;
    case OG_UINT16: descr = "<u2"; break;
    case OG_UINT32: descr = "<u4"; break;
    case OG_UINT64: descr = "<u8"; break;
    case OG_STRING:
        for (int64_t i = 0; i < t->numel; i++) {
            size_t n;
            if (!utf8_count(og_tensor_str(t, i), &n))
                return og_error(OG_ERR_UNSUPPORTED,
                                "%s: string element %lld is not valid UTF-8, which .npy's '<U' "
                                "cannot hold",
                                path, (long long)i);
            if (n > width) width = n;
        }
        snprintf(ustr, sizeof ustr, "<U%zu", width);
        descr = ustr;
        break;
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
    if (t->dtype == OG_STRING)
        ok = ok && write_strings(f, t, width);
    else
        ok = ok && (nbytes == 0 || fwrite(t->data, 1, nbytes, f) == nbytes);
    if (fclose(f) != 0) ok = false;
    if (!ok) return og_error(OG_ERR_IO, "cannot write '%s'", path);
    return OG_OK;
}
