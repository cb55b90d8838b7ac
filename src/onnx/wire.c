/* wire.c: a pre-scan of ModelProto bytes before protobuf-c unpacks them.
 *
 * protobuf-c's unpack recurses once per nested message and has no depth limit, so a small
 * file of a few thousand nested If subgraphs (or seq(seq(...)) types) overflows the stack.
 * This scan walks the wire format with an explicit stack, guided by the generated
 * descriptors (which field holds which message), and refuses, before anything is
 * allocated for the model: nesting deeper than the limit, and more nodes, attributes,
 * values or opset imports, or longer strings, than the load options allow.  It reads every
 * byte once and allocates only its stack.  Malformed bytes it cannot walk are left to
 * protobuf-c, which reports them as before.
 *
 * Nesting is counted as OG_MAX_NESTING defines it: subgraphs within the graph that holds
 * them, plus sequence, map and optional types within a value's type (a GraphProto or a
 * TypeProto inside another of its kind is one level).  Every way ONNX's messages recurse
 * passes through one of the two, with at most a few other messages between two of them
 * (Graph > Node > Attribute > Graph; Type > Sequence > Type), so the raw message depth, and
 * the stack protobuf-c needs, stays below RAW_DEPTH(limit), which is checked too. */
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx/onnx_io.h"

og_status og_onnx_limits(const og_load_options *o, og_load_options *out)
{
    memset(out, 0, sizeof *out);
    if (o) *out = *o;
#define TAKE(field, dflt)                                                                          \
    do {                                                                                           \
        if (out->field < 0)                                                                        \
            return og_error(OG_ERR_INVALID_ARG, "og_load_options." #field " is %lld (< 0)",        \
                            (long long)out->field);                                                \
        if (!out->field) out->field = (dflt);                                                      \
    } while (0)
    TAKE(max_depth, OG_DEFAULT_MAX_DEPTH);
    TAKE(max_opsets, OG_DEFAULT_MAX_OPSETS);
    TAKE(max_nodes, OG_DEFAULT_MAX_NODES);
    TAKE(max_values, OG_DEFAULT_MAX_VALUES);
    TAKE(max_attributes, OG_DEFAULT_MAX_ATTRIBUTES);
    TAKE(max_string_bytes, OG_DEFAULT_MAX_STRING_BYTES);
    TAKE(max_model_bytes, OG_DEFAULT_MAX_MODEL_BYTES);
    TAKE(max_external_bytes, OG_DEFAULT_MAX_EXTERNAL_BYTES);
#undef TAKE
    if (out->max_depth > OG_MAX_NESTING)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_load_options.max_depth is %d, above OG_MAX_NESTING (%d): the limit "
                        "may be lowered, not raised",
                        out->max_depth, OG_MAX_NESTING);
    return OG_OK;
}

#define RAW_DEPTH(limit) (3 * (limit) + 16)

typedef struct frame {
    const ProtobufCMessageDescriptor *d;
    size_t end; /* offset just past this message's bytes */
} frame;

/* Read a varint at data[*pos..end); false if it runs past end or past 10 bytes. */
static bool read_varint(const uint8_t *data, size_t end, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= end) return false;
        uint8_t b = data[(*pos)++];
        x |= (uint64_t)(b & 0x7F) << (shift < 64 ? shift : 63);
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* The short name of a message type for messages ("onnx.GraphProto" -> "GraphProto"). */
static const char *short_name(const ProtobufCMessageDescriptor *d)
{
    const char *dot = strrchr(d->name, '.');
    return dot ? dot + 1 : d->name;
}

static og_status too_many(const char *what, int64_t limit, const char *option)
{
    return og_error(OG_ERR_LIMIT,
                    "the model declares more than %lld %s, the limit (og_load_options.%s)",
                    (long long)limit, what, option);
}

og_status og_onnx_scan_model(const void *bytes, size_t size, const og_load_options *lim,
                             const og_allocator *a, og_scan_stats *stats)
{
    const uint8_t *data = bytes;
    og_scan_stats s = {0};
    if ((uint64_t)size > (uint64_t)lim->max_model_bytes)
        return og_error(OG_ERR_LIMIT,
                        "the model has %zu bytes, more than the limit %lld "
                        "(og_load_options.max_model_bytes)",
                        size, (long long)lim->max_model_bytes);
    int raw_limit = RAW_DEPTH(lim->max_depth);
    frame *stack = og_malloc(a, ((size_t)raw_limit + 1) * sizeof *stack);
    if (!stack) return og_error(OG_ERR_NOMEM, "out of memory");
    og_status st = OG_OK;
    int depth = 0, graphs = 0, types = 0;
    size_t pos = 0;
    stack[0].d = &onnx__model_proto__descriptor;
    stack[0].end = size;
    for (;;) {
        frame *f = &stack[depth];
        if (pos >= f->end) {
            if (depth == 0) break;
            if (f->d == &onnx__graph_proto__descriptor) graphs--;
            if (f->d == &onnx__type_proto__descriptor) types--;
            depth--;
            continue;
        }
        uint64_t tag, len;
        if (!read_varint(data, f->end, &pos, &tag)) break; /* malformed: protobuf-c says so */
        unsigned wire = (unsigned)(tag & 7);
        uint64_t number = tag >> 3;
        if (wire == 0) {
            if (!read_varint(data, f->end, &pos, &len)) break;
            continue;
        }
        if (wire == 1 || wire == 5) {
            size_t n = wire == 1 ? 8 : 4;
            if (f->end - pos < n) break;
            pos += n;
            continue;
        }
        if (wire != 2 || !read_varint(data, f->end, &pos, &len) || len > f->end - pos) break;
        const ProtobufCFieldDescriptor *fd =
            number <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(f->d, (unsigned)number)
                                 : NULL;
        if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
            const ProtobufCMessageDescriptor *sub = fd->descriptor;
            if (sub == &onnx__node_proto__descriptor && ++s.nodes > lim->max_nodes) {
                st = too_many("nodes", lim->max_nodes, "max_nodes");
                goto done;
            }
            if (sub == &onnx__attribute_proto__descriptor && ++s.attributes > lim->max_attributes) {
                st = too_many("attributes", lim->max_attributes, "max_attributes");
                goto done;
            }
            if (sub == &onnx__operator_set_id_proto__descriptor && ++s.opsets > lim->max_opsets) {
                st = too_many("opset imports", lim->max_opsets, "max_opsets");
                goto done;
            }
            if ((sub == &onnx__value_info_proto__descriptor ||
                 (sub == &onnx__tensor_proto__descriptor &&
                  f->d == &onnx__graph_proto__descriptor)) &&
                ++s.values > lim->max_values) {
                st = too_many("values", lim->max_values, "max_values");
                goto done;
            }
            if (sub == &onnx__graph_proto__descriptor) graphs++;
            if (sub == &onnx__type_proto__descriptor) types++;
            int nesting = (graphs > 0 ? graphs - 1 : 0) + (types > 0 ? types - 1 : 0);
            if (nesting > lim->max_depth || depth + 1 > raw_limit) {
                st = og_error(OG_ERR_LIMIT,
                              "the model nests more than %d levels deep (a %s at byte %zu: "
                              "%d subgraphs within subgraphs, %d types within types, %d "
                              "protobuf messages), beyond the limit of %d "
                              "(og_load_options.max_depth)",
                              lim->max_depth, short_name(sub), pos, graphs > 0 ? graphs - 1 : 0,
                              types > 0 ? types - 1 : 0, depth + 1, lim->max_depth);
                goto done;
            }
            if (nesting > s.depth) s.depth = nesting;
            if (graphs > s.graph_depth) s.graph_depth = graphs;
            depth++;
            stack[depth].d = sub;
            stack[depth].end = pos + (size_t)len;
            continue;
        }
        if (fd && fd->type == PROTOBUF_C_TYPE_STRING) {
            if (len > (uint64_t)lim->max_string_bytes) {
                st = og_error(OG_ERR_LIMIT,
                              "the model has a string of %llu bytes (%s.%s at byte %zu), more "
                              "than the limit %lld (og_load_options.max_string_bytes)",
                              (unsigned long long)len, short_name(f->d), fd->name, pos,
                              (long long)lim->max_string_bytes);
                goto done;
            }
            /* every node output names a value */
            if (f->d == &onnx__node_proto__descriptor && fd->id == 2 &&
                ++s.values > lim->max_values) {
                st = too_many("values", lim->max_values, "max_values");
                goto done;
            }
        }
        pos += (size_t)len;
    }
done:
    og_free(a, stack);
    if (stats) *stats = s;
    return st;
}
