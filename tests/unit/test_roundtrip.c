/* load -> save -> load keeps the graph, initializers, value infos, metadata and opset
 * imports; saving the reloaded model gives the same bytes again. */
#define _XOPEN_SOURCE 700
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "test.h"

static void compare_graphs(const og_graph *a, const og_graph *b)
{
    CHECK(a->ir_version == b->ir_version);
    CHECK(a->n_opsets == b->n_opsets);
    for (int i = 0; i < a->n_opsets && i < b->n_opsets; i++) {
        CHECK(strcmp(a->opsets[i].domain, b->opsets[i].domain) == 0);
        CHECK(a->opsets[i].version == b->opsets[i].version);
    }
    CHECK(a->n_metadata == b->n_metadata);
    for (int i = 0; i < a->n_metadata && i < b->n_metadata; i++) {
        CHECK(strcmp(a->metadata[i].key, b->metadata[i].key) == 0);
        CHECK(strcmp(a->metadata[i].value, b->metadata[i].value) == 0);
    }
    CHECK(strcmp(a->producer_name, b->producer_name) == 0);
    CHECK(a->model_version == b->model_version);
    CHECK(strcmp(a->doc, b->doc) == 0);
    CHECK(a->n_nodes == b->n_nodes);
    for (int i = 0; i < a->n_nodes && i < b->n_nodes; i++) {
        CHECK(strcmp(a->nodes[i].name, b->nodes[i].name) == 0);
        CHECK(strcmp(a->nodes[i].op_type, b->nodes[i].op_type) == 0);
        CHECK(a->nodes[i].n_attrs == b->nodes[i].n_attrs);
    }
    CHECK(a->n_inits == b->n_inits);
    for (int i = 0; i < a->n_inits && i < b->n_inits; i++) {
        const og_value *va = &a->values[a->inits[i]], *vb = &b->values[b->inits[i]];
        CHECK(strcmp(va->name, vb->name) == 0);
        CHECK(og_tensor_nbytes(va->init) == og_tensor_nbytes(vb->init));
        CHECK(memcmp(va->init->data, vb->init->data, og_tensor_nbytes(va->init)) == 0);
    }
    CHECK(a->n_inputs == b->n_inputs && a->n_outputs == b->n_outputs);
    for (int i = 0; i < a->n_outputs && i < b->n_outputs; i++) {
        const og_value *va = &a->values[a->outputs[i]], *vb = &b->values[b->outputs[i]];
        CHECK(strcmp(va->name, vb->name) == 0);
        CHECK(va->rank == vb->rank && va->dtype == vb->dtype);
    }
    /* value_info declarations survive */
    int vi_a = 0, vi_b = 0;
    for (int v = 0; v < a->n_values; v++) vi_a += a->values[v].has_value_info;
    for (int v = 0; v < b->n_values; v++) vi_b += b->values[v].has_value_info;
    CHECK(vi_a == vi_b);
    /* symbolic dims keep their names */
    int x = og_graph_find_value(b, "x");
    CHECK(x >= 0);
    if (x >= 0) CHECK(strcmp(og_graph_dim_name(b, b->values[x].dims[0]), "batch") == 0);
}

int main(void)
{
    og_model *m1 = NULL, *m2 = NULL, *m3 = NULL;
    void *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    CHECK_OK(og_model_load_file_any_op("tests/data/roundtrip.onnx", NULL, &m1));
    if (!m1) TEST_DONE();
    CHECK_OK(og_model_save_buffer(m1, &b1, &n1));
    CHECK_OK(og_model_load_buffer(b1, n1, NULL, &m3));
    char path[64];
    snprintf(path, sizeof path, "/tmp/og_roundtrip_%d.onnx", (int)getpid());
    CHECK_OK(og_model_save_file(m1, path));
    CHECK_OK(og_model_load_file(path, NULL, &m2));
    if (m2) {
        compare_graphs(m1->graph, m2->graph);
        CHECK_OK(og_model_save_buffer(m2, &b2, &n2));
        CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
    }
    remove(path);
    og_model_buffer_free(m1, b1);
    og_model_buffer_free(m2, b2);
    og_model_free(m1);
    og_model_free(m2);
    og_model_free(m3);
    TEST_DONE();
}
