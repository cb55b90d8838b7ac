/* save.c: og_graph -> ModelProto bytes.
 *
 * The protobuf-c tree is built in a scratch arena (every block recorded, freed together
 * after packing), so that one failure path releases everything. */
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx/onnx_io.h"

typedef struct arena {
    const og_allocator *a;
    void **blocks;
    size_t n, cap;
    bool failed;
} arena;

static void *arena_alloc(arena *ar, size_t size)
{
    if (ar->failed) return NULL;
    if (ar->n == ar->cap) {
        size_t cap = ar->cap ? ar->cap * 2 : 256;
        void **b = og_realloc(ar->a, ar->blocks, ar->n * sizeof *b, cap * sizeof *b);
        if (!b) {
            ar->failed = true;
            return NULL;
        }
        ar->blocks = b;
        ar->cap = cap;
    }
    void *p = og_calloc(ar->a, 1, size ? size : 1);
    if (!p) {
        ar->failed = true;
        return NULL;
    }
    ar->blocks[ar->n++] = p;
    return p;
}

static void arena_free(arena *ar)
{
    for (size_t i = 0; i < ar->n; i++) og_free(ar->a, ar->blocks[i]);
    og_free(ar->a, ar->blocks);
}

static char *str(arena *ar, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(ar, n);
    if (d) memcpy(d, s, n);
    return d;
}

static Onnx__TensorProto *tensor_proto(arena *ar, const og_tensor *t, const char *name)
{
    Onnx__TensorProto *tp = arena_alloc(ar, sizeof *tp);
    if (!tp) return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = str(ar, name);
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t->dtype;
    tp->n_dims = (size_t)t->rank;
    tp->dims = arena_alloc(ar, (size_t)(t->rank + 1) * sizeof(int64_t));
    if (tp->dims && t->rank) memcpy(tp->dims, t->dims, (size_t)t->rank * sizeof(int64_t));
    if (t->dtype == OG_STRING) { /* ONNX keeps strings in string_data, never raw */
        tp->n_string_data = (size_t)t->numel;
        tp->string_data = arena_alloc(ar, (size_t)(t->numel + 1) * sizeof *tp->string_data);
        for (int64_t i = 0; tp->string_data && i < t->numel; i++) {
            const char *e = og_tensor_str(t, i);
            tp->string_data[i].len = strlen(e);
            tp->string_data[i].data = (uint8_t *)str(ar, e);
        }
        return tp;
    }
    size_t nbytes = og_tensor_nbytes(t);
    bool packed = og_dtype_is_int4(t->dtype); /* two a byte on the wire, low nibble first */
    size_t wire = packed ? (size_t)(t->numel / 2 + t->numel % 2) : nbytes;
    tp->has_raw_data = 1;
    tp->raw_data.len = wire;
    tp->raw_data.data = arena_alloc(ar, wire + 1);
    if (!tp->raw_data.data || !wire) return tp;
    if (!packed) {
        memcpy(tp->raw_data.data, t->data, nbytes);
        return tp;
    }
    const uint8_t *e = t->data;
    for (size_t i = 0; i < wire; i++) {
        int64_t j = 2 * (int64_t)i;
        tp->raw_data.data[i] =
            (uint8_t)((e[j] & 0xf) | (j + 1 < t->numel ? (e[j + 1] & 0xf) << 4 : 0));
    }
    return tp;
}

/* A tensor TypeProto into tp (allocation failures show as ar->failed). */
static void tensor_type_proto(arena *ar, const og_graph *g, Onnx__TypeProto *tp, og_dtype dtype,
                              int rank, const int64_t *dims)
{
    Onnx__TypeProto__Tensor *tt = arena_alloc(ar, sizeof *tt);
    if (!tt) return;
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (dtype != OG_UNDEFINED) {
        tt->has_elem_type = 1;
        tt->elem_type = (int32_t)dtype;
    }
    if (rank < 0) return;
    Onnx__TensorShapeProto *sp = arena_alloc(ar, sizeof *sp);
    if (!sp) return;
    onnx__tensor_shape_proto__init(sp);
    sp->n_dim = (size_t)rank;
    sp->dim = arena_alloc(ar, (size_t)(rank + 1) * sizeof *sp->dim);
    if (!sp->dim) return;
    for (int d = 0; d < rank; d++) {
        Onnx__TensorShapeProto__Dimension *dim = arena_alloc(ar, sizeof *dim);
        if (!dim) return;
        onnx__tensor_shape_proto__dimension__init(dim);
        const char *sym = og_graph_dim_name(g, dims[d]);
        if (dims[d] >= 0) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = dims[d];
        } else if (sym) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = str(ar, sym);
        }
        sp->dim[d] = dim;
    }
    tt->shape = sp;
}

/* The TypeProto of a sequence, map or optional type, built down the chain of containers
 * (iteratively: a type nests at most OG_MAX_NESTING deep). */
static Onnx__TypeProto *container_type_proto(arena *ar, const og_graph *g, const og_type *t)
{
    Onnx__TypeProto *top = arena_alloc(ar, sizeof *top), *cur = top;
    if (!top) return NULL;
    onnx__type_proto__init(top);
    for (; t && cur; t = t->elem) {
        if (t->kind == OG_KIND_TENSOR) {
            tensor_type_proto(ar, g, cur, t->dtype, t->rank, t->dims);
            break;
        }
        Onnx__TypeProto *elem = t->elem ? arena_alloc(ar, sizeof *elem) : NULL;
        if (elem) onnx__type_proto__init(elem);
        if (t->kind == OG_KIND_SEQUENCE) {
            Onnx__TypeProto__Sequence *q = arena_alloc(ar, sizeof *q);
            if (!q) return NULL;
            onnx__type_proto__sequence__init(q);
            q->elem_type = elem;
            cur->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
            cur->sequence_type = q;
        } else if (t->kind == OG_KIND_MAP) {
            Onnx__TypeProto__Map *q = arena_alloc(ar, sizeof *q);
            if (!q) return NULL;
            onnx__type_proto__map__init(q);
            if (t->dtype != OG_UNDEFINED) {
                q->has_key_type = 1;
                q->key_type = (int32_t)t->dtype;
            }
            q->value_type = elem;
            cur->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
            cur->map_type = q;
        } else {
            Onnx__TypeProto__Optional *q = arena_alloc(ar, sizeof *q);
            if (!q) return NULL;
            onnx__type_proto__optional__init(q);
            q->elem_type = elem;
            cur->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
            cur->optional_type = q;
        }
        cur = elem;
    }
    return top;
}

static Onnx__ValueInfoProto *value_info(arena *ar, const og_graph *g, const og_value *v)
{
    Onnx__ValueInfoProto *vi = arena_alloc(ar, sizeof *vi);
    if (!vi) return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = str(ar, v->name);
    vi->doc_string = v->doc ? str(ar, v->doc) : NULL;
    if (v->type) {
        vi->type = container_type_proto(ar, g, v->type);
        return vi;
    }
    if (v->dtype == OG_UNDEFINED && v->rank < 0) return vi;
    Onnx__TypeProto *tp = arena_alloc(ar, sizeof *tp);
    if (!tp) return vi;
    onnx__type_proto__init(tp);
    vi->type = tp;
    tensor_type_proto(ar, g, tp, v->dtype, v->rank, v->dims);
    return vi;
}

static void *pc_alloc(void *user, size_t size) { return og_malloc(user, size); }
static void pc_free(void *user, void *p) { og_free(user, p); }

/* What packing held: the graph attributes kept as unpacked protos (raw_list) and the arena. */
static void pack_release(arena *ar, Onnx__AttributeProto **raw_list, size_t n_raw)
{
    ProtobufCAllocator pa = {pc_alloc, pc_free, (void *)ar->a};
    for (size_t i = 0; i < n_raw; i++) onnx__attribute_proto__free_unpacked(raw_list[i], &pa);
    og_free(ar->a, raw_list);
    arena_free(ar);
}

static Onnx__GraphProto *graph_proto(arena *ar, const og_graph *g, Onnx__AttributeProto ***raw_list,
                                     size_t *n_raw);

static Onnx__AttributeProto *attr_proto(arena *ar, const og_attr *at,
                                        Onnx__AttributeProto ***raw_list, size_t *n_raw)
{
    Onnx__AttributeProto *ap;
    if (at->raw) {
        /* kept as bytes at load: decode them again (freed after packing) */
        ProtobufCAllocator pa = {pc_alloc, pc_free, (void *)ar->a};
        ap = onnx__attribute_proto__unpack(&pa, at->raw_len, at->raw);
        if (!ap) return NULL;
        (*raw_list)[(*n_raw)++] = ap;
        return ap;
    }
    ap = arena_alloc(ar, sizeof *ap);
    if (!ap) return NULL;
    onnx__attribute_proto__init(ap);
    ap->name = str(ar, at->name);
    ap->doc_string = at->doc ? str(ar, at->doc) : NULL;
    ap->has_type = 1;
    ap->type = (Onnx__AttributeProto__AttributeType)at->type;
    switch (at->type) {
    case OG_ATTR_FLOAT:
        ap->has_f = 1;
        ap->f = at->f;
        break;
    case OG_ATTR_INT:
        ap->has_i = 1;
        ap->i = at->i;
        break;
    case OG_ATTR_STRING:
        ap->has_s = 1;
        ap->s.len = at->s_len;
        ap->s.data = arena_alloc(ar, at->s_len + 1);
        if (ap->s.data && at->s_len) memcpy(ap->s.data, at->s, at->s_len);
        break;
    case OG_ATTR_TENSOR: ap->t = tensor_proto(ar, at->t, NULL); break;
    case OG_ATTR_GRAPH:
        if (!at->g || !(ap->g = graph_proto(ar, at->g, raw_list, n_raw))) return NULL;
        break;
    case OG_ATTR_FLOATS:
        ap->n_floats = (size_t)at->n;
        ap->floats = arena_alloc(ar, (size_t)(at->n + 1) * sizeof(float));
        if (ap->floats && at->n) memcpy(ap->floats, at->floats, (size_t)at->n * sizeof(float));
        break;
    case OG_ATTR_INTS:
        ap->n_ints = (size_t)at->n;
        ap->ints = arena_alloc(ar, (size_t)(at->n + 1) * sizeof(int64_t));
        if (ap->ints && at->n) memcpy(ap->ints, at->ints, (size_t)at->n * sizeof(int64_t));
        break;
    case OG_ATTR_STRINGS:
        ap->n_strings = (size_t)at->n;
        ap->strings = arena_alloc(ar, (size_t)(at->n + 1) * sizeof *ap->strings);
        for (int i = 0; ap->strings && i < at->n; i++) {
            ap->strings[i].len = strlen(at->strings[i]);
            ap->strings[i].data = (uint8_t *)str(ar, at->strings[i]);
        }
        break;
    case OG_ATTR_TENSORS:
        ap->n_tensors = (size_t)at->n;
        ap->tensors = arena_alloc(ar, (size_t)(at->n + 1) * sizeof *ap->tensors);
        for (int i = 0; ap->tensors && i < at->n; i++)
            ap->tensors[i] = tensor_proto(ar, at->tensors[i], NULL);
        break;
    default: break;
    }
    return ap;
}

/* A string field the system's onnx.proto (IR 8) predates, written as an unknown field of
 * message m: NodeProto.overload (8) and FunctionProto.overload (13) of IR 10. */
static bool add_string_field(arena *ar, ProtobufCMessage *m, uint32_t field, const char *s)
{
    /* protobuf-c writes an unknown field's data right after its key: for a length-delimited
     * field that is the length, then the bytes */
    size_t n = strlen(s), len = 0;
    uint8_t *d = arena_alloc(ar, n + 10);
    ProtobufCMessageUnknownField *u = arena_alloc(ar, sizeof *u);
    if (!u || !d) return false;
    for (size_t v = n;; v >>= 7) {
        d[len++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80) break;
    }
    memcpy(d + len, s, n);
    u->tag = field;
    u->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    u->len = len + n;
    u->data = d;
    m->n_unknown_fields = 1;
    m->unknown_fields = u;
    return true;
}

/* The NodeProtos of g's nodes; NULL when out of memory. */
static Onnx__NodeProto **node_protos(arena *ar, const og_graph *g, Onnx__AttributeProto ***raw_list,
                                     size_t *n_raw)
{
    Onnx__NodeProto **list = arena_alloc(ar, (size_t)(g->n_nodes + 1) * sizeof(void *));
    if (!list) return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        Onnx__NodeProto *np = arena_alloc(ar, sizeof *np);
        if (!np) return NULL;
        onnx__node_proto__init(np);
        np->name = str(ar, n->name);
        np->op_type = str(ar, n->op_type);
        np->domain = str(ar, n->domain);
        np->doc_string = n->doc ? str(ar, n->doc) : NULL;
        int n_in = n->n_in - n->n_implicit; /* the implicit inputs are the subgraphs' */
        np->n_input = (size_t)n_in;
        np->input = arena_alloc(ar, (size_t)(n_in + 1) * sizeof(char *));
        np->n_output = (size_t)n->n_out;
        np->output = arena_alloc(ar, (size_t)(n->n_out + 1) * sizeof(char *));
        np->n_attribute = (size_t)n->n_attrs;
        np->attribute = arena_alloc(ar, (size_t)(n->n_attrs + 1) * sizeof(void *));
        if (!np->input || !np->output || !np->attribute) return NULL;
        for (int j = 0; j < n_in; j++)
            np->input[j] = str(ar, n->in[j] >= 0 ? g->values[n->in[j]].name : "");
        for (int j = 0; j < n->n_out; j++)
            np->output[j] = str(ar, n->out[j] >= 0 ? g->values[n->out[j]].name : "");
        for (int j = 0; j < n->n_attrs; j++)
            if (!(np->attribute[j] = attr_proto(ar, &n->attrs[j], raw_list, n_raw))) return NULL;
        if (n->overload && n->overload[0] && !add_string_field(ar, &np->base, 8, n->overload))
            return NULL;
        list[i] = np;
    }
    return ar->failed ? NULL : list;
}

/* The GraphProto of g's graph-level part; NULL when out of memory.  Attributes kept as raw
 * bytes are decoded into raw_list (room for every attribute of g), freed after packing. */
static Onnx__GraphProto *graph_proto(arena *ar, const og_graph *g, Onnx__AttributeProto ***raw_list,
                                     size_t *n_raw)
{
    Onnx__GraphProto *gp = arena_alloc(ar, sizeof *gp);
    if (!gp) return NULL;
    onnx__graph_proto__init(gp);
    gp->name = str(ar, g->name);
    gp->doc_string = str(ar, g->doc);

    gp->n_initializer = (size_t)g->n_inits;
    gp->initializer = arena_alloc(ar, (size_t)(g->n_inits + 1) * sizeof(void *));
    if (!gp->initializer) return NULL;
    for (int i = 0; i < g->n_inits; i++) {
        const og_value *v = &g->values[g->inits[i]];
        gp->initializer[i] = tensor_proto(ar, v->init, v->name);
        if (!gp->initializer[i]) return NULL;
        if (v->doc) gp->initializer[i]->doc_string = str(ar, v->doc);
    }
    gp->n_input = (size_t)g->n_inputs;
    gp->input = arena_alloc(ar, (size_t)(g->n_inputs + 1) * sizeof(void *));
    gp->n_output = (size_t)g->n_outputs;
    gp->output = arena_alloc(ar, (size_t)(g->n_outputs + 1) * sizeof(void *));
    if (!gp->input || !gp->output) return NULL;
    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[i] = value_info(ar, g, &g->values[g->inputs[i]]))) return NULL;
    for (int i = 0; i < g->n_outputs; i++)
        if (!(gp->output[i] = value_info(ar, g, &g->values[g->outputs[i]]))) return NULL;
    gp->value_info = arena_alloc(ar, (size_t)(g->n_values + 1) * sizeof(void *));
    if (!gp->value_info) return NULL;
    for (int v = 0; v < g->n_values; v++) {
        const og_value *val = &g->values[v];
        if (!val->has_value_info || val->is_graph_input || val->is_graph_output ||
            val->kind != OG_VALUE_INTERMEDIATE)
            continue;
        if (!(gp->value_info[gp->n_value_info++] = value_info(ar, g, val))) return NULL;
    }
    gp->n_node = (size_t)g->n_nodes;
    gp->node = node_protos(ar, g, raw_list, n_raw);
    return ar->failed || !gp->node ? NULL : gp;
}

/* Attributes of g and its subgraphs: room for those kept as raw bytes. */
static size_t attr_count(const og_graph *g)
{
    size_t n = 0;
    for (int i = 0; g && i < g->n_nodes; i++) {
        n += (size_t)g->nodes[i].n_attrs;
        for (int k = 0; k < g->nodes[i].n_attrs; k++) n += attr_count(g->nodes[i].attrs[k].g);
    }
    return n;
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* ModelProto.training_info is field 20, length-delimited: its key is (20 << 3) | 2;
 * ModelProto.functions is field 25. */
#define TRAINING_INFO_KEY ((20u << 3) | 2u)
#define FUNCTIONS_KEY     ((25u << 3) | 2u)

og_status og_onnx_serialize_model(const og_graph *g, const og_allocator *a, void **out,
                                  size_t *out_size)
{
    arena ar = {og_alloc_or_default(a), NULL, 0, 0, false};
    og_status st = OG_OK;
    size_t n_raw = 0;
    Onnx__AttributeProto **raw_list = NULL;
    *out = NULL;
    *out_size = 0;
    raw_list = og_calloc(ar.a, attr_count(g) + 1, sizeof *raw_list);
    if (!raw_list) return og_error(OG_ERR_NOMEM, "out of memory saving the model");

    Onnx__ModelProto *mp = arena_alloc(&ar, sizeof *mp);
    if (!mp) goto nomem;
    onnx__model_proto__init(mp);
    mp->has_ir_version = 1;
    mp->ir_version = g->ir_version;
    mp->producer_name = str(&ar, g->producer_name);
    mp->producer_version = str(&ar, g->producer_version);
    mp->domain = str(&ar, g->model_domain);
    mp->doc_string = str(&ar, g->model_doc);
    if (g->model_version) {
        mp->has_model_version = 1;
        mp->model_version = g->model_version;
    }
    mp->n_opset_import = (size_t)g->n_opsets;
    mp->opset_import = arena_alloc(&ar, (size_t)(g->n_opsets + 1) * sizeof *mp->opset_import);
    if (!mp->opset_import) goto nomem;
    for (int i = 0; i < g->n_opsets; i++) {
        Onnx__OperatorSetIdProto *o = arena_alloc(&ar, sizeof *o);
        if (!o) goto nomem;
        onnx__operator_set_id_proto__init(o);
        o->domain = str(&ar, g->opsets[i].domain);
        o->has_version = 1;
        o->version = g->opsets[i].version;
        mp->opset_import[i] = o;
    }
    mp->n_metadata_props = (size_t)g->n_metadata;
    mp->metadata_props = arena_alloc(&ar, (size_t)(g->n_metadata + 1) * sizeof(void *));
    if (!mp->metadata_props) goto nomem;
    for (int i = 0; i < g->n_metadata; i++) {
        Onnx__StringStringEntryProto *e = arena_alloc(&ar, sizeof *e);
        if (!e) goto nomem;
        onnx__string_string_entry_proto__init(e);
        e->key = str(&ar, g->metadata[i].key);
        e->value = str(&ar, g->metadata[i].value);
        mp->metadata_props[i] = e;
    }
    mp->graph = graph_proto(&ar, g, &raw_list, &n_raw);
    if (!mp->graph || ar.failed) goto nomem;
    size_t size = onnx__model_proto__get_packed_size(mp), total = size;
    /* the TrainingInfoProtos are kept packed: append them as fields of the message */
    for (int i = 0; i < g->n_training_info; i++)
        total += varint_size(TRAINING_INFO_KEY) + varint_size(g->training_info[i].size) +
                 g->training_info[i].size;
    for (int i = 0; i < g->n_functions; i++)
        total += varint_size(FUNCTIONS_KEY) + varint_size(g->functions[i].proto.size) +
                 g->functions[i].proto.size;
    uint8_t *buf = og_malloc(ar.a, total);
    if (!buf) goto nomem;
    onnx__model_proto__pack(mp, buf);
    uint8_t *p = buf + size;
    for (int i = 0; i < g->n_training_info; i++) {
        p = put_varint(p, TRAINING_INFO_KEY);
        p = put_varint(p, g->training_info[i].size);
        memcpy(p, g->training_info[i].data, g->training_info[i].size);
        p += g->training_info[i].size;
    }
    for (int i = 0; i < g->n_functions; i++) {
        p = put_varint(p, FUNCTIONS_KEY);
        p = put_varint(p, g->functions[i].proto.size);
        memcpy(p, g->functions[i].proto.data, g->functions[i].proto.size);
        p += g->functions[i].proto.size;
    }
    *out = buf;
    *out_size = total;
    goto done;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory saving the model");
done:
    pack_release(&ar, raw_list, n_raw);
    return st;
}

static Onnx__StringStringEntryProto **bindings(arena *ar, const og_kv *kv, int n)
{
    Onnx__StringStringEntryProto **list = arena_alloc(ar, (size_t)(n + 1) * sizeof *list);
    for (int i = 0; list && i < n; i++) {
        Onnx__StringStringEntryProto *e = arena_alloc(ar, sizeof *e);
        if (!e) return NULL;
        onnx__string_string_entry_proto__init(e);
        e->key = str(ar, kv[i].key);
        e->value = str(ar, kv[i].value);
        list[i] = e;
    }
    return list;
}

og_status og_onnx_serialize_training_info(const og_graph *algorithm, const og_graph *initialization,
                                          const og_kv *update, int n_update, const og_kv *init,
                                          int n_init, const og_allocator *a, og_blob *out)
{
    arena ar = {og_alloc_or_default(a), NULL, 0, 0, false};
    og_status st = OG_OK;
    size_t n_raw = 0;
    out->data = NULL;
    out->size = 0;
    Onnx__AttributeProto **raw_list =
        og_calloc(ar.a, attr_count(algorithm) + attr_count(initialization) + 1, sizeof *raw_list);
    Onnx__TrainingInfoProto *tip = arena_alloc(&ar, sizeof *tip);
    if (!raw_list || !tip) goto nomem;
    onnx__training_info_proto__init(tip);
    if (!(tip->algorithm = graph_proto(&ar, algorithm, &raw_list, &n_raw))) goto nomem;
    if (initialization &&
        !(tip->initialization = graph_proto(&ar, initialization, &raw_list, &n_raw)))
        goto nomem;
    tip->n_update_binding = (size_t)n_update;
    tip->update_binding = bindings(&ar, update, n_update);
    tip->n_initialization_binding = (size_t)n_init;
    tip->initialization_binding = bindings(&ar, init, n_init);
    if (ar.failed || !tip->update_binding || !tip->initialization_binding) goto nomem;
    out->size = onnx__training_info_proto__get_packed_size(tip);
    out->data = og_malloc(ar.a, out->size + 1);
    if (!out->data) goto nomem;
    onnx__training_info_proto__pack(tip, out->data);
    goto done;
nomem:
    out->size = 0;
    st = og_error(OG_ERR_NOMEM, "out of memory writing a TrainingInfoProto");
done:
    pack_release(&ar, raw_list, n_raw);
    return st;
}

og_status og_onnx_pack_graph_attr(const og_graph *body, const char *name, og_attr *out)
{
    arena ar = {og_alloc_or_default(body->alloc), NULL, 0, 0, false};
    og_status st = OG_OK;
    size_t n_raw = 0;
    memset(out, 0, sizeof *out);
    Onnx__AttributeProto **raw_list = og_calloc(ar.a, attr_count(body) + 1, sizeof *raw_list);
    Onnx__AttributeProto *ap = arena_alloc(&ar, sizeof *ap);
    if (!raw_list || !ap) goto nomem;
    onnx__attribute_proto__init(ap);
    ap->name = str(&ar, name);
    ap->has_type = 1;
    ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (!(ap->g = graph_proto(&ar, body, &raw_list, &n_raw)) || ar.failed) goto nomem;
    out->raw_len = onnx__attribute_proto__get_packed_size(ap);
    out->raw = og_malloc(ar.a, out->raw_len + 1);
    if (!out->raw) goto nomem;
    onnx__attribute_proto__pack(ap, out->raw);
    out->type = OG_ATTR_GRAPH;
    goto done;
nomem:
    out->raw_len = 0;
    st = og_error(OG_ERR_NOMEM, "out of memory packing a graph attribute");
done:
    pack_release(&ar, raw_list, n_raw);
    return st;
}

og_status og_onnx_pack_function(const og_graph *body, const char *domain, const char *name,
                                const char *overload, const char *const *attrs, int n_attrs,
                                og_blob *out)
{
    arena ar = {og_alloc_or_default(body->alloc), NULL, 0, 0, false};
    og_status st = OG_OK;
    size_t n_raw = 0;
    out->data = NULL;
    out->size = 0;
    Onnx__AttributeProto **raw_list = og_calloc(ar.a, attr_count(body) + 1, sizeof *raw_list);
    Onnx__FunctionProto *fp = arena_alloc(&ar, sizeof *fp);
    if (!raw_list || !fp) goto nomem;
    onnx__function_proto__init(fp);
    fp->name = str(&ar, name);
    fp->domain = str(&ar, domain);
    fp->n_input = (size_t)body->n_inputs;
    fp->input = arena_alloc(&ar, (size_t)(body->n_inputs + 1) * sizeof(char *));
    fp->n_output = (size_t)body->n_outputs;
    fp->output = arena_alloc(&ar, (size_t)(body->n_outputs + 1) * sizeof(char *));
    fp->n_attribute = (size_t)n_attrs;
    fp->attribute = arena_alloc(&ar, (size_t)(n_attrs + 1) * sizeof(char *));
    fp->n_opset_import = (size_t)body->n_opsets;
    fp->opset_import = arena_alloc(&ar, (size_t)(body->n_opsets + 1) * sizeof(void *));
    if (!fp->input || !fp->output || !fp->attribute || !fp->opset_import) goto nomem;
    for (int i = 0; i < body->n_inputs; i++)
        fp->input[i] = str(&ar, body->values[body->inputs[i]].name);
    for (int i = 0; i < body->n_outputs; i++)
        fp->output[i] = str(&ar, body->values[body->outputs[i]].name);
    for (int i = 0; i < n_attrs; i++) fp->attribute[i] = str(&ar, attrs[i]);
    for (int i = 0; i < body->n_opsets; i++) {
        Onnx__OperatorSetIdProto *o = arena_alloc(&ar, sizeof *o);
        if (!o) goto nomem;
        onnx__operator_set_id_proto__init(o);
        o->domain = str(&ar, body->opsets[i].domain);
        o->has_version = 1;
        o->version = body->opsets[i].version;
        fp->opset_import[i] = o;
    }
    fp->n_node = (size_t)body->n_nodes;
    fp->node = node_protos(&ar, body, &raw_list, &n_raw);
    if (!fp->node || ar.failed) goto nomem;
    if (overload && overload[0] && !add_string_field(&ar, &fp->base, 13, overload)) goto nomem;
    out->size = onnx__function_proto__get_packed_size(fp);
    out->data = og_malloc(ar.a, out->size + 1);
    if (!out->data) goto nomem;
    onnx__function_proto__pack(fp, out->data);
    goto done;
nomem:
    out->size = 0;
    st = og_error(OG_ERR_NOMEM, "out of memory packing a function");
done:
    pack_release(&ar, raw_list, n_raw);
    return st;
}

/* Replace the matching initializers of gp in place (the old pointers go to saved[]). */
static int swap_initializers(arena *ar, Onnx__GraphProto *gp, const char *const *names,
                             const og_tensor *const *values, int n, Onnx__TensorProto **saved)
{
    int swapped = 0;
    for (size_t i = 0; gp && i < gp->n_initializer; i++) {
        saved[i] = NULL;
        const char *name = gp->initializer[i]->name;
        for (int k = 0; name && k < n; k++) {
            if (strcmp(names[k], name) != 0) continue;
            Onnx__TensorProto *tp = tensor_proto(ar, values[k], name);
            /* a failed allocation inside leaves NULL fields in tp: packing it would crash */
            if (!tp || ar->failed) return -1;
            tp->doc_string = gp->initializer[i]->doc_string;
            saved[i] = gp->initializer[i];
            gp->initializer[i] = tp;
            swapped++;
            break;
        }
    }
    return swapped;
}

static void restore_initializers(Onnx__GraphProto *gp, Onnx__TensorProto **saved)
{
    for (size_t i = 0; gp && i < gp->n_initializer; i++)
        if (saved[i]) gp->initializer[i] = saved[i];
}

/* protobuf-c reports a failed allocation as a decoding failure: remember it. */
typedef struct pc_track {
    const og_allocator *a;
    bool failed;
} pc_track;

static void *track_alloc(void *user, size_t size)
{
    pc_track *t = user;
    void *p = og_malloc(t->a, size);
    if (!p) t->failed = true;
    return p;
}

static void track_free(void *user, void *p)
{
    pc_track *t = user;
    og_free(t->a, p);
}

og_status og_onnx_training_info_set_initializers(og_graph *g, const char *const *names,
                                                 const og_tensor *const *values, int n)
{
    const og_allocator *a = g->alloc;
    pc_track track = {a, false};
    ProtobufCAllocator pa = {track_alloc, track_free, &track};
    og_status st = OG_OK;
    for (int k = 0; k < g->n_training_info && !st; k++) {
        arena ar = {a, NULL, 0, 0, false};
        Onnx__TensorProto **saved[2] = {NULL, NULL};
        Onnx__TrainingInfoProto *tip = onnx__training_info_proto__unpack(
            &pa, g->training_info[k].size, g->training_info[k].data);
        if (!tip && track.failed) return og_error(OG_ERR_NOMEM, "out of memory");
        if (!tip) return og_error(OG_ERR_PARSE, "training_info %d cannot be decoded", k);
        Onnx__GraphProto *gps[2] = {tip->initialization, tip->algorithm};
        int swapped = 0;
        for (int j = 0; j < 2 && !st; j++) {
            if (!gps[j]) continue;
            saved[j] = og_calloc(a, gps[j]->n_initializer + 1, sizeof *saved[j]);
            int s = saved[j] ? swap_initializers(&ar, gps[j], names, values, n, saved[j]) : -1;
            if (s < 0)
                st = og_error(OG_ERR_NOMEM, "out of memory");
            else
                swapped += s;
        }
        /* tensor_proto hands back a tensor whose data or name failed to allocate (the arena
         * remembers): packing it would read from NULL */
        if (!st && ar.failed) st = og_error(OG_ERR_NOMEM, "out of memory");
        if (!st && swapped) {
            size_t size = onnx__training_info_proto__get_packed_size(tip);
            void *data = og_malloc(a, size + 1);
            if (data) {
                onnx__training_info_proto__pack(tip, data);
                og_free(a, g->training_info[k].data);
                g->training_info[k].data = data;
                g->training_info[k].size = size;
            } else {
                st = og_error(OG_ERR_NOMEM, "out of memory");
            }
        }
        for (int j = 0; j < 2; j++) {
            if (saved[j]) restore_initializers(gps[j], saved[j]);
            og_free(a, saved[j]);
        }
        onnx__training_info_proto__free_unpacked(tip, &pa);
        arena_free(&ar);
    }
    return st;
}
