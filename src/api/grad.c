/* grad.c: og_grad, the public face of the gradient builder. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "grad/grad.h"

struct og_grad {
    const og_model *model;
    og_model *training;  /* the training graph, wrapped as a model */
    og_session *session; /* runs the training graph */
    og_session *forward; /* runs the model, to learn output shapes for default seeds */
    og_session_options sopts;
    const og_allocator *alloc;
    int n_outputs, n_inputs, n_weights;
    const char **names; /* outputs, inputs, weights (names owned by the training graph) */
    const char **seed_names;
    const char **run_names; /* scratch: names bound in og_grad_run */
    const og_tensor **run_tensors;
    og_tensor **ones;
};

static bool is_float_init(const og_value *v)
{
    return v->kind == OG_VALUE_INITIALIZER &&
           (v->dtype == OG_FLOAT || v->dtype == OG_DOUBLE || v->dtype == OG_FLOAT16);
}

/* Resolve names to forward value ids; `what` names the list in messages. */
static og_status pick(const og_graph *g, const char *const *names, int n, const char *what,
                      bool (*ok)(const og_value *), int *ids)
{
    for (int i = 0; i < n; i++) {
        int v = names[i] ? og_graph_find_value(g, names[i]) : -1;
        if (v < 0 || !ok(&g->values[v])) {
            char cands[768] = "";
            size_t used = 0;
            for (int k = 0; k < g->n_values && used + 2 < sizeof cands; k++)
                if (ok(&g->values[k]))
                    used += (size_t)snprintf(cands + used, sizeof cands - used, "%s'%s'",
                                             used ? ", " : "", g->values[k].name);
            if (v >= 0)
                return og_error(OG_ERR_INVALID_ARG, "%s '%s' is not a float %s (candidates: %s)",
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

static bool is_float_input(const og_value *v)
{
    return v->kind == OG_VALUE_INPUT && og_dtype_is_float(v->dtype);
}

static bool is_output(const og_value *v) { return v->is_graph_output; }

og_status og_grad_create(const og_model *m, const og_grad_options *opts, og_grad **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_grad_create: out is NULL");
    *out = NULL;
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_grad_create: model is NULL");
    const og_graph *fg = m->graph;
    const og_allocator *a = opts && opts->allocator ? opts->allocator : m->user_alloc;
    og_status st = OG_OK;
    int *w = NULL, *in = NULL, *o = NULL;
    og_graph *tg = NULL;
    og_grad *g = og_calloc(a, 1, sizeof *g);
    if (!g) return og_error(OG_ERR_NOMEM, "out of memory");
    g->model = m;
    g->alloc = a;
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
        if ((st = pick(fg, opts->weights, nw, "weight", is_float_init, w))) goto fail;
    } else {
        for (int i = 0; i < fg->n_inits; i++)
            if (is_float_init(&fg->values[fg->inits[i]])) w[nw++] = fg->inits[i];
    }
    if (opts && opts->inputs) {
        ni = opts->n_inputs;
        if (ni < 0 || (size_t)ni >= cap) {
            st = og_error(OG_ERR_INVALID_ARG, "n_inputs %d is out of range", ni);
            goto fail;
        }
        if ((st = pick(fg, opts->inputs, ni, "input", is_float_input, in))) goto fail;
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
        if ((st = pick(fg, opts->outputs, no, "output", is_output, o))) goto fail;
    } else {
        for (int i = 0; i < fg->n_outputs; i++) o[no++] = fg->outputs[i];
    }
    if (nw + ni == 0) {
        st = og_error(OG_ERR_INVALID_ARG, "nothing to differentiate: no float weight and no "
                                          "float input needing a gradient");
        goto fail;
    }
    og_grad_spec spec = {
        w, nw, in, ni, o, no, opts ? opts->log : NULL, opts ? opts->log_user : NULL};
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
        char name[512];
        snprintf(name, sizeof name, "%s_grad", fg->values[o[i]].name);
        int v = og_graph_find_value(tg, name);
        g->seed_names[i] = v >= 0 && tg->values[v].is_graph_input ? tg->values[v].name : NULL;
    }
    g->sopts.threads = opts ? opts->threads : 0;
    g->sopts.allocator = a;
    g->sopts.log = opts ? opts->log : NULL;
    g->sopts.log_user = opts ? opts->log_user : NULL;
    g->sopts.debug = opts ? opts->debug : 0;
    st = og_session_create(g->training, &g->sopts, &g->session);
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
    if (g->ones)
        for (int i = 0; i < g->n_outputs; i++) og_tensor_free(g->ones[i]);
    og_free(a, g->ones);
    og_free(a, g->names);
    og_free(a, g->seed_names);
    og_free(a, g->run_names);
    og_free(a, g->run_tensors);
    og_free(a, g);
}

int og_grad_output_count(const og_grad *g) { return g ? g->n_outputs : 0; }
int og_grad_input_count(const og_grad *g) { return g ? g->n_inputs : 0; }
int og_grad_weight_count(const og_grad *g) { return g ? g->n_weights : 0; }

const char *og_grad_output_name(const og_grad *g, int i)
{
    return g && i >= 0 && i < g->n_outputs ? g->names[i] : NULL;
}

const char *og_grad_input_name(const og_grad *g, int i)
{
    return g && i >= 0 && i < g->n_inputs ? g->names[g->n_outputs + i] : NULL;
}

const char *og_grad_weight_name(const og_grad *g, int i)
{
    return g && i >= 0 && i < g->n_weights ? g->names[g->n_outputs + g->n_inputs + i] : NULL;
}

const og_model *og_grad_training_model(const og_grad *g) { return g ? g->training : NULL; }

/* Ones shaped like output j, learned from a forward run of the model. */
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

og_status og_grad_run(og_grad *g, const char *const *input_names, const og_tensor *const *inputs,
                      int n_inputs, const og_tensor *const *grad_outputs, og_tensor **outputs,
                      og_tensor **grads)
{
    if (!g) return og_error(OG_ERR_INVALID_ARG, "og_grad_run: NULL gradient object");
    if (n_inputs < 0 || (n_inputs && (!input_names || !inputs)) || !outputs || !grads)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_run: bad arrays");
    const og_graph *tg = g->training->graph;
    int n_res = g->n_inputs + g->n_weights;
    og_status st = OG_OK;
    for (int j = 0; j < g->n_outputs; j++) outputs[j] = NULL;
    for (int j = 0; j < n_res; j++) grads[j] = NULL;
    if (n_inputs + g->n_outputs > tg->n_inputs)
        return og_error(OG_ERR_INVALID_ARG, "og_grad_run: too many inputs");
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
    og_tensor **all = og_calloc(g->alloc, (size_t)(g->n_outputs + n_res) + 1, sizeof *all);
    if (!all) return og_error(OG_ERR_NOMEM, "out of memory");
    st = og_session_run(g->session, g->run_names, g->run_tensors, n, all);
    if (!st) {
        for (int j = 0; j < g->n_outputs; j++) outputs[j] = all[j];
        for (int j = 0; j < n_res; j++) grads[j] = all[g->n_outputs + j];
    }
    og_free(g->alloc, all);
    return st;
}
