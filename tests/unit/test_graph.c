/* src/ir/graph.c: the name index of og_graph_find_value (kept by og_graph_add_value, clean
 * when an allocation fails) and og_graph_clone (a clone saves to the same bytes as its
 * source, is left unresolved, and fails cleanly with OG_ERR_NOMEM at every allocation). */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "onnx/onnx_io.h"
#include "ops/op.h"
#include "test.h"

/* ---- the name index ---------------------------------------------------------------- */

static void test_index(void)
{
    og_graph *g = og_graph_new(NULL);
    CHECK(g != NULL);
    if (!g) return;
    CHECK(og_graph_find_value(g, "v0") == -1); /* no table yet */
    enum { N = 5000 };
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        CHECK(og_graph_add_value(g, name) == i);
    }
    bool all = true;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "v%d", i);
        all = all && og_graph_find_value(g, name) == i;
    }
    CHECK(all);
    CHECK(og_graph_find_value(g, "v5000") == -1);
    CHECK(og_graph_find_value(g, "") == -1);
    CHECK(g->value_index_cap >= 2 * (size_t)N);
    /* a name added twice: the first value, as the linear search gave */
    CHECK(og_graph_add_value(g, "v7") == N);
    CHECK(og_graph_find_value(g, "v7") == 7);
    CHECK(og_graph_add_value(g, "") == N + 1);
    CHECK(og_graph_find_value(g, "") == N + 1);
    og_graph_free(g);
}

/* Every allocation of og_graph_add_value fails once: -1, the graph as it was. */
static void test_index_nomem(void)
{
    int failures = 0;
    for (long n = 0; n < 400; n++) {
        og_test_counting c = {0, n, 0};
        og_allocator a = {og_test_malloc, og_test_free, &c};
        og_graph *g = og_graph_new(&a);
        char name[32];
        int added = 0;
        for (int i = 0; g && i < 100; i++) {
            snprintf(name, sizeof name, "value_%d", i);
            int v = og_graph_add_value(g, name);
            if (v < 0) {
                failures++;
                CHECK(g->n_values == i);
                break;
            }
            CHECK(v == i);
            added++;
        }
        for (int i = 0; g && i < added; i++) {
            snprintf(name, sizeof name, "value_%d", i);
            CHECK(og_graph_find_value(g, name) == i);
        }
        og_graph_free(g);
        CHECK(c.live == 0);
        if (g && added == 100) break;
    }
    CHECK(failures > 5);
}

/* ---- clones ------------------------------------------------------------------------ */

/* The saved bytes of g (allocated with the default allocator). */
static bool save(const og_graph *g, void **data, size_t *size)
{
    *data = NULL;
    return og_onnx_serialize_model(g, NULL, data, size) == OG_OK;
}

static bool same_bytes(const og_graph *a, const og_graph *b)
{
    void *da = NULL, *db = NULL;
    size_t na = 0, nb = 0;
    bool ok = save(a, &da, &na) && save(b, &db, &nb) && na == nb && memcmp(da, db, na) == 0;
    og_free(NULL, da);
    og_free(NULL, db);
    return ok;
}

/* What the clone must be besides its bytes: the same indices, the index rebuilt, nothing
 * of the source's resolution. */
static void check_clone_state(const og_graph *src, const og_graph *c)
{
    CHECK(c->n_values == src->n_values && c->n_nodes == src->n_nodes);
    bool ok = true;
    for (int v = 0; v < c->n_values && v < src->n_values; v++) {
        const og_value *s = &src->values[v], *d = &c->values[v];
        ok = ok && og_graph_find_value(c, d->name) == og_graph_find_value(src, s->name);
        ok = ok && d->name != s->name && d->producer == s->producer &&
             d->n_consumers == s->n_consumers && d->dtype == s->dtype && d->rank == s->rank;
        ok = ok && (s->init ? d->init && d->init != s->init && d->known == d->init &&
                                  d->init->readonly == s->init->readonly
                            : !d->init && !d->known);
    }
    CHECK(ok);
    ok = true;
    for (int i = 0; i < c->n_nodes && i < src->n_nodes; i++) {
        const og_node *d = &c->nodes[i];
        ok = ok && !d->op && !d->params && !d->parsed && d->since_version == 0;
        ok = ok && strcmp(d->name, src->nodes[i].name) == 0 && d->n_attrs == src->nodes[i].n_attrs;
    }
    CHECK(ok);
    CHECK(c->n_training_info == src->n_training_info);
    CHECK(c->n_symbols == src->n_symbols);
}

/* Load, copy with og_model_copy_graph: same bytes, unresolved state; the copy resolves
 * and still saves to the same bytes. */
static void test_clone_model(const char *path)
{
    og_model *m = NULL, *c = NULL;
    og_status st = og_model_load_file_any_op(path, NULL, &m);
    CHECK_OK(st);
    if (st) {
        fprintf(stderr, "%s\n", path);
        return;
    }
    CHECK_OK(og_model_copy_graph(m, NULL, &c));
    if (c) {
        check_clone_state(m->graph, c->graph);
        CHECK(same_bytes(m->graph, c->graph));
        CHECK_OK(og_graph_finalize(c->graph));
        CHECK_OK(og_graph_resolve(c->graph, false));
        CHECK(same_bytes(m->graph, c->graph));
        int params = 0, parsed = 0;
        for (int i = 0; i < m->graph->n_nodes; i++) params += m->graph->nodes[i].params != NULL;
        for (int i = 0; i < c->graph->n_nodes; i++) parsed += c->graph->nodes[i].params != NULL;
        CHECK(params == parsed);
    }
    og_model_free(c);
    og_model_free(m);
}

/* A training graph has values no node refers to after pruning: copied too. */
static void test_clone_training_graph(void)
{
    og_model *m = NULL, *c = NULL;
    og_grad *g = NULL;
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &m));
    if (m) CHECK_OK(og_grad_create(m, NULL, &g));
    const og_model *t = og_grad_training_model(g);
    if (t) CHECK_OK(og_model_copy_graph(t, NULL, &c));
    if (c) {
        check_clone_state(t->graph, c->graph);
        CHECK(same_bytes(t->graph, c->graph));
    }
    og_model_free(c);
    og_grad_free(g);
    og_model_free(m);
}

static void add_attr(og_graph *g, int node, og_attr *at)
{
    CHECK_OK(og_node_add_attr(g, node, at));
}

/* A graph with every kind of attribute and of model-level field, built by hand. */
static og_graph *every_field(void)
{
    og_graph *g = og_graph_new(NULL);
    if (!g) return NULL;
    g->ir_version = 8;
    g->model_version = 5;
    g->producer_name = og_strdup(g->alloc, "test_graph");
    g->model_doc = og_strdup(g->alloc, "every field");
    g->name = og_strdup(g->alloc, "g");
    g->doc = og_strdup(g->alloc, "graph doc");
    g->opsets = og_calloc(g->alloc, 2, sizeof *g->opsets);
    g->n_opsets = 2;
    g->opsets[0].domain = og_strdup(g->alloc, "");
    g->opsets[0].version = 17;
    g->opsets[1].domain = og_strdup(g->alloc, "com.example");
    g->opsets[1].version = 1;
    CHECK_OK(og_graph_set_metadata(g, "author", "onnxgrad"));
    /* a packed TrainingInfoProto: initialization = GraphProto{name: "i"} */
    static const unsigned char ti[] = {0x0a, 0x03, 0x12, 0x01, 'i'};
    g->training_info = og_calloc(g->alloc, 1, sizeof *g->training_info);
    g->training_info[0].data = og_malloc(g->alloc, sizeof ti);
    memcpy(g->training_info[0].data, ti, sizeof ti);
    g->training_info[0].size = sizeof ti;
    g->n_training_info = 1;
    int x = og_graph_add_value(g, "x"), w = og_graph_add_value(g, "w");
    int y = og_graph_add_value(g, "y");
    og_graph_add_value(g, "orphan");
    int batch = og_graph_symbol(g, "batch");
    g->values[x].kind = OG_VALUE_INPUT;
    g->values[x].is_graph_input = true;
    g->values[x].has_value_info = true;
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = 2;
    g->values[x].dims[0] = og_dim_symbol(batch);
    g->values[x].dims[1] = 3;
    g->values[x].doc = og_strdup(g->alloc, "the input");
    int64_t three = 3;
    float wd[3] = {1, -2, 0.5f};
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 1, &three, wd, sizeof wd, g->alloc, &g->values[w].init));
    g->values[w].init->readonly = true;
    g->values[w].kind = OG_VALUE_INITIALIZER;
    g->values[w].dtype = OG_FLOAT;
    g->values[w].rank = 1;
    g->values[w].dims[0] = 3;
    g->values[y].is_graph_output = true;
    g->values[y].has_value_info = true;
    g->inputs = og_malloc(g->alloc, sizeof *g->inputs);
    g->outputs = og_malloc(g->alloc, sizeof *g->outputs);
    g->inits = og_malloc(g->alloc, sizeof *g->inits);
    g->inputs[g->n_inputs++] = x;
    g->outputs[g->n_outputs++] = y;
    g->inits[g->n_inits++] = w;
    og_node *n = og_graph_add_node(g, "Custom", "com.example", "custom", 3, 2);
    if (!n) return g;
    n->in[0] = x;
    n->in[2] = w; /* in[1] omitted */
    n->out[0] = y;
    n->doc = og_strdup(g->alloc, "node doc");
    og_tensor *t = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 1, &three, wd, sizeof wd, NULL, &t));
    int64_t ints[] = {1, -2, 3};
    float floats[] = {0.25f, 4};
    char *strings[] = {"a", "", "bc"};
    og_tensor *tensors[] = {t, t};
    /* AttributeProto{name: "body", g: GraphProto{name: "b"}, type: GRAPH} */
    unsigned char raw[] = {0x0a, 0x04, 'b',  'o', 'd',  'y',  0x32,
                           0x03, 0x12, 0x01, 'b', 0xa0, 0x01, 0x05};
    og_attr at[] = {
        {.name = "f", .type = OG_ATTR_FLOAT, .f = 1.5f},
        {.name = "i", .type = OG_ATTR_INT, .i = -7, .doc = "attribute doc"},
        {.name = "s", .type = OG_ATTR_STRING, .s = "x\0y", .s_len = 3},
        {.name = "t", .type = OG_ATTR_TENSOR, .t = t},
        {.name = "floats", .type = OG_ATTR_FLOATS, .n = 2, .floats = floats},
        {.name = "ints", .type = OG_ATTR_INTS, .n = 3, .ints = ints},
        {.name = "empty", .type = OG_ATTR_INTS, .n = 0, .ints = ints},
        {.name = "strings", .type = OG_ATTR_STRINGS, .n = 3, .strings = strings},
        {.name = "tensors", .type = OG_ATTR_TENSORS, .n = 2, .tensors = tensors},
        {.name = "body", .type = OG_ATTR_GRAPH, .raw = raw, .raw_len = sizeof raw},
    };
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) add_attr(g, 0, &at[k]);
    og_tensor_free(t);
    n = og_graph_add_node(g, "Identity", "", "", 1, 1);
    if (n) n->in[0] = y; /* an output nothing reads: -1 */
    return g;
}

/* Every attribute kind, copied deeply: the clone's arrays are its own and hold the same. */
static void check_attrs(const og_node *s, const og_node *d)
{
    CHECK(d->n_attrs == s->n_attrs);
    for (int k = 0; k < s->n_attrs && k < d->n_attrs; k++) {
        const og_attr *a = &s->attrs[k], *b = &d->attrs[k];
        CHECK(strcmp(a->name, b->name) == 0 && a->type == b->type && a->n == b->n);
        CHECK((a->doc == NULL) == (b->doc == NULL));
        if (a->s) CHECK(b->s != a->s && b->s_len == a->s_len && !memcmp(a->s, b->s, a->s_len));
        if (a->raw)
            CHECK(b->raw != a->raw && b->raw_len == a->raw_len &&
                  !memcmp(a->raw, b->raw, a->raw_len));
        if (a->t) CHECK(b->t && b->t != a->t && !memcmp(a->t->data, b->t->data, 12));
        for (int j = 0; a->strings && j < a->n; j++)
            CHECK(b->strings[j] != a->strings[j] && strcmp(a->strings[j], b->strings[j]) == 0);
        for (int j = 0; a->tensors && j < a->n; j++)
            CHECK(b->tensors[j] != a->tensors[j] && b->tensors[j]->numel == a->tensors[j]->numel);
    }
}

static void test_clone_every_field(void)
{
    og_graph *g = every_field(), *c = NULL;
    CHECK(g != NULL);
    if (!g) return;
    CHECK_OK(og_graph_clone(g, NULL, &c));
    if (c) {
        check_clone_state(g, c);
        check_attrs(&g->nodes[0], &c->nodes[0]);
        CHECK(same_bytes(g, c));
        CHECK(c->training_info[0].data != g->training_info[0].data);
        CHECK(strcmp(og_graph_dim_name(c, c->values[0].dims[0]), "batch") == 0);
        CHECK(strcmp(og_graph_metadata(c, "author"), "onnxgrad") == 0);
        CHECK(c->values[0].doc && strcmp(c->values[0].doc, "the input") == 0);
        CHECK(c->values[1].doc == NULL && c->producer_version == NULL);
        /* the clone grows on its own: a new value is indexed after the copied ones */
        CHECK(og_graph_add_value(c, "z") == g->n_values);
        CHECK(og_graph_find_value(c, "z") == g->n_values && og_graph_find_value(g, "z") == -1);
    }
    og_graph_free(c);
    og_graph_free(g);
}

/* og_graph_clone and og_model_copy_graph with the n-th allocation failing, for every n:
 * OG_ERR_NOMEM, *out NULL and nothing left allocated, until n is enough to succeed. */
static void test_clone_nomem(const og_graph *g, const og_model *m, const char *what)
{
    int failures = 0, other = 0;
    long n;
    for (n = 0; n < 100000; n++) {
        og_test_counting c = {0, n, 0};
        og_allocator a = {og_test_malloc, og_test_free, &c};
        og_graph *cg = NULL;
        og_model *cm = NULL;
        og_status st = m ? og_model_copy_graph(m, &a, &cm) : og_graph_clone(g, &a, &cg);
        if (st == OG_OK) {
            CHECK(same_bytes(g, m ? cm->graph : cg));
            og_model_free(cm);
            og_graph_free(cg);
        } else {
            CHECK(!cm && !cg);
        }
        CHECK(c.live == 0);
        if (c.live) fprintf(stderr, "%s: fail_at=%ld leaked %ld blocks\n", what, n, c.live);
        if (st == OG_OK) break;
        if (st == OG_ERR_NOMEM)
            failures++;
        else
            other++;
    }
    printf("%s: cloned once %ld allocations were allowed; %d clean OG_ERR_NOMEM failures\n", what,
           n, failures);
    CHECK(n < 100000);
    CHECK(failures > 20);
    CHECK(other == 0);
}

/* og_graph_symbol's index: many symbols (static inference adds one per unknown dim) found
 * again by name with their ids, in the graph and in a clone, which adds its own after. */
static void test_symbols(void)
{
    og_graph *g = og_graph_new(NULL), *c = NULL;
    char name[32];
    enum { N = 5000 };
    for (int i = 0; g && i < N; i++) {
        snprintf(name, sizeof name, "v%d.dim%d", i / 3, i % 3);
        CHECK(og_graph_symbol(g, name) == i);
    }
    CHECK(g && g->n_symbols == N);
    for (int i = 0; g && i < N; i += 7) {
        snprintf(name, sizeof name, "v%d.dim%d", i / 3, i % 3);
        CHECKF(og_graph_symbol(g, name) == i, "'%s' is not symbol %d again", name, i);
    }
    if (g) CHECK_OK(og_graph_clone(g, NULL, &c));
    for (int i = 0; c && i < N; i += 11) {
        snprintf(name, sizeof name, "v%d.dim%d", i / 3, i % 3);
        CHECKF(og_graph_symbol(c, name) == i, "clone: '%s' is not symbol %d", name, i);
    }
    CHECK(!c || (og_graph_symbol(c, "new") == N && og_graph_symbol(c, "new") == N));
    CHECK(!c || strcmp(og_graph_dim_name(c, og_dim_symbol(N)), "new") == 0);
    og_graph_free(c);
    og_graph_free(g);
}

int main(void)
{
    test_index();
    test_symbols();
    test_index_nomem();
    const char *models[] = {"tests/data/roundtrip.onnx", "models/mlp.onnx",
                            "tests/data/train/linreg_momentum_ti.onnx",
                            "tests/data/train/digits_mlp.onnx", "tests/data/external/model.onnx"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) test_clone_model(models[i]);
    test_clone_training_graph();
    test_clone_every_field();
    og_graph *g = every_field();
    if (g) test_clone_nomem(g, NULL, "every field");
    og_graph_free(g);
    og_model *m = NULL;
    CHECK_OK(og_model_load_file_any_op("tests/data/roundtrip.onnx", NULL, &m));
    if (m) test_clone_nomem(m->graph, m, "roundtrip.onnx");
    og_model_free(m);
    TEST_DONE();
}
