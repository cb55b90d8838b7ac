/* grad.c: og_grad, the public face of the gradient builder. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/grad_api.h"
#include "onnx/onnx_io.h"

static bool is_float_init(const og_value *v)
{
    return v->kind == OG_VALUE_INITIALIZER &&
           (v->dtype == OG_FLOAT || v->dtype == OG_DOUBLE || v->dtype == OG_FLOAT16);
}

/* A weight the user may name: a float initializer, or an integer initializer that only
 * QuantizeLinear/DequantizeLinear nodes read, as their zero point (input 2): its gradient
 * is PyTorch's learnable zero point's, reported as a float tensor (src/grad/quant.c). */
static bool is_weight(const og_graph *g, int v)
{
    const og_value *x = &g->values[v];
    if (is_float_init(x)) return true;
    if (x->kind != OG_VALUE_INITIALIZER || !og_dtype_is_integer(x->dtype)) return false;
    bool read = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        bool q = !n->domain[0] && (strcmp(n->op_type, "QuantizeLinear") == 0 ||
                                   strcmp(n->op_type, "DequantizeLinear") == 0);
        for (int j = 0; j < n->n_in; j++) {
            if (n->in[j] != v) continue;
            if (!q || j != 2) return false;
            read = true;
        }
    }
    return read;
}

static bool is_float_input(const og_value *v)
{
    return v->kind == OG_VALUE_INPUT && og_dtype_is_float(v->dtype);
}

static bool is_output(const og_value *v) { return v->is_graph_output; }

static bool pick_input(const og_graph *g, int v) { return is_float_input(&g->values[v]); }
static bool pick_output(const og_graph *g, int v) { return is_output(&g->values[v]); }

/* Resolve names to forward value ids; `what` names the list in messages. */
static og_status pick(const og_graph *g, const char *const *names, int n, const char *what,
                      bool (*ok)(const og_graph *, int), int *ids)
{
    for (int i = 0; i < n; i++) {
        int v = names[i] ? og_graph_find_value(g, names[i]) : -1;
        if (v < 0 || !ok(g, v)) {
            char cands[768] = "";
            size_t used = 0;
            for (int k = 0; k < g->n_values && used + 2 < sizeof cands; k++)
                if (ok(g, k))
                    used += (size_t)snprintf(cands + used, sizeof cands - used, "%s'%s'",
                                             used ? ", " : "", g->values[k].name);
            if (v >= 0)
                return og_error(OG_ERR_INVALID_ARG,
                                "%s '%s' cannot be differentiated (not a float %s; candidates: %s)",
                                what, names[i], what, cands);
            return og_error(OG_ERR_INVALID_ARG, "the model has no %s named '%s' (candidates: %s)",
                            what, names[i] ? names[i] : "(null)", cands);
        }
        for (int k = 0; k < i; k++)
            if (ids[k] == v)
                return og_error(OG_ERR_INVALID_ARG, "%s '%s' is listed twice", what, names[i]);
        ids[i] = v;
    }
    return OG_OK;
}

/* A model with LinearRegressor or LinearClassifier nodes is differentiated through its
 * lowered copy, whose coefficients and intercepts are initializers (grad.h). */
static og_status lower_linear_models(og_grad *g)
{
    const og_graph *fg = g->model->graph;
    bool any = false;
    for (int i = 0; i < fg->n_nodes && !any; i++)
        any = strcmp(fg->nodes[i].domain, "ai.onnx.ml") == 0 &&
              (strcmp(fg->nodes[i].op_type, "LinearRegressor") == 0 ||
               strcmp(fg->nodes[i].op_type, "LinearClassifier") == 0);
    if (!any) return OG_OK;
    og_model *low = NULL;
    og_status st = og_model_copy_graph(g->model, g->model->user_alloc, &low);
    if (!st) st = og_graph_finalize(low->graph);
    if (!st) st = og_graph_resolve(low->graph, true);
    int n = 0;
    if (!st) st = og_grad_lower_ml(low->graph, &n);
    if (st) {
        og_model_free(low);
        return og_error_prefix(st, "lowering the linear models to differentiate them");
    }
    g->lowered = low;
    g->model = low;
    return OG_OK;
}

/* The eval graph: a copy of the forward graph whose trained weights are graph inputs
 * (after the model inputs), their initializer values kept as defaults. */
static og_status make_eval(const og_model *m, const int *w, int nw, const og_allocator *a,
                           og_model **out)
{
    og_model *e = NULL;
    og_status st = og_model_copy_graph(m, a, &e);
    *out = NULL;
    if (st) return st;
    og_graph *g = e->graph;
    int *inputs = og_malloc(&e->alloc, (size_t)(g->n_inputs + nw + 1) * sizeof *inputs);
    if (!inputs) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int n = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->values[g->inputs[i]].kind == OG_VALUE_INPUT) inputs[n++] = g->inputs[i];
    for (int i = 0; i < nw; i++) {
        int v = og_graph_find_value(g, m->graph->values[w[i]].name);
        if (v < 0 || g->values[v].is_graph_input) continue;
        g->values[v].is_graph_input = true;
        inputs[n++] = v;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        bool listed = false;
        for (int k = 0; k < n && !listed; k++) listed = inputs[k] == g->inputs[i];
        if (!listed) inputs[n++] = g->inputs[i];
    }
    og_free(&e->alloc, g->inputs);
    g->inputs = inputs;
    g->n_inputs = n;
    st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (st) goto fail;
    *out = e;
    return OG_OK;
fail:
    og_model_free(e);
    return st;
}

og_status og_grad_create(const og_model *m, const og_grad_options *opts, og_grad **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_grad_create: out is NULL");
    *out = NULL;
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_grad_create: model is NULL");
    if (opts && opts->device != OG_DEVICE_CPU)
        return og_error(OG_ERR_UNSUPPORTED,
                        "device %d (cuda:%d) is not available: onnxgrad "
                        "runs on the CPU only so far",
                        (int)opts->device, opts->device_index);
    const og_graph *fg = m->graph;
    const og_allocator *a = opts && opts->allocator ? opts->allocator : m->user_alloc;
    og_status st = OG_OK;
    int *w = NULL, *in = NULL, *o = NULL;
    og_graph *tg = NULL;
    og_grad *g = og_calloc(a, 1, sizeof *g);
    if (!g) return og_error(OG_ERR_NOMEM, "out of memory");
    g->model = m;
    g->alloc = a;
    if ((st = lower_linear_models(g))) goto fail;
    m = g->model;
    fg = m->graph;
    int nw = 0, ni = 0, no = 0;
    size_t cap = (size_t)fg->n_values + 1;
    w = og_malloc(a, cap * sizeof *w);
    in = og_malloc(a, cap * sizeof *in);
    o = og_malloc(a, cap * sizeof *o);
    if (!w || !in || !o) goto nomem;
    if (opts && opts->weights) {
        nw = opts->n_weights;
        if (nw < 0 || (size_t)nw >= cap) {
            st = og_error(OG_ERR_INVALID_ARG, "n_weights %d is out of range", nw);
            goto fail;
        }
        if ((st = pick(fg, opts->weights, nw, "weight", is_weight, w))) goto fail;
    } else {
        /* every float initializer but BatchNormalization's running statistics: values
         * that BatchNormalization nodes read as mean or var (inputs 3, 4) and nothing
         * else reads are statistics the op updates, not weights (PyTorch's buffers) */
        int *stat = og_calloc(a, cap, sizeof *stat); /* +1 per use as a statistic, -1 else */
        bool *other = og_calloc(a, cap, sizeof *other);
        if (!stat || !other) {
            og_free(a, stat);
            og_free(a, other);
            goto nomem;
        }
        for (int i = 0; i < fg->n_nodes; i++) {
            const og_node *n = &fg->nodes[i];
            bool bn = strcmp(n->op_type, "BatchNormalization") == 0 && !n->domain[0];
            for (int j = 0; j < n->n_in; j++)
                if (n->in[j] >= 0) {
                    if (bn && (j == 3 || j == 4))
                        stat[n->in[j]]++;
                    else
                        other[n->in[j]] = true;
                }
        }
        for (int i = 0; i < fg->n_inits; i++) {
            int v = fg->inits[i];
            if (!is_float_init(&fg->values[v])) continue;
            if (stat[v] > 0 && !other[v] && !fg->values[v].is_graph_output) continue;
            w[nw++] = v;
        }
        og_free(a, stat);
        og_free(a, other);
    }
    if (opts && opts->inputs) {
        ni = opts->n_inputs;
        if (ni < 0 || (size_t)ni >= cap) {
            st = og_error(OG_ERR_INVALID_ARG, "n_inputs %d is out of range", ni);
            goto fail;
        }
        if ((st = pick(fg, opts->inputs, ni, "input", pick_input, in))) goto fail;
    } else {
        for (int i = 0; i < fg->n_inputs; i++)
            if (is_float_input(&fg->values[fg->inputs[i]])) in[ni++] = fg->inputs[i];
    }
    if (opts && opts->outputs) {
        no = opts->n_outputs;
        if (no < 0 || (size_t)no >= cap) {
            st = og_error(OG_ERR_INVALID_ARG, "n_outputs %d is out of range", no);
            goto fail;
        }
        if ((st = pick(fg, opts->outputs, no, "output", pick_output, o))) goto fail;
    } else {
        for (int i = 0; i < fg->n_outputs; i++) o[no++] = fg->outputs[i];
    }
    /* a ZipMap's sequence of maps is differentiated as the probabilities it packs */
    for (int i = 0; i < no; i++) {
        o[i] = og_grad_output_source(fg, o[i]);
        for (int k = 0; k < i; k++)
            if (o[k] == o[i]) { /* listed already: drop it, keeping the order */
                memmove(o + i, o + i + 1, (size_t)(no - i - 1) * sizeof *o);
                no--;
                i--;
                break;
            }
    }
    if (nw + ni == 0) {
        st = og_error(OG_ERR_INVALID_ARG, "nothing to differentiate: no float weight and no "
                                          "float input needing a gradient");
        goto fail;
    }
    og_grad_spec spec = {
        w, nw, in, ni, o, no, opts ? opts->log : NULL, opts ? opts->log_user : NULL, NULL, false};
    g->training = og_calloc(a, 1, sizeof *g->training);
    if (!g->training) goto nomem;
    g->training->alloc = *a;
    g->training->user_alloc = a;
    st = og_grad_build(fg, &spec, &g->training->alloc, &tg);
    if (st) goto fail;
    g->training->graph = tg;
    g->n_outputs = no;
    g->n_inputs = ni;
    g->n_weights = nw;
    /* names: the training graph keeps the forward names */
    int total = no + ni + nw;
    g->names = og_calloc(a, (size_t)total + 1, sizeof *g->names);
    g->seed_names = og_calloc(a, (size_t)no + 1, sizeof *g->seed_names);
    g->ones = og_calloc(a, (size_t)no + 1, sizeof *g->ones);
    g->run_names = og_calloc(a, (size_t)(tg->n_inputs + 1), sizeof *g->run_names);
    g->run_tensors = og_calloc(a, (size_t)(tg->n_inputs + 1), sizeof *g->run_tensors);
    if (!g->names || !g->seed_names || !g->ones || !g->run_names || !g->run_tensors) goto nomem;
    for (int i = 0; i < no; i++) g->names[i] = fg->values[o[i]].name;
    for (int i = 0; i < ni; i++) g->names[no + i] = fg->values[in[i]].name;
    for (int i = 0; i < nw; i++) g->names[no + ni + i] = fg->values[w[i]].name;
    for (int i = 0; i < no; i++) {
        size_t len = strlen(fg->values[o[i]].name) + 8;
        char *name = og_malloc(a, len);
        if (!name) goto nomem;
        snprintf(name, len, "%s_grad", fg->values[o[i]].name);
        int v = og_graph_find_value(tg, name);
        og_free(a, name);
        g->seed_names[i] = v >= 0 && tg->values[v].is_graph_input ? tg->values[v].name : NULL;
    }
    g->sopts.threads = opts ? opts->threads : 0;
    g->sopts.allocator = a;
    g->sopts.log = opts ? opts->log : NULL;
    g->sopts.log_user = opts ? opts->log_user : NULL;
    g->sopts.debug = opts ? opts->debug : 0;
    g->sopts.seed = opts ? opts->seed : 0;
    g->sopts.max_memory = opts ? opts->max_memory : 0;
    st = og_session_create_plain(g->training, &g->sopts, &g->session);
    if (st) goto fail;
    st = make_eval(m, w, nw, a, &g->eval);
    if (st) goto fail;
    st = og_grad_split(g);
    if (st) goto fail;
    og_free(a, w);
    og_free(a, in);
    og_free(a, o);
    *out = g;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory");
fail:
    og_free(a, w);
    og_free(a, in);
    og_free(a, o);
    og_grad_free(g);
    return st;
}

void og_grad_free(og_grad *g)
{
    if (!g) return;
    const og_allocator *a = g->alloc;
    og_session_free(g->session);
    og_session_free(g->forward);
    og_model_free(g->training);
    og_model_free(g->eval);
    og_model_free(g->owned_model);
    og_model_free(g->lowered);
    if (g->ones)
        for (int i = 0; i < g->n_outputs; i++) og_tensor_free(g->ones[i]);
    og_free(a, g->ones);
    og_free(a, g->names);
    og_free(a, g->seed_names);
    og_free(a, g->run_names);
    og_free(a, g->run_tensors);
    og_free(a, g->backward);
    og_free(a, g->saved);
    og_free(a, g->out_values);
    og_free(a, g->seed_values);
    og_free(a, g);
}

int og_grad_output_count(const og_grad *g) { return g ? g->n_outputs : 0; }
int og_grad_input_count(const og_grad *g) { return g ? g->n_inputs : 0; }
int og_grad_weight_count(const og_grad *g) { return g ? g->n_weights : 0; }

const char *og_grad_output_name(const og_grad *g, int i)
{
    if (!og_api_index_ok("og_grad_output_name", "output", i, og_grad_output_count(g))) return NULL;
    return g->names[i];
}

const char *og_grad_input_name(const og_grad *g, int i)
{
    if (!og_api_index_ok("og_grad_input_name", "input", i, og_grad_input_count(g))) return NULL;
    return g->names[g->n_outputs + i];
}

const char *og_grad_weight_name(const og_grad *g, int i)
{
    if (!og_api_index_ok("og_grad_weight_name", "weight", i, og_grad_weight_count(g))) return NULL;
    return g->names[g->n_outputs + g->n_inputs + i];
}

const og_model *og_grad_training_model(const og_grad *g) { return g ? g->training : NULL; }
const og_model *og_grad_eval_model(const og_grad *g) { return g ? g->eval : NULL; }

og_status og_grad_save_graphs(const og_grad *g, const char *folder, const char *prefix,
                              const char *suffix)
{
    if (!g || !folder) return og_error(OG_ERR_INVALID_ARG, "og_grad_save_graphs: NULL argument");
    const char *names[2] = {"training", "eval"};
    const og_model *models[2] = {g->training, g->eval};
    og_status st = OG_OK;
    og_model *files[2] = {NULL, NULL};
    /* The files list the weights as initializers only: an initializer that is also a graph
     * input is one a runtime may not fold, and onnxruntime warns once per weight for it
     * (IR >= 4 needs no such listing).  What is written must load and run: each file's
     * bytes are loaded back (every node resolved, types and shapes inferred over the saved
     * graph, as a reader of the file would) and bound to kernels before anything is
     * written. */
    for (int i = 0; i < 2 && !st; i++) {
        st = og_model_copy_graph(models[i], g->alloc, &files[i]);
        if (st) break;
        og_graph *fg = files[i]->graph;
        int k = 0;
        for (int q = 0; q < fg->n_inputs; q++) {
            og_value *v = &fg->values[fg->inputs[q]];
            if (v->kind == OG_VALUE_INITIALIZER && fg->ir_version >= 4)
                v->is_graph_input = false;
            else
                fg->inputs[k++] = fg->inputs[q];
        }
        fg->n_inputs = k;
        void *data = NULL;
        size_t size = 0;
        og_model *back = NULL;
        og_session *s = NULL;
        st = og_model_save_buffer(files[i], &data, &size);
        if (!st) st = og_model_load_buffer(data, size, NULL, &back);
        if (!st) st = og_session_create(back, NULL, &s);
        og_session_free(s);
        og_model_free(back);
        og_model_buffer_free(files[i], data);
        if (st && st != OG_ERR_NOMEM)
            st = og_error_prefix(OG_ERR_INTERNAL,
                                 "og_grad_save_graphs: the %s graph would not load back, "
                                 "nothing written",
                                 names[i]);
    }
    size_t len =
        strlen(folder) + (prefix ? strlen(prefix) : 0) + (suffix ? strlen(suffix) : 0) + 32;
    char *path = st ? NULL : og_malloc(g->alloc, len);
    if (!st && !path) st = og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < 2 && !st; i++) {
        snprintf(path, len, "%s/%s%s%s.onnx", folder, prefix ? prefix : "", names[i],
                 suffix ? suffix : "");
        st = og_model_save_file(files[i], path);
    }
    og_free(g->alloc, path);
    og_model_free(files[0]);
    og_model_free(files[1]);
    return st;
}

/* Ones shaped like output j, learned from a forward run of the model, for every output the
 * training graph takes a seed of (an output that is not differentiated, as a sequence whose
 * gradient the builder does not seed, has none and is left alone). */
static og_status default_seeds(og_grad *g, const char *const *names, const og_tensor *const *inputs,
                               int n_inputs)
{
    og_status st;
    og_tensor **outs = NULL;
    if (!g->forward) {
        st = og_session_create(g->model, &g->sopts, &g->forward);
        if (st) return st;
    }
    outs = og_calloc(g->alloc, (size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs) return og_error(OG_ERR_NOMEM, "out of memory");
    /* the forward model binds only its graph inputs: weight overrides go to g->run_* */
    const og_graph *fg = g->model->graph;
    int n = 0;
    for (int i = 0; i < n_inputs; i++) {
        int v = og_graph_find_value(fg, names[i]);
        if (v >= 0 && !fg->values[v].is_graph_input) continue;
        g->run_names[n] = names[i];
        g->run_tensors[n++] = inputs[i];
    }
    st = og_session_run_named(g->forward, g->run_names, g->run_tensors, n, g->names, g->n_outputs,
                              outs);
    for (int j = 0; !st && j < g->n_outputs; j++) {
        og_tensor *t = outs[j];
        if (!g->seed_names[j]) continue;
        if (t->kind != OG_KIND_TENSOR) {
            st = og_error(OG_ERR_INVALID_ARG,
                          "og_grad_run: output '%s' is a %s: give its gradient seed, there is no "
                          "default of ones for it",
                          g->names[j], og_kind_name(t->kind));
            break;
        }
        if (g->ones[j] && g->ones[j]->rank == t->rank && g->ones[j]->dtype == t->dtype &&
            memcmp(g->ones[j]->dims, t->dims, (size_t)t->rank * sizeof *t->dims) == 0)
            continue;
        og_tensor_free(g->ones[j]);
        g->ones[j] = NULL;
        st = og_tensor_alloc(t->dtype, t->rank, t->dims, g->alloc, &g->ones[j]);
        for (int64_t k = 0; !st && k < t->numel; k++) {
            if (t->dtype == OG_FLOAT)
                ((float *)g->ones[j]->data)[k] = 1.0f;
            else if (t->dtype == OG_DOUBLE)
                ((double *)g->ones[j]->data)[k] = 1.0;
            else if (t->dtype == OG_FLOAT16)
                ((uint16_t *)g->ones[j]->data)[k] = 0x3c00;
        }
    }
    for (int j = 0; j < g->n_outputs; j++) og_tensor_free(outs[j]);
    og_free(g->alloc, outs);
    return st;
}

static og_status grad_run(og_grad *g, const char *const *input_names,
                          const og_tensor *const *inputs, int n_inputs,
                          const og_tensor *const *grad_outputs, og_tensor **outputs,
                          og_tensor **grads, const char *const *extra, int n_extra,
                          og_tensor **extra_out, const og_exec_hooks *hooks);

og_status og_grad_run(og_grad *g, const char *const *input_names, const og_tensor *const *inputs,
                      int n_inputs, const og_tensor *const *grad_outputs, og_tensor **outputs,
                      og_tensor **grads)
{
    return og_grad_run_full(g, input_names, inputs, n_inputs, grad_outputs, outputs, grads, NULL, 0,
                            NULL, NULL);
}

og_status og_grad_run_hooked(og_grad *g, const char *const *input_names,
                             const og_tensor *const *inputs, int n_inputs,
                             const og_tensor *const *grad_outputs, og_tensor **outputs,
                             og_tensor **grads, const og_exec_hooks *hooks)
{
    return og_grad_run_full(g, input_names, inputs, n_inputs, grad_outputs, outputs, grads, NULL, 0,
                            NULL, hooks);
}

og_status og_grad_run_with(og_grad *g, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs,
                           const og_tensor *const *grad_outputs, og_tensor **outputs,
                           og_tensor **grads, const char *const *extra, int n_extra,
                           og_tensor **extra_out)
{
    return og_grad_run_full(g, input_names, inputs, n_inputs, grad_outputs, outputs, grads, extra,
                            n_extra, extra_out, NULL);
}

og_status og_grad_run_full(og_grad *g, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs,
                           const og_tensor *const *grad_outputs, og_tensor **outputs,
                           og_tensor **grads, const char *const *extra, int n_extra,
                           og_tensor **extra_out, const og_exec_hooks *hooks)
{
    if (!g) return og_error(OG_ERR_INVALID_ARG, "og_grad_run: NULL gradient object");
    if (n_inputs < 0 || (n_inputs && (!input_names || !inputs)) || !outputs || !grads)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_run: bad arrays");
    for (int j = 0; j < g->n_outputs; j++) outputs[j] = NULL;
    for (int j = 0; j < g->n_inputs + g->n_weights; j++) grads[j] = NULL;
    if (atomic_exchange(&g->run_busy, 1))
        return og_error(OG_ERR_BUSY, "og_grad_run: the gradient object is running og_grad_run "
                                     "in another thread (one at a time; instances run in "
                                     "parallel)");
    og_status st;
    if (!og_grad_enter_shared(g))
        st = og_error(OG_ERR_BUSY,
                      "og_grad_run: og_grad_set_weight is changing the weights in another thread");
    else {
        st = grad_run(g, input_names, inputs, n_inputs, grad_outputs, outputs, grads, extra,
                      n_extra, extra_out, hooks);
        og_grad_leave_shared(g);
    }
    atomic_store(&g->run_busy, 0);
    return st;
}

static og_status grad_run(og_grad *g, const char *const *input_names,
                          const og_tensor *const *inputs, int n_inputs,
                          const og_tensor *const *grad_outputs, og_tensor **outputs,
                          og_tensor **grads, const char *const *extra, int n_extra,
                          og_tensor **extra_out, const og_exec_hooks *hooks)
{
    const og_graph *tg = g->training->graph;
    int n_res = g->n_inputs + g->n_weights;
    og_status st = OG_OK;
    for (int j = 0; j < g->n_outputs; j++) outputs[j] = NULL;
    for (int j = 0; j < n_res; j++) grads[j] = NULL;
    int n_seeds = 0;
    for (int j = 0; j < g->n_outputs; j++) n_seeds += g->seed_names[j] != NULL;
    if (n_inputs + n_seeds > tg->n_inputs)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_run: %d inputs given, the model has %d",
                        n_inputs, tg->n_inputs - n_seeds);
    bool need_default = false;
    for (int j = 0; j < g->n_outputs; j++)
        need_default = need_default || (g->seed_names[j] && (!grad_outputs || !grad_outputs[j]));
    if (need_default) {
        st = default_seeds(g, input_names, inputs, n_inputs);
        if (st) return st;
    }
    int n = 0;
    for (int i = 0; i < n_inputs; i++) {
        g->run_names[n] = input_names[i];
        g->run_tensors[n++] = inputs[i];
    }
    for (int j = 0; j < g->n_outputs; j++) {
        if (!g->seed_names[j]) continue;
        g->run_names[n] = g->seed_names[j];
        g->run_tensors[n++] = grad_outputs && grad_outputs[j] ? grad_outputs[j] : g->ones[j];
    }
    int n_all = g->n_outputs + n_res;
    og_tensor **all = og_calloc(g->alloc, (size_t)(n_all + n_extra) + 1, sizeof *all);
    const char **want = og_calloc(g->alloc, (size_t)(n_all + n_extra) + 1, sizeof *want);
    if (!all || !want) {
        og_free(g->alloc, all);
        og_free(g->alloc, want);
        return og_error(OG_ERR_NOMEM, "out of memory");
    }
    /* the training graph's outputs (selected outputs, then results), then the extra values
     * (any value of the training graph: what a trainer reads besides, as running
     * statistics) */
    for (int j = 0; j < n_all && j < tg->n_outputs; j++) want[j] = tg->values[tg->outputs[j]].name;
    for (int j = 0; j < n_extra; j++) want[n_all + j] = extra[j];
    st = og_session_run_hooked(g->session, g->run_names, g->run_tensors, n, want, n_all + n_extra,
                               all, hooks);
    if (!st) {
        for (int j = 0; j < g->n_outputs; j++) outputs[j] = all[j];
        for (int j = 0; j < n_res; j++) grads[j] = all[g->n_outputs + j];
        for (int j = 0; j < n_extra; j++) extra_out[j] = all[n_all + j];
    }
    og_free(g->alloc, all);
    og_free(g->alloc, want);
    return st;
}

og_status og_grad_split(og_grad *g)
{
    const og_graph *tg = g->training->graph;
    const og_allocator *a = g->alloc;
    bool *from_seed = og_calloc(a, (size_t)tg->n_values + 1, sizeof *from_seed);
    bool *in_saved = og_calloc(a, (size_t)tg->n_values + 1, sizeof *in_saved);
    int *readers = og_calloc(a, (size_t)tg->n_values + 1, sizeof *readers);
    int *bw_readers = og_calloc(a, (size_t)tg->n_values + 1, sizeof *bw_readers);
    g->backward = og_calloc(a, (size_t)tg->n_nodes + 1, sizeof *g->backward);
    g->saved = og_malloc(a, (size_t)(tg->n_values + 1) * sizeof *g->saved);
    g->out_values = og_malloc(a, (size_t)(tg->n_outputs + 1) * sizeof *g->out_values);
    g->seed_values = og_malloc(a, (size_t)(g->n_outputs + 1) * sizeof *g->seed_values);
    og_status st = OG_OK;
    if (!from_seed || !in_saved || !readers || !bw_readers || !g->backward || !g->saved ||
        !g->out_values || !g->seed_values) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < g->n_outputs; j++) {
        g->seed_values[j] = g->seed_names[j] ? og_graph_find_value(tg, g->seed_names[j]) : -1;
        if (g->seed_values[j] >= 0) from_seed[g->seed_values[j]] = true;
    }
    for (int i = 0; i < tg->n_outputs; i++) g->out_values[i] = tg->outputs[i];
    /* a node belongs to the backward half when a seed reaches it (nodes are sorted) */
    for (int i = 0; i < tg->n_nodes; i++) {
        const og_node *n = &tg->nodes[i];
        for (int k = 0; k < n->n_in && !g->backward[i]; k++)
            g->backward[i] = n->in[k] >= 0 && from_seed[n->in[k]];
        if (!g->backward[i]) continue;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) from_seed[n->out[k]] = true;
    }
    /* a Transpose of forward values read by backward nodes alone runs in the backward half
     * (its output is then the backward half's, from_seed): the state keeps its input
     * instead, and the backward half sees the pattern of a Conv's weight gradient whole
     * (src/exec/fuse.h), which it runs without transposing.  Readers come after their
     * producer (nodes are sorted), so a reverse pass sees every reader's final half. */
    for (int i = 0; i < tg->n_nodes; i++) {
        const og_node *n = &tg->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) {
                readers[n->in[k]]++;
                bw_readers[n->in[k]] += g->backward[i];
            }
    }
    for (int i = tg->n_nodes - 1; i >= 0; i--) {
        const og_node *n = &tg->nodes[i];
        if (g->backward[i] || strcmp(n->op_type, "Transpose") != 0 || n->domain[0] ||
            n->n_out != 1 || n->out[0] < 0 || tg->values[n->out[0]].is_graph_output ||
            readers[n->out[0]] == 0 || readers[n->out[0]] != bw_readers[n->out[0]])
            continue;
        g->backward[i] = true;
        from_seed[n->out[0]] = true;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) bw_readers[n->in[k]]++;
    }
    /* the state: what backward nodes read and the forward half made (or was given, for
     * model inputs); initializers are always at hand and are not saved */
    g->n_saved = 0;
    for (int i = 0; i < tg->n_nodes; i++) {
        if (!g->backward[i]) continue;
        const og_node *n = &tg->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || from_seed[v] || in_saved[v]) continue;
            if (tg->values[v].kind == OG_VALUE_INITIALIZER) continue;
            in_saved[v] = true;
            g->saved[g->n_saved++] = v;
        }
    }
    /* outputs made by the backward half (gradients) that the forward half could make too
     * (a zero gradient of a weight nothing depends on) are computed by the backward half:
     * mark the nodes producing graph outputs after the selected ones as backward */
    for (int o = g->n_outputs; o < tg->n_outputs; o++) {
        int v = tg->outputs[o];
        int p = tg->values[v].producer;
        if (p >= 0 && !g->backward[p]) {
            /* run it (and what it needs) in the backward half: it reads only forward values,
             * which must then be saved too */
            g->backward[p] = true;
            const og_node *n = &tg->nodes[p];
            for (int k = 0; k < n->n_in; k++) {
                int u = n->in[k];
                if (u < 0 || in_saved[u] || tg->values[u].kind == OG_VALUE_INITIALIZER) continue;
                if (tg->values[u].producer >= 0 && g->backward[tg->values[u].producer]) continue;
                in_saved[u] = true;
                g->saved[g->n_saved++] = u;
            }
        }
    }
done:
    og_free(a, from_seed);
    og_free(a, in_saved);
    og_free(a, readers);
    og_free(a, bw_readers);
    return st;
}

/* The initializer tensor of weight `name` in model m, NULL if none. */
static og_tensor *weight_in(const og_model *m, const char *name)
{
    int v = og_graph_find_value(m->graph, name);
    return v >= 0 && m->graph->values[v].kind == OG_VALUE_INITIALIZER ? m->graph->values[v].init
                                                                      : NULL;
}

og_tensor *og_grad_state_tensor(og_grad *g, const char *name, bool eval)
{
    return weight_in(eval ? g->eval : g->training, name);
}

static bool is_trained(const og_grad *g, const char *name)
{
    for (int i = 0; i < g->n_weights; i++)
        if (strcmp(og_grad_weight_name(g, i), name) == 0) return true;
    return false;
}

og_status og_grad_get_weight(const og_grad *g, const char *name, const og_tensor **value)
{
    if (!g || !name || !value)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_get_weight: NULL argument");
    *value = NULL;
    og_tensor *t = is_trained(g, name) ? weight_in(g->training, name) : NULL;
    if (!t) return og_error(OG_ERR_INVALID_ARG, "'%s' is not a trained weight", name);
    *value = t;
    return OG_OK;
}

og_status og_grad_set_weight(og_grad *g, const char *name, const og_tensor *value)
{
    if (!g || !name || !value)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_set_weight: NULL argument");
    og_tensor *t = is_trained(g, name) ? weight_in(g->training, name) : NULL;
    if (!t) return og_error(OG_ERR_INVALID_ARG, "'%s' is not a trained weight", name);
    if (value->dtype != t->dtype)
        return og_error(OG_ERR_TYPE, "weight '%s' is %s, the new value %s", name,
                        og_dtype_name(t->dtype), og_dtype_name(value->dtype));
    if (value->rank != t->rank ||
        memcmp(value->dims, t->dims, (size_t)t->rank * sizeof *t->dims) != 0) {
        char a[128], b[128];
        return og_error(OG_ERR_SHAPE, "weight '%s' has shape %s, the new value %s", name,
                        og_shape_str(t->rank, t->dims, a, sizeof a),
                        og_shape_str(value->rank, value->dims, b, sizeof b));
    }
    /* no run reads the weights while they change */
    int idle = 0;
    if (!atomic_compare_exchange_strong(&g->users, &idle, -1))
        return og_error(OG_ERR_BUSY, "og_grad_set_weight('%s'): %s", name,
                        idle > 0 ? "a run or an instance of this gradient object is running in "
                                   "another thread"
                                 : "another thread is setting a weight");
    /* both graphs that hold the weight: the training graph and the eval graph */
    og_tensor *e = weight_in(g->eval, name);
    memcpy(t->data, value->data, og_tensor_nbytes(t));
    if (e) memcpy(e->data, value->data, og_tensor_nbytes(e));
    atomic_store(&g->users, 0);
    return OG_OK;
}

/* ---- save and reload ---------------------------------------------------------------- */

/* "a\nb\nc": names joined by newlines (names cannot hold one usefully) */
static char *join_names(const og_allocator *a, const char *const *names, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(names[i]) + 1;
    char *s = og_malloc(a, len), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        memcpy(p, names[i], l);
        p += l;
        if (i + 1 < n) *p++ = '\n';
    }
    *p = 0;
    return s;
}

og_status og_grad_save_buffer(const og_grad *g, void **data, size_t *size)
{
    if (data) *data = NULL;
    if (size) *size = 0;
    if (!g || !data || !size)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_save_buffer: NULL argument");
    const og_allocator *a = g->alloc;
    const og_graph *eg = g->eval->graph;
    const char *keys[3] = {"onnxgrad.weights", "onnxgrad.inputs", "onnxgrad.outputs"};
    char *vals[3] = {join_names(a, g->names + g->n_outputs + g->n_inputs, g->n_weights),
                     join_names(a, g->names + g->n_outputs, g->n_inputs),
                     join_names(a, g->names, g->n_outputs)};
    og_status st = OG_OK;
    int n0 = eg->n_metadata;
    og_kv *md = NULL;
    if (!vals[0] || !vals[1] || !vals[2]) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* A shallow copy of the eval graph's header with three more metadata entries: g is only
     * read, so threads may save one gradient object at once. */
    md = og_malloc(a, (size_t)(n0 + 3) * sizeof *md);
    if (!md) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (n0) memcpy(md, eg->metadata, (size_t)n0 * sizeof *md);
    for (int i = 0; i < 3; i++) {
        md[n0 + i].key = (char *)keys[i];
        md[n0 + i].value = vals[i];
    }
    og_graph view = *eg;
    view.metadata = md;
    view.n_metadata = n0 + 3;
    st = og_onnx_serialize_model(&view, a, data, size);
done:
    og_free(a, md);
    for (int i = 0; i < 3; i++) og_free(a, vals[i]);
    return st;
}

void og_grad_buffer_free(const og_grad *g, void *data)
{
    if (g) og_free(g->alloc, data);
}

/* Split "a\nb" in place into names[]; returns the count. */
static int split_names(char *s, const char **names, int cap)
{
    int n = 0;
    if (!s || !*s) return 0;
    for (char *p = s; n < cap;) {
        names[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = 0;
        p = nl + 1;
    }
    return n;
}

og_status og_grad_load_buffer(const void *data, size_t size, const og_grad_options *opts,
                              og_grad **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_grad_load_buffer: out is NULL");
    *out = NULL;
    if (opts && (opts->weights || opts->inputs || opts->outputs))
        return og_error(OG_ERR_INVALID_ARG,
                        "og_grad_load_buffer: weights, inputs and outputs "
                        "come from the saved bytes; leave them NULL in the options");
    og_load_options lo = {0};
    lo.allocator = opts ? opts->allocator : NULL;
    og_model *m = NULL;
    og_status st = og_model_load_buffer(data, size, &lo, &m);
    if (st) return st;
    const og_allocator *a = m->user_alloc;
    og_graph *g = m->graph;
    char *lists[3] = {NULL, NULL, NULL};
    const char **names = NULL;
    const char *keys[3] = {"onnxgrad.weights", "onnxgrad.inputs", "onnxgrad.outputs"};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < g->n_metadata; i++)
            if (strcmp(g->metadata[i].key, keys[k]) == 0)
                lists[k] = og_strdup(a, g->metadata[i].value);
        if (!lists[k]) {
            st = og_error(OG_ERR_MODEL,
                          "the bytes are an ONNX model but not a saved gradient "
                          "object (no '%s' metadata)",
                          keys[k]);
            goto done;
        }
    }
    int cap = g->n_values + 1;
    names = og_calloc(a, (size_t)(3 * cap), sizeof *names);
    if (!names) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    og_grad_options o = opts ? *opts : (og_grad_options){0};
    o.weights = names;
    o.n_weights = split_names(lists[0], names, cap);
    o.inputs = names + cap;
    o.n_inputs = split_names(lists[1], names + cap, cap);
    o.outputs = names + 2 * cap;
    o.n_outputs = split_names(lists[2], names + 2 * cap, cap);
    og_grad *gr = NULL;
    st = og_grad_create(m, &o, &gr);
    if (st) goto done;
    gr->owned_model = m;
    m = NULL;
    *out = gr;
done:
    for (int k = 0; k < 3; k++) og_free(a, lists[k]);
    og_free(a, names);
    og_model_free(m);
    return st;
}
