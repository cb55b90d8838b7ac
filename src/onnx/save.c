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
    size_t nbytes = og_tensor_nbytes(t);
    tp->has_raw_data = 1;
    tp->raw_data.len = nbytes;
    tp->raw_data.data = arena_alloc(ar, nbytes);
    if (tp->raw_data.data && nbytes) memcpy(tp->raw_data.data, t->data, nbytes);
    return tp;
}

static Onnx__ValueInfoProto *value_info(arena *ar, const og_graph *g, const og_value *v)
{
    Onnx__ValueInfoProto *vi = arena_alloc(ar, sizeof *vi);
    if (!vi) return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = str(ar, v->name);
    vi->doc_string = v->doc ? str(ar, v->doc) : NULL;
    if (v->dtype == OG_UNDEFINED && v->rank < 0) return vi;
    Onnx__TypeProto *tp = arena_alloc(ar, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = arena_alloc(ar, sizeof *tt);
    if (!tp || !tt) return vi;
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    if (v->dtype != OG_UNDEFINED) {
        tt->has_elem_type = 1;
        tt->elem_type = (int32_t)v->dtype;
    }
    if (v->rank >= 0) {
        Onnx__TensorShapeProto *sp = arena_alloc(ar, sizeof *sp);
        if (!sp) return vi;
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)v->rank;
        sp->dim = arena_alloc(ar, (size_t)(v->rank + 1) * sizeof *sp->dim);
        if (!sp->dim) return vi;
        for (int d = 0; d < v->rank; d++) {
            Onnx__TensorShapeProto__Dimension *dim = arena_alloc(ar, sizeof *dim);
            if (!dim) return vi;
            onnx__tensor_shape_proto__dimension__init(dim);
            const char *sym = og_graph_dim_name(g, v->dims[d]);
            if (v->dims[d] >= 0) {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dim->dim_value = v->dims[d];
            } else if (sym) {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dim->dim_param = str(ar, sym);
            }
            sp->dim[d] = dim;
        }
        tt->shape = sp;
    }
    return vi;
}

static void *pc_alloc(void *user, size_t size) { return og_malloc(user, size); }
static void pc_free(void *user, void *p) { og_free(user, p); }

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

og_status og_onnx_serialize_model(const og_graph *g, const og_allocator *a, void **out,
                                  size_t *out_size)
{
    arena ar = {og_alloc_or_default(a), NULL, 0, 0, false};
    og_status st = OG_OK;
    size_t n_raw = 0, total_attrs = 0;
    Onnx__AttributeProto **raw_list = NULL;
    *out = NULL;
    *out_size = 0;
    for (int i = 0; i < g->n_nodes; i++) total_attrs += (size_t)g->nodes[i].n_attrs;
    raw_list = og_calloc(ar.a, total_attrs + 1, sizeof *raw_list);
    if (!raw_list) return og_error(OG_ERR_NOMEM, "out of memory saving the model");

    Onnx__ModelProto *mp = arena_alloc(&ar, sizeof *mp);
    Onnx__GraphProto *gp = arena_alloc(&ar, sizeof *gp);
    if (!mp || !gp) goto nomem;
    onnx__model_proto__init(mp);
    onnx__graph_proto__init(gp);
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
    mp->graph = gp;
    gp->name = str(&ar, g->name);
    gp->doc_string = str(&ar, g->doc);

    gp->n_initializer = (size_t)g->n_inits;
    gp->initializer = arena_alloc(&ar, (size_t)(g->n_inits + 1) * sizeof(void *));
    if (!gp->initializer) goto nomem;
    for (int i = 0; i < g->n_inits; i++) {
        const og_value *v = &g->values[g->inits[i]];
        gp->initializer[i] = tensor_proto(&ar, v->init, v->name);
        if (!gp->initializer[i]) goto nomem;
        if (v->doc) gp->initializer[i]->doc_string = str(&ar, v->doc);
    }
    gp->n_input = (size_t)g->n_inputs;
    gp->input = arena_alloc(&ar, (size_t)(g->n_inputs + 1) * sizeof(void *));
    gp->n_output = (size_t)g->n_outputs;
    gp->output = arena_alloc(&ar, (size_t)(g->n_outputs + 1) * sizeof(void *));
    if (!gp->input || !gp->output) goto nomem;
    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[i] = value_info(&ar, g, &g->values[g->inputs[i]]))) goto nomem;
    for (int i = 0; i < g->n_outputs; i++)
        if (!(gp->output[i] = value_info(&ar, g, &g->values[g->outputs[i]]))) goto nomem;
    gp->value_info = arena_alloc(&ar, (size_t)(g->n_values + 1) * sizeof(void *));
    if (!gp->value_info) goto nomem;
    for (int v = 0; v < g->n_values; v++) {
        const og_value *val = &g->values[v];
        if (!val->has_value_info || val->is_graph_input || val->is_graph_output ||
            val->kind != OG_VALUE_INTERMEDIATE)
            continue;
        if (!(gp->value_info[gp->n_value_info++] = value_info(&ar, g, val))) goto nomem;
    }
    gp->n_node = (size_t)g->n_nodes;
    gp->node = arena_alloc(&ar, (size_t)(g->n_nodes + 1) * sizeof(void *));
    if (!gp->node) goto nomem;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        Onnx__NodeProto *np = arena_alloc(&ar, sizeof *np);
        if (!np) goto nomem;
        onnx__node_proto__init(np);
        np->name = str(&ar, n->name);
        np->op_type = str(&ar, n->op_type);
        np->domain = str(&ar, n->domain);
        np->doc_string = n->doc ? str(&ar, n->doc) : NULL;
        np->n_input = (size_t)n->n_in;
        np->input = arena_alloc(&ar, (size_t)(n->n_in + 1) * sizeof(char *));
        np->n_output = (size_t)n->n_out;
        np->output = arena_alloc(&ar, (size_t)(n->n_out + 1) * sizeof(char *));
        np->n_attribute = (size_t)n->n_attrs;
        np->attribute = arena_alloc(&ar, (size_t)(n->n_attrs + 1) * sizeof(void *));
        if (!np->input || !np->output || !np->attribute) goto nomem;
        for (int j = 0; j < n->n_in; j++)
            np->input[j] = str(&ar, n->in[j] >= 0 ? g->values[n->in[j]].name : "");
        for (int j = 0; j < n->n_out; j++)
            np->output[j] = str(&ar, n->out[j] >= 0 ? g->values[n->out[j]].name : "");
        for (int j = 0; j < n->n_attrs; j++)
            if (!(np->attribute[j] = attr_proto(&ar, &n->attrs[j], &raw_list, &n_raw))) goto nomem;
        gp->node[i] = np;
    }
    if (ar.failed) goto nomem;
    size_t size = onnx__model_proto__get_packed_size(mp);
    uint8_t *buf = og_malloc(ar.a, size);
    if (!buf) goto nomem;
    onnx__model_proto__pack(mp, buf);
    *out = buf;
    *out_size = size;
    goto done;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory saving the model");
done:;
    ProtobufCAllocator pa = {pc_alloc, pc_free, (void *)ar.a};
    for (size_t i = 0; i < n_raw; i++) onnx__attribute_proto__free_unpacked(raw_list[i], &pa);
    og_free(ar.a, raw_list);
    arena_free(&ar);
    return st;
}
