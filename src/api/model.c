/* model.c: og_model, the public face of a loaded, resolved graph. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "grad/grad.h"
#include "onnx/onnx_io.h"

static og_status model_from_bytes(const void *data, size_t size, const char *base_dir,
                                  const og_load_options *opts, bool strict, og_model **out)
{
    const og_allocator *a = og_alloc_or_default(opts ? opts->allocator : NULL);
    og_load_options lim;
    og_status st = og_onnx_limits(opts, &lim);
    if (st) return st;
    og_model *m = og_malloc(a, sizeof *m);
    if (!m) return og_error(OG_ERR_NOMEM, "out of memory");
    /* Everything of the model allocates through its own copy of the allocator. */
    m->alloc = *a;
    m->user_alloc = a;
    m->graph = NULL;
    st = og_onnx_parse_model(data, size, base_dir, &lim, &m->alloc, &m->graph);
    if (st) goto fail;
    st = og_graph_finalize(m->graph);
    if (st) goto fail;
    /* ONNX's own Gradient op (ai.onnx.preview.training) is expanded into ordinary nodes */
    for (int i = 0; i < m->graph->n_nodes; i++) {
        const og_node *n = &m->graph->nodes[i];
        if (strcmp(n->op_type, "Gradient") != 0 ||
            strcmp(n->domain, "ai.onnx.preview.training") != 0)
            continue;
        st = og_graph_resolve(m->graph, false);
        if (!st) st = og_grad_expand_gradient_ops(m->graph);
        if (st) goto fail;
        break;
    }
    st = og_graph_resolve(m->graph, strict);
    if (st) goto fail;
    *out = m;
    return OG_OK;
fail:
    og_model_free(m);
    return st;
}

og_status og_model_copy_graph(const og_model *m, const og_allocator *a, og_model **out)
{
    *out = NULL;
    a = og_alloc_or_default(a);
    og_model *c = og_malloc(a, sizeof *c);
    if (!c) return og_error(OG_ERR_NOMEM, "out of memory");
    c->alloc = *a;
    c->user_alloc = a;
    c->graph = NULL;
    og_status st = og_graph_clone(m->graph, &c->alloc, &c->graph);
    if (st) goto fail;
    *out = c;
    return OG_OK;
fail:
    og_model_free(c);
    return st;
}

/* The folder of `path` ("." if none), allocated with a. */
static char *dir_of(const og_allocator *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return og_strdup(a, ".");
    size_t n = (size_t)(slash - path);
    if (n == 0) n = 1; /* "/model.onnx" */
    char *d = og_malloc(a, n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = 0;
    }
    return d;
}

static og_status load_file(const char *path, const og_load_options *opts, bool strict,
                           og_model **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_model_load_file: out is NULL");
    *out = NULL;
    if (!path) return og_error(OG_ERR_INVALID_ARG, "og_model_load_file: path is NULL");
    const og_allocator *a = og_alloc_or_default(opts ? opts->allocator : NULL);
    void *data = NULL;
    size_t size = 0;
    char *dir = NULL;
    og_load_options lim;
    og_status st = og_onnx_limits(opts, &lim);
    if (st) return st;
    st = og_read_file(path, (size_t)lim.max_model_bytes, a, &data, &size);
    if (st) return st;
    if (opts && opts->base_dir) {
        dir = og_strdup(a, opts->base_dir);
    } else {
        dir = dir_of(a, path);
    }
    if (!dir) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    st = model_from_bytes(data, size, dir, opts, strict, out);
    if (st) og_error_prefix(st, "%s", path);
done:
    og_free(a, dir);
    og_free(a, data);
    return st;
}

og_status og_model_load_file(const char *path, const og_load_options *opts, og_model **out)
{
    return load_file(path, opts, true, out);
}

og_status og_model_load_file_any_op(const char *path, const og_load_options *opts, og_model **out)
{
    return load_file(path, opts, false, out);
}

og_status og_model_load_buffer(const void *data, size_t size, const og_load_options *opts,
                               og_model **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_model_load_buffer: out is NULL");
    *out = NULL;
    if (!data) return og_error(OG_ERR_INVALID_ARG, "og_model_load_buffer: data is NULL");
    return model_from_bytes(data, size, opts ? opts->base_dir : NULL, opts, true, out);
}

void og_model_free(og_model *m)
{
    if (!m) return;
    og_allocator a = m->alloc; /* the model's copy dies with it */
    og_graph_free(m->graph);
    og_free(&a, m);
}

og_status og_model_save_buffer(const og_model *m, void **out_data, size_t *out_size)
{
    if (!m || !out_data || !out_size)
        return og_error(OG_ERR_INVALID_ARG, "og_model_save_buffer: NULL argument");
    return og_onnx_serialize_model(m->graph, &m->alloc, out_data, out_size);
}

void og_model_buffer_free(const og_model *m, void *data)
{
    if (m) og_free(&m->alloc, data);
}

og_status og_model_save_file(const og_model *m, const char *path)
{
    void *data = NULL;
    size_t size = 0;
    if (!path) return og_error(OG_ERR_INVALID_ARG, "og_model_save_file: path is NULL");
    og_status st = og_model_save_buffer(m, &data, &size);
    if (st) return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        st = og_error(OG_ERR_IO, "cannot create '%s'", path);
    } else {
        if (fwrite(data, 1, size, f) != size) st = og_error(OG_ERR_IO, "cannot write '%s'", path);
        if (fclose(f) != 0 && !st) st = og_error(OG_ERR_IO, "cannot write '%s'", path);
    }
    og_model_buffer_free(m, data);
    return st;
}

bool og_api_index_ok(const char *fn, const char *what, int i, int n)
{
    if (i >= 0 && i < n) return true;
    if (n <= 0)
        og_error(OG_ERR_INVALID_ARG, "%s: %s index %d is out of range (there are none)", fn, what,
                 i);
    else
        og_error(OG_ERR_INVALID_ARG, "%s: %s index %d is outside 0..%d", fn, what, i, n - 1);
    return false;
}

int og_model_input_count(const og_model *m)
{
    int n = 0;
    for (int i = 0; m && i < m->graph->n_inputs; i++)
        if (m->graph->values[m->graph->inputs[i]].kind == OG_VALUE_INPUT) n++;
    return n;
}

int og_model_output_count(const og_model *m) { return m ? m->graph->n_outputs : 0; }

/* Index into graph->values of the i-th graph input that is not an initializer, or -1 after
 * an error naming `fn`. */
static int input_value(const og_model *m, int i, const char *fn)
{
    if (!og_api_index_ok(fn, "input", i, og_model_input_count(m))) return -1;
    for (int k = 0;; k++) { /* the count says the i-th one exists */
        int v = m->graph->inputs[k];
        if (m->graph->values[v].kind == OG_VALUE_INPUT && i-- == 0) return v;
    }
}

const char *og_model_input_name(const og_model *m, int i)
{
    int v = input_value(m, i, "og_model_input_name");
    return v < 0 ? NULL : m->graph->values[v].name;
}

const char *og_model_output_name(const og_model *m, int i)
{
    if (!og_api_index_ok("og_model_output_name", "output", i, og_model_output_count(m)))
        return NULL;
    return m->graph->values[m->graph->outputs[i]].name;
}

/* Clear what value_info fills: a failed call leaves no stale shape behind. */
static void clear_info(og_dtype *dtype, int *rank, int64_t *dims, const char **dim_names)
{
    if (dtype) *dtype = OG_UNDEFINED;
    if (rank) *rank = 0;
    for (int d = 0; d < OG_MAX_RANK; d++) {
        if (dims) dims[d] = 0;
        if (dim_names) dim_names[d] = NULL;
    }
}

static og_status value_info(const og_model *m, int v, og_dtype *dtype, int *rank, int64_t *dims,
                            const char **dim_names)
{
    const og_value *val = &m->graph->values[v];
    if (dtype) *dtype = val->dtype;
    if (rank) *rank = val->rank;
    for (int d = 0; d < val->rank; d++) {
        if (dims) dims[d] = val->dims[d] >= 0 ? val->dims[d] : -1;
        if (dim_names) dim_names[d] = og_graph_dim_name(m->graph, val->dims[d]);
    }
    return OG_OK;
}

og_status og_model_input_info(const og_model *m, int i, og_dtype *dtype, int *rank, int64_t *dims,
                              const char **dim_names)
{
    clear_info(dtype, rank, dims, dim_names);
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_model_input_info: model is NULL");
    int v = input_value(m, i, "og_model_input_info");
    if (v < 0) return OG_ERR_INVALID_ARG;
    return value_info(m, v, dtype, rank, dims, dim_names);
}

og_status og_model_output_info(const og_model *m, int i, og_dtype *dtype, int *rank, int64_t *dims,
                               const char **dim_names)
{
    clear_info(dtype, rank, dims, dim_names);
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_model_output_info: model is NULL");
    if (!og_api_index_ok("og_model_output_info", "output", i, m->graph->n_outputs))
        return OG_ERR_INVALID_ARG;
    return value_info(m, m->graph->outputs[i], dtype, rank, dims, dim_names);
}

int og_model_initializer_count(const og_model *m) { return m ? m->graph->n_inits : 0; }

const char *og_model_initializer_name(const og_model *m, int i)
{
    if (!og_api_index_ok("og_model_initializer_name", "initializer", i,
                         og_model_initializer_count(m)))
        return NULL;
    return m->graph->values[m->graph->inits[i]].name;
}

const og_tensor *og_model_initializer(const og_model *m, int i)
{
    if (!og_api_index_ok("og_model_initializer", "initializer", i, og_model_initializer_count(m)))
        return NULL;
    return m->graph->values[m->graph->inits[i]].init;
}

int og_model_training_info_count(const og_model *m) { return m ? m->graph->n_training_info : 0; }

int og_model_opset_count(const og_model *m) { return m ? m->graph->n_opsets : 0; }

og_status og_model_opset(const og_model *m, int i, const char **domain, int64_t *version)
{
    if (domain) *domain = NULL;
    if (version) *version = 0;
    if (!og_api_index_ok("og_model_opset", "opset", i, og_model_opset_count(m)))
        return OG_ERR_INVALID_ARG;
    if (domain) *domain = m->graph->opsets[i].domain;
    if (version) *version = m->graph->opsets[i].version;
    return OG_OK;
}

int64_t og_model_ir_version(const og_model *m) { return m ? m->graph->ir_version : 0; }
int og_model_node_count(const og_model *m) { return m ? m->graph->n_nodes : 0; }

og_status og_model_node_op(const og_model *m, int i, const char **op_type, const char **domain)
{
    if (op_type) *op_type = NULL;
    if (domain) *domain = NULL;
    if (!og_api_index_ok("og_model_node_op", "node", i, og_model_node_count(m)))
        return OG_ERR_INVALID_ARG;
    if (op_type) *op_type = m->graph->nodes[i].op_type;
    if (domain) *domain = m->graph->nodes[i].domain;
    return OG_OK;
}

const char *og_model_node_name(const og_model *m, int i)
{
    if (!og_api_index_ok("og_model_node_name", "node", i, og_model_node_count(m))) return NULL;
    return m->graph->nodes[i].name;
}

static og_status type_text(const og_model *m, int v, og_kind *kind, char *buf, size_t size)
{
    const og_value *val = &m->graph->values[v];
    if (kind) *kind = og_value_kind_of(val);
    if (buf && size) og_value_type_str(m->graph, val, buf, size);
    return OG_OK;
}

og_status og_model_input_type(const og_model *m, int i, og_kind *kind, char *buf, size_t size)
{
    if (kind) *kind = OG_KIND_TENSOR;
    if (buf && size) buf[0] = 0;
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_model_input_type: model is NULL");
    int v = input_value(m, i, "og_model_input_type");
    if (v < 0) return OG_ERR_INVALID_ARG;
    return type_text(m, v, kind, buf, size);
}

og_status og_model_output_type(const og_model *m, int i, og_kind *kind, char *buf, size_t size)
{
    if (kind) *kind = OG_KIND_TENSOR;
    if (buf && size) buf[0] = 0;
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_model_output_type: model is NULL");
    if (!og_api_index_ok("og_model_output_type", "output", i, m->graph->n_outputs))
        return OG_ERR_INVALID_ARG;
    return type_text(m, m->graph->outputs[i], kind, buf, size);
}
