/* load.c: ModelProto bytes -> og_graph.
 *
 * Everything read from the file is checked before use: counts, dims, data sizes, names.
 * The protobuf-c tree is freed before returning; the graph owns copies of what it needs. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "onnx/onnx_io.h"

/* Where external data may come from: the model's folder, and how many bytes of external
 * data the load may still read (og_load_options.max_external_bytes, checked against each
 * file's size before anything is allocated).  NULL: external data is refused. */
typedef struct ext_src {
    const char *dir;
    int64_t left;
    int64_t limit;
} ext_src;

/* ---- protobuf-c allocator bridge ----------------------------------------------- */

/* protobuf-c reports a failed allocation as a decoding failure: remember it, so that the
 * caller says "out of memory" rather than "malformed". */
typedef struct pc_bridge {
    const og_allocator *a;
    bool failed;
} pc_bridge;

static void *pc_alloc(void *user, size_t size)
{
    pc_bridge *b = user;
    void *p = og_malloc(b->a, size);
    if (!p) b->failed = true;
    return p;
}

static void pc_free(void *user, void *p)
{
    pc_bridge *b = user;
    og_free(b->a, p);
}

/* ---- values by name --------------------------------------------------------------- */

/* Index of the value named `name` (through the graph's name index), created if absent and
 * `create`: -2 if absent, -1 on allocation failure. */
static int map_get(og_graph *g, const char *name, bool create)
{
    int v = og_graph_find_value(g, name);
    if (v >= 0) return v;
    return create ? og_graph_add_value(g, name) : -2;
}

/* ---- tensors --------------------------------------------------------------------- */

/* An external-data number ("offset", "length"): decimal digits only, no sign, no junk. */
static bool parse_count(const char *s, long long *out)
{
    if (!s[0]) return false;
    long long v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9' || v > (LLONG_MAX - (*c - '0')) / 10) return false;
        v = v * 10 + (*c - '0');
    }
    *out = v;
    return true;
}

/* Open tensor tp's external data for reading nbytes: the location is checked to stay in
 * base_dir, the file must be a regular file (opened without blocking, so a FIFO or a
 * device cannot hang the load) holding offset + nbytes bytes, all before the caller
 * allocates.  *f is positioned at the data. */
static og_status open_external(const Onnx__TensorProto *tp, ext_src *ext, size_t nbytes,
                               const og_allocator *a, FILE **f)
{
    const char *location = NULL;
    long long offset = 0, length = -1;
    *f = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value) continue;
        bool number = strcmp(e->key, "offset") == 0 || strcmp(e->key, "length") == 0;
        if (strcmp(e->key, "location") == 0)
            location = e->value;
        else if (number && !parse_count(e->value, e->key[0] == 'o' ? &offset : &length))
            return og_error(OG_ERR_MODEL,
                            "tensor '%s': external data %s '%s' is not a non-negative decimal "
                            "number",
                            tp->name, e->key, e->value);
    }
    if (!ext)
        return og_error(OG_ERR_MODEL,
                        "tensor '%s' uses external data, but the model was "
                        "loaded from memory without a base folder",
                        tp->name);
    if (!location || !location[0])
        return og_error(OG_ERR_MODEL, "tensor '%s' has external data without a location", tp->name);
    /* Refuse anything that could leave the model's folder. */
    if (location[0] == '/' || location[0] == '\\' || strstr(location, "..") ||
        strchr(location, ':'))
        return og_error(OG_ERR_MODEL,
                        "tensor '%s': external data location '%s' escapes the "
                        "model's folder",
                        tp->name, location);
    if (length >= 0 && (size_t)length != nbytes)
        return og_error(OG_ERR_MODEL,
                        "tensor '%s': external data length %lld does not fit its %zu bytes",
                        tp->name, length, nbytes);
    if ((uint64_t)nbytes > (uint64_t)ext->left)
        return og_error(OG_ERR_LIMIT,
                        "tensor '%s': %zu bytes of external data, more than the limit %lld "
                        "leaves (og_load_options.max_external_bytes, %lld for all tensors)",
                        tp->name, nbytes, (long long)ext->left, (long long)ext->limit);
    const char *base_dir = ext->dir;
    og_status st = OG_OK;
    char *path = NULL, *real_base = NULL, *real_path = NULL;
    int fd = -1;
    size_t plen = strlen(base_dir) + strlen(location) + 2;
    path = og_malloc(a, plen);
    if (!path) return og_error(OG_ERR_NOMEM, "out of memory");
    snprintf(path, plen, "%s/%s", base_dir, location);
    real_base = realpath(base_dir, NULL);
    real_path = realpath(path, NULL);
    if (!real_base || !real_path) {
        st =
            og_error(OG_ERR_IO, "tensor '%s': cannot open external data file '%s'", tp->name, path);
        goto done;
    }
    size_t bl = strlen(real_base);
    if (strncmp(real_path, real_base, bl) != 0 || real_path[bl] != '/') {
        st = og_error(OG_ERR_MODEL,
                      "tensor '%s': external data '%s' resolves outside the "
                      "model's folder",
                      tp->name, location);
        goto done;
    }
    struct stat sb;
    fd = open(real_path, O_RDONLY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        st = og_error(OG_ERR_IO, "tensor '%s': cannot open external data file '%s': %s", tp->name,
                      path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = og_error(OG_ERR_MODEL, "tensor '%s': external data '%s' is not a regular file",
                      tp->name, location);
        goto done;
    }
    if ((unsigned long long)offset > (unsigned long long)sb.st_size ||
        (unsigned long long)sb.st_size - (unsigned long long)offset < nbytes) {
        st = og_error(OG_ERR_MODEL,
                      "tensor '%s': external data '%s' has %lld bytes, fewer than offset %lld "
                      "+ %zu",
                      tp->name, location, (long long)sb.st_size, offset, nbytes);
        goto done;
    }
    /* a regular file: reads do not block; the descriptor goes back to blocking mode */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        lseek(fd, (off_t)offset, SEEK_SET) != (off_t)offset || !(*f = fdopen(fd, "rb"))) {
        st = og_error(OG_ERR_IO, "tensor '%s': cannot read '%s' at offset %lld", tp->name, path,
                      offset);
        goto done;
    }
    fd = -1; /* the FILE owns it */
    ext->left -= (int64_t)nbytes;
done:
    if (fd >= 0) close(fd);
    free(real_base); /* realpath uses malloc */
    free(real_path);
    og_free(a, path);
    return st;
}

/* Read nbytes into dst from f (open_external's), and close f. */
static og_status read_opened(const Onnx__TensorProto *tp, FILE *f, void *dst, size_t nbytes)
{
    bool ok = !nbytes || fread(dst, 1, nbytes, f) == nbytes;
    fclose(f);
    return ok ? OG_OK
              : og_error(OG_ERR_IO, "tensor '%s': cannot read its %zu bytes of external data",
                         tp->name ? tp->name : "", nbytes);
}

/* A string tensor: its elements are the entries of string_data (ONNX stores strings there
 * only, never as raw or external data). */
static og_status strings_from_proto(const Onnx__TensorProto *tp, const og_allocator *a,
                                    og_tensor **out)
{
    const char *name = tp->name ? tp->name : "";
    int64_t dims[OG_MAX_RANK], numel;
    if (tp->n_dims > OG_MAX_RANK)
        return og_error(OG_ERR_UNSUPPORTED, "tensor '%s' has rank %zu, above the limit %d", name,
                        tp->n_dims, OG_MAX_RANK);
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return og_error(OG_ERR_MODEL, "tensor '%s' has negative dim %lld", name,
                            (long long)tp->dims[i]);
        dims[i] = tp->dims[i];
    }
    if (!og_shape_numel((int)tp->n_dims, dims, &numel))
        return og_error(OG_ERR_MODEL, "tensor '%s' has a size that overflows", name);
    if (tp->has_raw_data ||
        (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return og_error(OG_ERR_MODEL,
                        "string tensor '%s' keeps its strings in raw or external data; ONNX "
                        "puts them in string_data",
                        name);
    if ((uint64_t)numel != (uint64_t)tp->n_string_data)
        return og_error(OG_ERR_MODEL, "string tensor '%s' of shape %s needs %lld strings, has %zu",
                        name, og_shape_str((int)tp->n_dims, dims, (char[128]){0}, 128),
                        (long long)numel, tp->n_string_data);
    og_tensor *t = NULL;
    og_status st = og_tensor_alloc(OG_STRING, (int)tp->n_dims, dims, a, &t);
    for (int64_t i = 0; !st && i < numel; i++) {
        const ProtobufCBinaryData *b = &tp->string_data[i];
        if (b->len && memchr(b->data, 0, b->len))
            st = og_error(OG_ERR_UNSUPPORTED,
                          "string %lld of tensor '%s' holds a NUL byte, which onnxgrad's "
                          "strings cannot",
                          (long long)i, name);
        else if (b->len)
            st = og_tensor_set_str(t, i, (const char *)b->data, b->len);
    }
    if (st) {
        og_tensor_free(t);
        return st;
    }
    *out = t;
    return OG_OK;
}

/* Copy n typed values from a repeated field into dst (dtype-sized elements). */
static og_status tensor_from_proto(const Onnx__TensorProto *tp, ext_src *ext, const og_allocator *a,
                                   og_tensor **out)
{
    og_status st;
    og_tensor *t = NULL;
    *out = NULL;
    const char *name = tp->name ? tp->name : "";
    og_dtype dt = (og_dtype)tp->data_type;
    if (tp->segment) return og_error(OG_ERR_UNSUPPORTED, "tensor '%s' is segmented", name);
    if (dt == OG_STRING) return strings_from_proto(tp, a, out);
    if (!og_dtype_is_known(dt))
        return og_error(OG_ERR_UNSUPPORTED,
                        "tensor '%s' has element type %d (%s), which "
                        "onnxgrad does not support",
                        name, (int)tp->data_type, og_dtype_name(dt));
    if (tp->n_dims > OG_MAX_RANK)
        return og_error(OG_ERR_UNSUPPORTED, "tensor '%s' has rank %zu, above the limit %d", name,
                        tp->n_dims, OG_MAX_RANK);
    int64_t dims[OG_MAX_RANK];
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return og_error(OG_ERR_MODEL, "tensor '%s' has negative dim %lld", name,
                            (long long)tp->dims[i]);
        dims[i] = tp->dims[i];
    }
    size_t nbytes;
    int64_t numel;
    if (!og_shape_nbytes(dt, (int)tp->n_dims, dims, &nbytes) ||
        !og_shape_numel((int)tp->n_dims, dims, &numel))
        return og_error(OG_ERR_MODEL, "tensor '%s' has a size that overflows", name);
    size_t esz = og_dtype_size(dt);
    bool external =
        tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* Check the stored count before allocating: absurd dims must not allocate. */
    size_t have = 0;
    if (external) {
        have = nbytes;
    } else if (tp->has_raw_data) {
        have = tp->raw_data.len;
    } else {
        switch (dt) {
        case OG_FLOAT: have = tp->n_float_data * esz; break;
        case OG_DOUBLE: have = tp->n_double_data * esz; break;
        case OG_INT64: have = tp->n_int64_data * esz; break;
        case OG_UINT32:
        case OG_UINT64: have = tp->n_uint64_data * esz; break;
        default: have = tp->n_int32_data * esz; break;
        }
    }
    /* 4-bit integers travel packed, two a byte (each int32_data entry holds such a byte) */
    size_t wire = og_dtype_is_int4(dt) ? (size_t)(numel / 2 + numel % 2) : nbytes;
    if (og_dtype_is_int4(dt) && !external && !tp->has_raw_data) have = tp->n_int32_data;
    if (external) have = wire; /* open_external checks the file holds `wire` bytes */
    if (have != wire)
        return og_error(OG_ERR_MODEL,
                        "tensor '%s' of shape %s (%s) needs %zu bytes of data, "
                        "has %zu",
                        name, og_shape_str((int)tp->n_dims, dims, (char[128]){0}, 128),
                        og_dtype_name(dt), wire, have);
    FILE *f_ext = NULL;
    if (external && (st = open_external(tp, ext, wire, a, &f_ext))) return st;
    st = og_tensor_alloc(dt, (int)tp->n_dims, dims, a, &t);
    if (st) {
        if (f_ext) fclose(f_ext);
        return st;
    }
    unsigned char *dst = t->data;
    if (external) {
        if ((st = read_opened(tp, f_ext, dst, wire))) goto fail;
    } else if (tp->has_raw_data) {
        if (wire) memcpy(dst, tp->raw_data.data, wire);
    } else if (og_dtype_is_int4(dt)) {
        for (size_t i = 0; i < wire; i++) dst[i] = (unsigned char)tp->int32_data[i];
    } else {
        for (int64_t i = 0; i < numel; i++) {
            switch (dt) {
            case OG_FLOAT: ((float *)dst)[i] = tp->float_data[i]; break;
            case OG_DOUBLE: ((double *)dst)[i] = tp->double_data[i]; break;
            case OG_INT64: ((int64_t *)dst)[i] = tp->int64_data[i]; break;
            case OG_UINT64: ((uint64_t *)dst)[i] = tp->uint64_data[i]; break;
            case OG_UINT32: ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i]; break;
            case OG_INT32: ((int32_t *)dst)[i] = tp->int32_data[i]; break;
            case OG_INT16: ((int16_t *)dst)[i] = (int16_t)tp->int32_data[i]; break;
            case OG_UINT16:
            case OG_FLOAT16:
            case OG_BFLOAT16: ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i]; break;
            case OG_INT8: ((int8_t *)dst)[i] = (int8_t)tp->int32_data[i]; break;
            case OG_UINT8:
            case OG_FLOAT8E4M3FN:
            case OG_FLOAT8E4M3FNUZ:
            case OG_FLOAT8E5M2:
            case OG_FLOAT8E5M2FNUZ:
            case OG_BOOL: ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i]; break;
            default: break;
            }
        }
    }
    if (og_dtype_is_int4(dt)) /* unpack in place from the end: element i is byte i / 2's
                               * low (even i) or high nibble, int4 sign-extended */
        for (int64_t i = numel - 1; i >= 0; i--) {
            unsigned nib = (dst[i / 2] >> (i % 2 ? 4 : 0)) & 0xf;
            dst[i] = (unsigned char)(dt == OG_INT4 && nib >= 8 ? nib | 0xf0 : nib);
        }
    if (dt == OG_BOOL) /* normalize: any nonzero byte is true */
        for (int64_t i = 0; i < numel; i++) dst[i] = dst[i] != 0;
    *out = t;
    return OG_OK;
fail:
    og_tensor_free(t);
    return st;
}

og_status og_onnx_parse_tensor(const void *data, size_t size, const og_allocator *a,
                               og_tensor **out, char **name)
{
    a = og_alloc_or_default(a);
    pc_bridge br = {a, false};
    ProtobufCAllocator pa = {pc_alloc, pc_free, &br};
    *out = NULL;
    if (name) *name = NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pa, size, data);
    if (!tp && br.failed) return og_error(OG_ERR_NOMEM, "out of memory decoding a tensor");
    if (!tp) return og_error(OG_ERR_PARSE, "bytes are not a valid ONNX TensorProto");
    og_status st = tensor_from_proto(tp, NULL, a, out);
    if (!st && name) {
        *name = og_strdup(a, tp->name ? tp->name : "");
        if (!*name) {
            og_tensor_free(*out);
            *out = NULL;
            st = og_error(OG_ERR_NOMEM, "out of memory");
        }
    }
    onnx__tensor_proto__free_unpacked(tp, &pa);
    return st;
}

/* A string field of IR 10 that the system's onnx.proto (IR 8) predates, found among the
 * message's unknown fields (NodeProto.overload is field 8, FunctionProto.overload 13):
 * *out gets a copy, or stays NULL when absent.  False when out of memory. */
static bool string_field(const og_allocator *a, const ProtobufCMessage *m, uint32_t field,
                         char **out)
{
    *out = NULL;
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
        if (u->tag != field || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) continue;
        /* the data is the length (a varint), then the bytes */
        uint64_t n = 0;
        size_t k = 0;
        for (int shift = 0; k < u->len && shift < 64; shift += 7) {
            uint8_t byte = u->data[k++];
            n |= (uint64_t)(byte & 0x7f) << shift;
            if (!(byte & 0x80)) break;
        }
        if (n > u->len - k) n = u->len - k; /* malformed: keep what is there */
        og_free(a, *out);
        *out = og_malloc(a, (size_t)n + 1);
        if (!*out) return false;
        if (n) memcpy(*out, u->data + k, (size_t)n);
        (*out)[n] = 0;
    }
    return true;
}

/* ---- attributes ------------------------------------------------------------------ */

/* An attribute's list holds an int count (og_attr.n): a longer one (a 2 GB model of 1-byte
 * varints has more) is refused, with the error set. */
static bool count_fits(size_t n, const char *node_name, const char *attr)
{
    if (n <= (size_t)INT_MAX) return true;
    og_error(OG_ERR_LIMIT, "node '%s': attribute '%s' has %zu entries, more than %d", node_name,
             attr ? attr : "", n, INT_MAX);
    return false;
}

static og_status convert_graph(const Onnx__GraphProto *gp, ext_src *ext, og_graph *g, int depth);

/* ap into at, for a node of g (at nesting depth `depth`) named node_name. */
static og_status attr_from_proto(og_graph *g, const Onnx__AttributeProto *ap, og_attr *at,
                                 const char *node_name, ext_src *ext, int depth)
{
    const og_allocator *a = g->alloc;
    og_status st;
    at->name = og_strdup(a, ap->name);
    if (!at->name) return og_error(OG_ERR_NOMEM, "out of memory");
    if (!ap->name || !ap->name[0])
        return og_error(OG_ERR_MODEL, "node '%s' has an attribute without a name", node_name);
    if (ap->ref_attr_name && ap->ref_attr_name[0])
        return og_error(OG_ERR_UNSUPPORTED,
                        "node '%s': attribute '%s' refers to a function "
                        "attribute, which is only valid inside functions",
                        node_name, ap->name);
    at->type = (og_attr_type)ap->type;
    if (ap->doc_string && ap->doc_string[0]) {
        at->doc = og_strdup(a, ap->doc_string);
        if (!at->doc) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    if (at->type == OG_ATTR_UNDEFINED) {
        /* IR < 0.0.2 files omit the type: infer it from the field that is set. */
        if (ap->n_ints)
            at->type = OG_ATTR_INTS;
        else if (ap->n_floats)
            at->type = OG_ATTR_FLOATS;
        else if (ap->n_strings)
            at->type = OG_ATTR_STRINGS;
        else if (ap->t)
            at->type = OG_ATTR_TENSOR;
        else if (ap->has_s)
            at->type = OG_ATTR_STRING;
        else if (ap->has_f)
            at->type = OG_ATTR_FLOAT;
        else
            at->type = OG_ATTR_INT;
    }
    switch (at->type) {
    case OG_ATTR_FLOAT: at->f = ap->f; break;
    case OG_ATTR_INT: at->i = ap->i; break;
    case OG_ATTR_STRING:
        at->s = og_malloc(a, ap->s.len + 1);
        if (!at->s) return og_error(OG_ERR_NOMEM, "out of memory");
        if (ap->s.len) memcpy(at->s, ap->s.data, ap->s.len);
        at->s[ap->s.len] = 0;
        at->s_len = ap->s.len;
        break;
    case OG_ATTR_TENSOR:
        if (!ap->t)
            return og_error(OG_ERR_MODEL, "node '%s': tensor attribute '%s' has no tensor",
                            node_name, ap->name);
        st = tensor_from_proto(ap->t, NULL, a, &at->t);
        if (st) return og_error_prefix(st, "node '%s', attribute '%s'", node_name, ap->name);
        break;
    case OG_ATTR_FLOATS:
        if (!count_fits(ap->n_floats, node_name, ap->name)) return OG_ERR_LIMIT;
        at->n = (int)ap->n_floats;
        at->floats = og_malloc(a, (ap->n_floats + 1) * sizeof(float));
        if (!at->floats) return og_error(OG_ERR_NOMEM, "out of memory");
        if (ap->n_floats) memcpy(at->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case OG_ATTR_INTS:
        if (!count_fits(ap->n_ints, node_name, ap->name)) return OG_ERR_LIMIT;
        at->n = (int)ap->n_ints;
        at->ints = og_malloc(a, (ap->n_ints + 1) * sizeof(int64_t));
        if (!at->ints) return og_error(OG_ERR_NOMEM, "out of memory");
        if (ap->n_ints) memcpy(at->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case OG_ATTR_STRINGS:
        at->strings = og_calloc(a, ap->n_strings + 1, sizeof(char *));
        if (!at->strings) return og_error(OG_ERR_NOMEM, "out of memory");
        if (!count_fits(ap->n_strings, node_name, ap->name)) return OG_ERR_LIMIT;
        at->n = (int)ap->n_strings;
        for (size_t i = 0; i < ap->n_strings; i++) {
            at->strings[i] = og_malloc(a, ap->strings[i].len + 1);
            if (!at->strings[i]) return og_error(OG_ERR_NOMEM, "out of memory");
            if (ap->strings[i].len) memcpy(at->strings[i], ap->strings[i].data, ap->strings[i].len);
            at->strings[i][ap->strings[i].len] = 0;
        }
        break;
    case OG_ATTR_TENSORS:
        at->tensors = og_calloc(a, ap->n_tensors + 1, sizeof(og_tensor *));
        if (!at->tensors) return og_error(OG_ERR_NOMEM, "out of memory");
        if (!count_fits(ap->n_tensors, node_name, ap->name)) return OG_ERR_LIMIT;
        at->n = (int)ap->n_tensors;
        for (size_t i = 0; i < ap->n_tensors; i++) {
            st = tensor_from_proto(ap->tensors[i], NULL, a, &at->tensors[i]);
            if (st) return og_error_prefix(st, "node '%s', attribute '%s'", node_name, ap->name);
        }
        break;
    case OG_ATTR_GRAPH:
        if (!ap->g)
            return og_error(OG_ERR_MODEL, "node '%s': graph attribute '%s' has no graph", node_name,
                            ap->name);
        /* the scan (wire.c) refused deeper nesting already; graphs built otherwise (a
         * training info's) are held to the same limit here */
        if (depth >= og_graph_root(g)->max_depth)
            return og_error_prefix(
                og_depth_error(depth + 1, og_graph_root(g)->max_depth, "the subgraph"),
                "node '%s', attribute '%s'", node_name, ap->name);
        if (!(at->g = og_graph_new_sub(g))) return og_error(OG_ERR_NOMEM, "out of memory");
        st = convert_graph(ap->g, ext, at->g, depth + 1);
        /* the outer levels name where: a chain of every level would drown the message */
        if (st && depth < 4)
            return og_error_prefix(st, "node '%s', attribute '%s'", node_name, ap->name);
        if (st) return st;
        break;
    default: {
        /* lists of graphs, sparse tensors, type protos: keep the bytes so the model
         * round-trips */
        size_t len = protobuf_c_message_get_packed_size(&ap->base);
        at->raw = og_malloc(a, len + 1);
        if (!at->raw) return og_error(OG_ERR_NOMEM, "out of memory");
        at->raw_len = protobuf_c_message_pack(&ap->base, at->raw);
        break;
    }
    }
    return OG_OK;
}

/* ---- value infos ----------------------------------------------------------------- */

/* The dtype and shape of a tensor type into *dtype (unchanged when absent), *rank (-1 when
 * no shape) and dims. */
static og_status tensor_type(og_graph *g, const char *name, const Onnx__TypeProto__Tensor *tt,
                             og_dtype *dtype, int *rank, int64_t *dims)
{
    *rank = -1;
    if (!tt) return OG_OK;
    if (tt->has_elem_type) *dtype = (og_dtype)tt->elem_type;
    if (!tt->shape) return OG_OK;
    if (tt->shape->n_dim > OG_MAX_RANK)
        return og_error(OG_ERR_UNSUPPORTED, "value '%s' has rank %zu, above the limit %d", name,
                        tt->shape->n_dim, OG_MAX_RANK);
    *rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return og_error(OG_ERR_MODEL, "value '%s' declares negative dim %lld", name,
                                (long long)d->dim_value);
            dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && d->dim_param[0]) {
            int s = og_graph_symbol(g, d->dim_param);
            if (s < 0) return og_error(OG_ERR_NOMEM, "out of memory");
            dims[i] = og_dim_symbol(s);
        } else {
            dims[i] = OG_DIM_UNKNOWN;
        }
    }
    return OG_OK;
}

/* The type of a sequence, map or optional (tp's case is one of them): the chain of
 * containers is walked first, iteratively and at most OG_MAX_NESTING deep, then interned in
 * g from the innermost type out. */
static og_status container_type(og_graph *g, const char *name, const Onnx__TypeProto *tp,
                                const og_type **out)
{
    const Onnx__TypeProto *chain[OG_MAX_NESTING];
    int n = 0;
    const Onnx__TypeProto *t = tp;
    for (; t; n++) {
        const Onnx__TypeProto *elem;
        if (t->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
            elem = t->sequence_type ? t->sequence_type->elem_type : NULL;
        else if (t->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE)
            elem = t->map_type ? t->map_type->value_type : NULL;
        else if (t->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
            elem = t->optional_type ? t->optional_type->elem_type : NULL;
        else
            break;
        if (n == OG_MAX_NESTING)
            return og_error(OG_ERR_UNSUPPORTED,
                            "value '%s': its type nests sequences, maps and optionals more than "
                            "%d deep (the limit)",
                            name, OG_MAX_NESTING);
        chain[n] = t;
        t = elem;
    }
    const og_type *cur = NULL;
    if (t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        og_dtype dt = OG_UNDEFINED;
        int rank;
        int64_t dims[OG_MAX_RANK];
        og_status st = tensor_type(g, name, t->tensor_type, &dt, &rank, dims);
        if (st) return st;
        if (!(cur = og_graph_type_tensor(g, dt, rank, dims)))
            return og_error(OG_ERR_NOMEM, "out of memory");
    } else if (t && t->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE) {
        return og_error(OG_ERR_UNSUPPORTED,
                        "value '%s' holds sparse tensors, which onnxgrad "
                        "does not support",
                        name);
    }
    for (int i = n - 1; i >= 0; i--) {
        const Onnx__TypeProto *c = chain[i];
        og_kind kind = c->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? OG_KIND_SEQUENCE
                       : c->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE    ? OG_KIND_MAP
                                                                              : OG_KIND_OPTIONAL;
        og_dtype key = OG_UNDEFINED;
        if (kind == OG_KIND_MAP && c->map_type && c->map_type->has_key_type) {
            key = (og_dtype)c->map_type->key_type;
            if (key != OG_STRING && !og_dtype_is_integer(key))
                return og_error(OG_ERR_MODEL,
                                "value '%s': a map's keys are %s, not integers or "
                                "strings",
                                name, og_dtype_name(key));
        }
        if (!(cur = og_graph_type_wrap(g, kind, key, cur)))
            return og_error(OG_ERR_NOMEM, "out of memory");
    }
    *out = cur;
    return OG_OK;
}

static og_status apply_type(og_graph *g, og_value *v, const Onnx__TypeProto *tp, bool decl)
{
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return OG_OK;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE)
        return og_error(OG_ERR_UNSUPPORTED,
                        "value '%s' is a sparse tensor, which onnxgrad does not support", v->name);
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        const og_type *t = NULL;
        og_status st = container_type(g, v->name, tp, &t);
        if (st) return st;
        v->type = t;
        v->dtype = OG_UNDEFINED;
        v->rank = -1;
        if (decl) v->has_value_info = true;
        return OG_OK;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt) return OG_OK;
    int rank;
    int64_t dims[OG_MAX_RANK];
    og_status st = tensor_type(g, v->name, tt, &v->dtype, &rank, dims);
    if (st) return st;
    v->type = NULL;
    if (rank >= 0) {
        v->rank = rank;
        memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    }
    if (decl) v->has_value_info = true;
    return OG_OK;
}

static og_status add_value_info(og_graph *g, const Onnx__ValueInfoProto *vi, int *out_index,
                                const char *what)
{
    if (!vi->name || !vi->name[0]) return og_error(OG_ERR_MODEL, "a graph %s has no name", what);
    int v = map_get(g, vi->name, true);
    if (v < 0) return og_error(OG_ERR_NOMEM, "out of memory");
    og_value *val = &g->values[v];
    if (vi->doc_string && vi->doc_string[0] && !val->doc) {
        val->doc = og_strdup(g->alloc, vi->doc_string);
        if (!val->doc) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    og_status st = apply_type(g, val, vi->type, false);
    if (st) return st;
    /* a tensor declared by its dtype alone: the shape is left to inference */
    if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        val->shape_inferred = val->rank < 0;
    if (out_index) *out_index = v;
    return OG_OK;
}

/* ---- training info ------------------------------------------------------------- */

/* A graph of a TrainingInfoProto with its external initializer data read into raw_data:
 * shallow copies of the graph and of those tensors (the rest stays borrowed). */
typedef struct inlined_graph {
    Onnx__GraphProto g;
    Onnx__TensorProto **list;
    Onnx__TensorProto *copies;
    void **data;
    size_t n_copies;
} inlined_graph;

static void inlined_free(inlined_graph *ig, const og_allocator *a)
{
    for (size_t i = 0; i < ig->n_copies; i++) og_free(a, ig->data[i]);
    og_free(a, ig->data);
    og_free(a, ig->copies);
    og_free(a, ig->list);
}

static bool is_external(const Onnx__TensorProto *tp)
{
    return tp->has_data_location &&
           tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* *use: src itself, or ig->g when some initializer had external data. */
static og_status inline_graph(const Onnx__GraphProto *src, ext_src *ext, const og_allocator *a,
                              inlined_graph *ig, Onnx__GraphProto **use)
{
    size_t n_ext = 0;
    *use = (Onnx__GraphProto *)src;
    if (!src) return OG_OK;
    for (size_t i = 0; i < src->n_initializer; i++) n_ext += is_external(src->initializer[i]);
    if (n_ext == 0) return OG_OK;
    ig->g = *src;
    ig->list = og_calloc(a, src->n_initializer, sizeof *ig->list);
    ig->copies = og_calloc(a, n_ext, sizeof *ig->copies);
    ig->data = og_calloc(a, n_ext, sizeof *ig->data);
    if (!ig->list || !ig->copies || !ig->data) return og_error(OG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < src->n_initializer; i++) {
        const Onnx__TensorProto *tp = src->initializer[i];
        ig->list[i] = (Onnx__TensorProto *)tp;
        if (!is_external(tp)) continue;
        const char *name = tp->name ? tp->name : "";
        int64_t dims[OG_MAX_RANK];
        size_t nbytes = 0;
        if (tp->n_dims > OG_MAX_RANK || !og_dtype_is_known((og_dtype)tp->data_type))
            return og_error(OG_ERR_UNSUPPORTED,
                            "initializer '%s' has a rank or type onnxgrad "
                            "does not support",
                            name);
        for (size_t d = 0; d < tp->n_dims; d++) dims[d] = tp->dims[d];
        if (!og_shape_nbytes((og_dtype)tp->data_type, (int)tp->n_dims, dims, &nbytes))
            return og_error(OG_ERR_MODEL, "initializer '%s' has a bad shape", name);
        Onnx__TensorProto *c = &ig->copies[ig->n_copies];
        FILE *f = NULL;
        og_status st = open_external(tp, ext, nbytes, a, &f);
        if (st) return og_error_prefix(st, "initializer '%s'", name);
        void *data = og_malloc(a, nbytes + 1);
        if (!data) {
            fclose(f);
            return og_error(OG_ERR_NOMEM, "out of memory");
        }
        ig->data[ig->n_copies++] = data;
        st = read_opened(tp, f, data, nbytes);
        if (st) return og_error_prefix(st, "initializer '%s'", name);
        *c = *tp;
        c->has_data_location = 0;
        c->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
        c->n_external_data = 0;
        c->external_data = NULL;
        c->has_raw_data = 1;
        c->raw_data.len = nbytes;
        c->raw_data.data = data;
        ig->list[i] = c;
    }
    ig->g.initializer = ig->list;
    *use = &ig->g;
    return OG_OK;
}

/* Pack one TrainingInfoProto into out (bytes allocated with a), external data inlined. */
static og_status pack_training_info(const Onnx__TrainingInfoProto *tip, ext_src *ext,
                                    const og_allocator *a, og_blob *out)
{
    Onnx__TrainingInfoProto copy = *tip;
    inlined_graph ig[2];
    memset(ig, 0, sizeof ig);
    og_status st = inline_graph(tip->initialization, ext, a, &ig[0], &copy.initialization);
    if (!st) st = inline_graph(tip->algorithm, ext, a, &ig[1], &copy.algorithm);
    if (!st) {
        out->size = onnx__training_info_proto__get_packed_size(&copy);
        out->data = og_malloc(a, out->size + 1);
        if (out->data)
            onnx__training_info_proto__pack(&copy, out->data);
        else
            st = og_error(OG_ERR_NOMEM, "out of memory");
    }
    inlined_free(&ig[0], a);
    inlined_free(&ig[1], a);
    return st;
}

/* ---- model ----------------------------------------------------------------------- */

/* The graph-level part of a GraphProto (a model's graph, or a subgraph at nesting depth
 * `depth`) into g: name, initializers, inputs, value infos, nodes (and their subgraphs),
 * outputs. */
static og_status convert_graph(const Onnx__GraphProto *gp, ext_src *ext, og_graph *g, int depth)
{
    const og_allocator *a = g->alloc;
    og_status st = OG_OK;

#define DUP(dst, src)                                                                              \
    do {                                                                                           \
        if ((src) && (src)[0]) {                                                                   \
            (dst) = og_strdup(a, (src));                                                           \
            if (!(dst)) goto nomem;                                                                \
        }                                                                                          \
    } while (0)

    DUP(g->name, gp->name);
    DUP(g->doc, gp->doc_string);
    if (gp->n_sparse_initializer) {
        st = og_error(OG_ERR_UNSUPPORTED, "sparse initializers are not supported");
        goto done;
    }
    /* initializers */
    g->inits = og_malloc(a, (gp->n_initializer + 1) * sizeof *g->inits);
    if (!g->inits) goto nomem;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !tp->name[0]) {
            st = og_error(OG_ERR_MODEL, "initializer %zu has no name", i);
            goto done;
        }
        if (map_get(g, tp->name, false) >= 0) {
            st = og_error(OG_ERR_MODEL, "initializer '%s' is defined twice", tp->name);
            goto done;
        }
        int v = map_get(g, tp->name, true);
        if (v < 0) goto nomem;
        og_value *val = &g->values[v];
        val->kind = OG_VALUE_INITIALIZER;
        st = tensor_from_proto(tp, ext, a, &val->init);
        if (st) {
            st = og_error_prefix(st, "initializer '%s'", tp->name);
            goto done;
        }
        val->init->readonly = true;
        val->dtype = val->init->dtype;
        val->rank = val->init->rank;
        memcpy(val->dims, val->init->dims, sizeof val->dims);
        DUP(val->doc, tp->doc_string);
        g->inits[g->n_inits++] = v;
    }
    /* inputs */
    g->inputs = og_malloc(a, (gp->n_input + 1) * sizeof *g->inputs);
    if (!g->inputs) goto nomem;
    for (size_t i = 0; i < gp->n_input; i++) {
        int v;
        const char *name = gp->input[i]->name ? gp->input[i]->name : "";
        int prev = map_get(g, name, false);
        if (prev >= 0 && g->values[prev].is_graph_input) {
            st = og_error(OG_ERR_MODEL, "graph input '%s' is listed twice", name);
            goto done;
        }
        if (prev >= 0 && g->values[prev].kind == OG_VALUE_INITIALIZER) {
            /* an overridable initializer: keep the initializer's own type and shape */
            v = prev;
            if (gp->input[i]->type) g->values[v].has_value_info = true;
        } else {
            st = add_value_info(g, gp->input[i], &v, "input");
            if (st) goto done;
            g->values[v].kind = OG_VALUE_INPUT;
        }
        g->values[v].is_graph_input = true;
        g->inputs[g->n_inputs++] = v;
    }
    /* value infos */
    for (size_t i = 0; i < gp->n_value_info; i++) {
        int v;
        st = add_value_info(g, gp->value_info[i], &v, "value_info");
        if (st) goto done;
        g->values[v].has_value_info = true;
    }
    /* nodes */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np->op_type || !np->op_type[0]) {
            st = og_error(OG_ERR_MODEL, "node %zu ('%s') has no op_type", i,
                          np->name ? np->name : "");
            goto done;
        }
        /* counts are ints in the IR; the bytes already bound them in practice (no fixed
         * cap below that: Concat of thousands of inputs is a real model) */
        if (np->n_input > INT_MAX / 16 || np->n_output > INT_MAX / 16 ||
            np->n_attribute > INT_MAX / 16) {
            st = og_error(OG_ERR_MODEL, "node '%s' has too many inputs, outputs or attributes",
                          np->name ? np->name : "");
            goto done;
        }
        char auto_name[64];
        const char *nname = np->name;
        if (!nname || !nname[0]) {
            snprintf(auto_name, sizeof auto_name, "%s_%zu", np->op_type, i);
            nname = auto_name;
        }
        og_node *n = og_graph_add_node(g, np->op_type, np->domain, nname, (int)np->n_input,
                                       (int)np->n_output);
        if (!n) goto nomem;
        DUP(n->doc, np->doc_string);
        if (!string_field(a, &np->base, 8, &n->overload)) goto nomem;
        for (size_t j = 0; j < np->n_input; j++) {
            if (!np->input[j] || !np->input[j][0]) continue; /* omitted optional input */
            int v = map_get(g, np->input[j], true);
            if (v < 0) goto nomem;
            n->in[j] = v;
        }
        for (size_t j = 0; j < np->n_output; j++) {
            if (!np->output[j] || !np->output[j][0]) continue;
            int v = map_get(g, np->output[j], true);
            if (v < 0) goto nomem;
            n->out[j] = v;
        }
        n->attrs = og_calloc(a, np->n_attribute + 1, sizeof *n->attrs);
        if (!n->attrs) goto nomem;
        for (size_t j = 0; j < np->n_attribute; j++) {
            n->n_attrs++;
            st = attr_from_proto(g, np->attribute[j], &n->attrs[j], nname, ext, depth);
            if (st) goto done;
            for (size_t k = 0; k < j; k++)
                if (strcmp(n->attrs[k].name, n->attrs[j].name) == 0) {
                    st = og_error(OG_ERR_MODEL, "node '%s' has attribute '%s' twice", nname,
                                  n->attrs[j].name);
                    goto done;
                }
        }
    }
    /* outputs */
    g->outputs = og_malloc(a, (gp->n_output + 1) * sizeof *g->outputs);
    if (!g->outputs) goto nomem;
    for (size_t i = 0; i < gp->n_output; i++) {
        int v;
        st = add_value_info(g, gp->output[i], &v, "output");
        if (st) goto done;
        g->values[v].is_graph_output = true;
        g->values[v].has_value_info = gp->output[i]->type != NULL;
        g->outputs[g->n_outputs++] = v;
    }
    goto done;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory while loading the model");
done:
    return st;
#undef DUP
}

static og_status convert(const Onnx__ModelProto *mp, ext_src *ext, og_graph *g)
{
    const og_allocator *a = g->alloc;
    og_status st = OG_OK;

#define DUP(dst, src)                                                                              \
    do {                                                                                           \
        if ((src) && (src)[0]) {                                                                   \
            (dst) = og_strdup(a, (src));                                                           \
            if (!(dst)) goto nomem;                                                                \
        }                                                                                          \
    } while (0)

    if (!mp->has_ir_version) {
        st = og_error(OG_ERR_PARSE, "not an ONNX model: no ir_version");
        goto done;
    }
    g->ir_version = mp->ir_version;
    if (mp->ir_version < 3 || mp->ir_version > 10) {
        st = og_error(OG_ERR_UNSUPPORTED, "IR version %lld is not supported (3 to 10 are)",
                      (long long)mp->ir_version);
        goto done;
    }
    if (!mp->graph) {
        st = og_error(OG_ERR_MODEL, "the model has no graph");
        goto done;
    }
    DUP(g->producer_name, mp->producer_name);
    DUP(g->producer_version, mp->producer_version);
    DUP(g->model_domain, mp->domain);
    DUP(g->model_doc, mp->doc_string);
    g->model_version = mp->has_model_version ? mp->model_version : 0;
    /* model-local functions are kept packed: a node calling one runs if onnxgrad knows its
     * op (those of its own domain), and fails at resolution naming it otherwise */
    for (size_t i = 0; i < mp->n_functions; i++) {
        const Onnx__FunctionProto *fp = mp->functions[i];
        char *overload = NULL;
        if (!fp->name || !fp->name[0]) {
            st = og_error(OG_ERR_MODEL, "local function %zu has no name", i);
            goto done;
        }
        if (!string_field(a, &fp->base, 13, &overload)) goto nomem;
        size_t size = onnx__function_proto__get_packed_size(fp);
        void *bytes = og_malloc(a, size + 1);
        if (!bytes) {
            og_free(a, overload);
            goto nomem;
        }
        onnx__function_proto__pack(fp, bytes);
        st =
            og_graph_add_function(g, fp->domain ? fp->domain : "", fp->name, overload, bytes, size);
        og_free(a, bytes);
        og_free(a, overload);
        if (st) goto done;
    }
    g->opsets = og_calloc(a, mp->n_opset_import + 1, sizeof *g->opsets);
    if (!g->opsets) goto nomem;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        g->opsets[i].domain = og_strdup(a, o->domain ? o->domain : "");
        if (!g->opsets[i].domain) goto nomem;
        g->opsets[i].version = o->has_version ? o->version : 1;
        g->n_opsets++;
        const char *d = g->opsets[i].domain;
        if ((d[0] == 0 || strcmp(d, "ai.onnx") == 0) &&
            (g->opsets[i].version < 1 || g->opsets[i].version > 21)) {
            st = og_error(OG_ERR_UNSUPPORTED,
                          "default-domain opset %lld is not supported "
                          "(1 to 21 are; below 7 upgraded to 7 at load)",
                          (long long)g->opsets[i].version);
            goto done;
        }
    }
    g->metadata = og_calloc(a, mp->n_metadata_props + 1, sizeof *g->metadata);
    if (!g->metadata) goto nomem;
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        g->metadata[i].key = og_strdup(a, mp->metadata_props[i]->key);
        g->metadata[i].value = og_strdup(a, mp->metadata_props[i]->value);
        g->n_metadata++;
        if (!g->metadata[i].key || !g->metadata[i].value) goto nomem;
    }

    g->training_info = og_calloc(a, mp->n_training_info + 1, sizeof *g->training_info);
    if (!g->training_info) goto nomem;
    for (size_t i = 0; i < mp->n_training_info; i++) {
        st = pack_training_info(mp->training_info[i], ext, a, &g->training_info[i]);
        if (st) {
            st = og_error_prefix(st, "training_info %zu", i);
            goto done;
        }
        g->n_training_info++;
    }

    st = convert_graph(mp->graph, ext, g, 0);
    /* opsets 1..6: rewritten into opset-7 nodes (upgrade.c) */
    if (!st) st = og_onnx_upgrade_legacy(g);
    goto done;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory while loading the model");
done:
    return st;
#undef DUP
}

og_status og_onnx_parse_model(const void *data, size_t size, const char *base_dir,
                              const og_load_options *lim, const og_allocator *a, og_graph **out)
{
    a = og_alloc_or_default(a);
    *out = NULL;
    pc_bridge br = {a, false};
    ProtobufCAllocator pa = {pc_alloc, pc_free, &br};
    if (!data && size) return og_error(OG_ERR_INVALID_ARG, "model data is NULL");
    og_load_options defaults;
    if (!lim) {
        og_onnx_limits(NULL, &defaults);
        lim = &defaults;
    }
    /* bounded depth and counts before protobuf-c, which recurses per nested message */
    og_status st = og_onnx_scan_model(data, size, lim, a, NULL);
    if (st) return st;
    ext_src ext = {base_dir, lim->max_external_bytes, lim->max_external_bytes};
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pa, size, data);
    if (!mp && br.failed) return og_error(OG_ERR_NOMEM, "out of memory decoding the model");
    if (!mp)
        return og_error(OG_ERR_PARSE,
                        "bytes are not a valid ONNX model (protobuf "
                        "decoding failed after reading %zu bytes)",
                        size);
    og_graph *g = og_graph_new(a);
    if (g) g->max_depth = lim->max_depth;
    st = g ? convert(mp, base_dir ? &ext : NULL, g) : og_error(OG_ERR_NOMEM, "out of memory");
    onnx__model_proto__free_unpacked(mp, &pa);
    if (st) {
        og_graph_free(g);
        return st;
    }
    *out = g;
    return OG_OK;
}

/* ---- training info as IR ----------------------------------------------------------- */

/* x followed by y, in a new array allocated with a (NULL on failure, or when both are
 * empty: *n is then 0). */
static void **concat(const og_allocator *a, void *const *x, size_t nx, void *const *y, size_t ny,
                     size_t *n, bool *failed)
{
    *n = nx + ny;
    if (*n == 0) return NULL;
    void **p = og_malloc(a, (*n + 1) * sizeof *p);
    if (!p) {
        *failed = true;
        *n = 0;
        return NULL;
    }
    if (nx) memcpy(p, x, nx * sizeof *p);
    if (ny) memcpy(p + nx, y, ny * sizeof *p);
    return p;
}

static og_status copy_bindings(const og_allocator *a, Onnx__StringStringEntryProto *const *src,
                               size_t n, const char *what, og_kv **out, int *n_out)
{
    *out = og_calloc(a, n + 1, sizeof **out);
    if (!*out) return og_error(OG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *k = src[i]->key, *v = src[i]->value;
        if (!k || !k[0] || !v || !v[0])
            return og_error(OG_ERR_MODEL, "%s %zu ('%s' -> '%s') lacks a key or a value", what, i,
                            k ? k : "", v ? v : "");
        (*out)[i].key = og_strdup(a, k);
        (*out)[i].value = og_strdup(a, v);
        *n_out = (int)i + 1;
        if (!(*out)[i].key || !(*out)[i].value) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    return OG_OK;
}

void og_training_info_free(og_training_info *ti)
{
    if (!ti) return;
    const og_allocator *a = ti->alloc;
    og_graph_free(ti->algorithm);
    og_graph_free(ti->initialization);
    for (int i = 0; ti->update && i < ti->n_update; i++) {
        og_free(a, ti->update[i].key);
        og_free(a, ti->update[i].value);
    }
    for (int i = 0; ti->init && i < ti->n_init; i++) {
        og_free(a, ti->init[i].key);
        og_free(a, ti->init[i].value);
    }
    og_free(a, ti->update);
    og_free(a, ti->init);
    og_free(a, ti);
}

og_status og_onnx_parse_training_info(const og_graph *model, int k, const og_allocator *a,
                                      og_training_info **out)
{
    a = og_alloc_or_default(a);
    *out = NULL;
    if (k < 0 || k >= model->n_training_info)
        return og_error(OG_ERR_INVALID_ARG, "the model has no training_info %d (it has %d)", k,
                        model->n_training_info);
    pc_bridge br = {a, false};
    ProtobufCAllocator pa = {pc_alloc, pc_free, &br};
    void *bytes = NULL;
    size_t size = 0;
    Onnx__ModelProto *mp = NULL;
    Onnx__TrainingInfoProto *tip = NULL;
    void **arrays[7] = {NULL};
    bool failed = false;
    og_training_info *ti = og_calloc(a, 1, sizeof *ti);
    if (!ti) return og_error(OG_ERR_NOMEM, "out of memory");
    ti->alloc = a;
    /* the main graph alone, as protobuf */
    og_graph main_only = *model;
    main_only.n_training_info = 0;
    og_status st = og_onnx_serialize_model(&main_only, a, &bytes, &size);
    if (st) goto done;
    mp = onnx__model_proto__unpack(&pa, size, bytes);
    tip = onnx__training_info_proto__unpack(&pa, model->training_info[k].size,
                                            model->training_info[k].data);
    if (!mp || !tip) {
        st = br.failed ? og_error(OG_ERR_NOMEM, "out of memory")
                       : og_error(OG_ERR_PARSE,
                                  "training_info %d is not a valid "
                                  "TrainingInfoProto",
                                  k);
        goto done;
    }
    const Onnx__GraphProto *mg = mp->graph, *alg = tip->algorithm;
    Onnx__ModelProto m2 = *mp;
    m2.n_training_info = 0;
    m2.training_info = NULL;
    /* ONNX's combination: main graph's lists, then the algorithm's */
    Onnx__GraphProto cg = *mg;
    if (alg) {
#define CAT(field, slot)                                                                           \
    arrays[slot] = concat(a, (void *const *)mg->field, mg->n_##field, (void *const *)alg->field,   \
                          alg->n_##field, &cg.n_##field, &failed);                                 \
    cg.field = (void *)arrays[slot]
        CAT(input, 0);
        CAT(initializer, 1);
        CAT(output, 2);
        CAT(node, 3);
        CAT(value_info, 4);
        CAT(sparse_initializer, 5);
#undef CAT
    }
    if (failed) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    ti->n_main_outputs = (int)mg->n_output;
    m2.graph = &cg;
    ti->algorithm = og_graph_new(a);
    if (!ti->algorithm) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    ti->algorithm->max_depth = model->max_depth;
    if ((st = convert(&m2, NULL, ti->algorithm))) {
        st = og_error_prefix(st, "training_info %d, the main and algorithm graphs combined", k);
        goto done;
    }
    /* the initialization graph, which may read the main graph's initializers */
    const Onnx__GraphProto *ig = tip->initialization;
    if (ig && (ig->n_node || ig->n_output)) {
        Onnx__GraphProto ic = *ig;
        arrays[6] =
            concat(a, (void *const *)mg->initializer, mg->n_initializer,
                   (void *const *)ig->initializer, ig->n_initializer, &ic.n_initializer, &failed);
        ic.initializer = (Onnx__TensorProto **)arrays[6];
        if (failed) {
            st = og_error(OG_ERR_NOMEM, "out of memory");
            goto done;
        }
        m2.graph = &ic;
        ti->initialization = og_graph_new(a);
        if (!ti->initialization) {
            st = og_error(OG_ERR_NOMEM, "out of memory");
            goto done;
        }
        ti->initialization->max_depth = model->max_depth;
        if ((st = convert(&m2, NULL, ti->initialization))) {
            st = og_error_prefix(st, "training_info %d, initialization graph", k);
            goto done;
        }
    }
    st = copy_bindings(a, tip->update_binding, tip->n_update_binding, "update_binding", &ti->update,
                       &ti->n_update);
    if (!st)
        st = copy_bindings(a, tip->initialization_binding, tip->n_initialization_binding,
                           "initialization_binding", &ti->init, &ti->n_init);
    if (st) st = og_error_prefix(st, "training_info %d", k);
done:
    for (int i = 0; i < 7; i++) og_free(a, arrays[i]);
    if (tip) onnx__training_info_proto__free_unpacked(tip, &pa);
    if (mp) onnx__model_proto__free_unpacked(mp, &pa);
    og_free(a, bytes);
    if (st) {
        og_training_info_free(ti);
        return st;
    }
    *out = ti;
    return OG_OK;
}
