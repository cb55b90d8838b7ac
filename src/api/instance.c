/* instance.c: og_instance, the forward/backward mechanism of the seed: a training forward
 * runs the forward half of the training graph and keeps, on a stack, exactly the values
 * the backward half reads; backward pops the newest state and runs the backward half. */
#include <string.h>

#include "api/grad_api.h"

typedef struct og_state {
    og_tensor **t; /* saved values, then overridden weights the backward half reads */
    int *values;   /* their value ids in the training graph */
    int n;
    og_tensor **shapes; /* per selected output: a tensor of its dtype and shape (ones) */
    size_t bytes;
} og_state;

struct og_instance {
    og_grad *g;
    og_session *train, *eval;
    og_state *stack;
    int n_stack, cap_stack;
};

static void state_free(const og_allocator *a, og_state *s, int n_outputs)
{
    if (s->t)
        for (int i = 0; i < s->n; i++) og_tensor_free(s->t[i]);
    if (s->shapes)
        for (int i = 0; i < n_outputs; i++) og_tensor_free(s->shapes[i]);
    og_free(a, s->t);
    og_free(a, s->values);
    og_free(a, s->shapes);
    memset(s, 0, sizeof *s);
}

og_status og_grad_new_instance(og_grad *g, og_instance **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_grad_new_instance: out is NULL");
    *out = NULL;
    if (!g) return og_error(OG_ERR_INVALID_ARG, "og_grad_new_instance: NULL gradient object");
    og_instance *inst = og_calloc(g->alloc, 1, sizeof *inst);
    if (!inst) return og_error(OG_ERR_NOMEM, "out of memory");
    inst->g = g;
    og_status st = og_session_create_plain(g->training, &g->sopts, &inst->train);
    if (!st) st = og_session_create(g->eval, &g->sopts, &inst->eval);
    if (st) {
        og_instance_free(inst);
        return st;
    }
    *out = inst;
    return OG_OK;
}

void og_instance_free(og_instance *inst)
{
    if (!inst) return;
    const og_allocator *a = inst->g->alloc;
    for (int i = 0; i < inst->n_stack; i++) state_free(a, &inst->stack[i], inst->g->n_outputs);
    og_free(a, inst->stack);
    og_session_free(inst->train);
    og_session_free(inst->eval);
    og_free(a, inst);
}

int og_instance_pending(const og_instance *inst) { return inst ? inst->n_stack : 0; }

size_t og_instance_saved_bytes(const og_instance *inst)
{
    size_t b = 0;
    for (int i = 0; inst && i < inst->n_stack; i++) b += inst->stack[i].bytes;
    return b;
}

/* Does a backward node read value v? */
static bool read_by_backward(const og_grad *g, int v)
{
    const og_graph *tg = g->training->graph;
    for (int i = 0; i < tg->n_nodes; i++) {
        if (!g->backward[i]) continue;
        for (int k = 0; k < tg->nodes[i].n_in; k++)
            if (tg->nodes[i].in[k] == v) return true;
    }
    return false;
}

og_status og_instance_forward(og_instance *inst, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, int training,
                              og_tensor **outputs)
{
    if (!inst || !outputs)
        return og_error(OG_ERR_INVALID_ARG, "og_instance_forward: NULL argument");
    og_grad *g = inst->g;
    const og_allocator *a = g->alloc;
    for (int j = 0; j < g->n_outputs; j++) outputs[j] = NULL; /* what a failure leaves */
    if (!training)
        return og_session_run_named(inst->eval, input_names, inputs, n_inputs, g->names,
                                    g->n_outputs, outputs);
    const og_graph *tg = g->training->graph;
    og_status st = OG_OK;
    og_state s = {0};
    int n_want = g->n_outputs + g->n_saved;
    int *want = og_malloc(a, (size_t)(n_want + 1) * sizeof *want);
    og_tensor **got = og_calloc(a, (size_t)n_want + 1, sizeof *got);
    bool *run = og_malloc(a, (size_t)(tg->n_nodes + 1) * sizeof *run);
    s.t = og_calloc(a, (size_t)(g->n_saved + n_inputs) + 1, sizeof *s.t);
    s.values = og_malloc(a, (size_t)(g->n_saved + n_inputs + 1) * sizeof *s.values);
    s.shapes = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *s.shapes);
    if (!want || !got || !run || !s.t || !s.values || !s.shapes) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < g->n_outputs; j++) want[j] = g->out_values[j];
    for (int k = 0; k < g->n_saved; k++) want[g->n_outputs + k] = g->saved[k];
    for (int i = 0; i < tg->n_nodes; i++) run[i] = !g->backward[i];
    og_exec_req r = {input_names, inputs, n_inputs, NULL, NULL, 0, run, want, n_want, got};
    st = og_session_exec(inst->train, &r);
    if (st) goto done;
    for (int j = 0; j < g->n_outputs; j++) {
        og_tensor *o = got[j];
        st = og_tensor_alloc(o->dtype, o->rank, o->dims, a, &s.shapes[j]);
        if (st) goto done;
    }
    for (int k = 0; k < g->n_saved; k++) {
        s.values[s.n] = g->saved[k];
        s.t[s.n] = got[g->n_outputs + k];
        s.bytes += og_tensor_nbytes(s.t[s.n]);
        got[g->n_outputs + k] = NULL;
        s.n++;
    }
    /* weights given for this call that the backward half reads: keep a copy */
    for (int i = 0; i < n_inputs; i++) {
        int v = og_graph_find_value(tg, input_names[i]);
        if (v < 0 || tg->values[v].kind != OG_VALUE_INITIALIZER || !read_by_backward(g, v))
            continue;
        st = og_tensor_clone(inputs[i], a, &s.t[s.n]);
        if (st) goto done;
        s.values[s.n] = v;
        s.bytes += og_tensor_nbytes(s.t[s.n]);
        s.n++;
    }
    if (inst->n_stack == inst->cap_stack) {
        int cap = inst->cap_stack ? inst->cap_stack * 2 : 4;
        og_state *ns = og_realloc(a, inst->stack, (size_t)inst->n_stack * sizeof *ns,
                                  (size_t)cap * sizeof *ns);
        if (!ns) {
            st = og_error(OG_ERR_NOMEM, "out of memory");
            goto done;
        }
        inst->stack = ns;
        inst->cap_stack = cap;
    }
    inst->stack[inst->n_stack++] = s;
    memset(&s, 0, sizeof s);
    for (int j = 0; j < g->n_outputs; j++) {
        outputs[j] = got[j];
        got[j] = NULL;
    }
done:
    if (got)
        for (int k = 0; k < n_want; k++) og_tensor_free(got[k]);
    state_free(a, &s, g->n_outputs);
    og_free(a, got);
    og_free(a, want);
    og_free(a, run);
    return st;
}

og_status og_instance_backward(og_instance *inst, const og_tensor *const *grad_outputs,
                               og_tensor **grads)
{
    if (!inst || !grads) return og_error(OG_ERR_INVALID_ARG, "og_instance_backward: NULL argument");
    og_grad *g = inst->g;
    const og_allocator *a = g->alloc;
    int n_res = g->n_inputs + g->n_weights;
    for (int k = 0; k < n_res; k++) grads[k] = NULL;
    if (inst->n_stack == 0)
        return og_error(OG_ERR_INVALID_ARG,
                        "backward needs a pending training forward (og_instance_forward with "
                        "training set), and none is pending");
    og_state *s = &inst->stack[inst->n_stack - 1];
    const og_graph *tg = g->training->graph;
    og_status st = OG_OK;
    const char **names = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *names);
    const og_tensor **seeds = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *seeds);
    og_tensor **ones = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *ones);
    bool *run = og_malloc(a, (size_t)(tg->n_nodes + 1) * sizeof *run);
    if (!names || !seeds || !ones || !run) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    int n = 0;
    for (int j = 0; j < g->n_outputs; j++) {
        if (g->seed_values[j] < 0) continue;
        const og_tensor *want = s->shapes[j], *gv = grad_outputs ? grad_outputs[j] : NULL;
        if (gv) {
            bool same = gv->dtype == want->dtype && gv->rank == want->rank &&
                        memcmp(gv->dims, want->dims, (size_t)gv->rank * sizeof *gv->dims) == 0;
            if (!same) {
                char x[128], y[128];
                st = og_error(
                    gv->dtype != want->dtype ? OG_ERR_TYPE : OG_ERR_SHAPE,
                    "the gradient of output '%s' is %s %s; the output is %s %s", g->names[j],
                    og_dtype_name(gv->dtype), og_shape_str(gv->rank, gv->dims, x, sizeof x),
                    og_dtype_name(want->dtype), og_shape_str(want->rank, want->dims, y, sizeof y));
                goto done;
            }
        } else {
            st = og_tensor_alloc(want->dtype, want->rank, want->dims, a, &ones[j]);
            if (st) goto done;
            for (int64_t i = 0; i < want->numel; i++) {
                if (want->dtype == OG_FLOAT)
                    ((float *)ones[j]->data)[i] = 1.0f;
                else if (want->dtype == OG_DOUBLE)
                    ((double *)ones[j]->data)[i] = 1.0;
                else if (want->dtype == OG_FLOAT16)
                    ((uint16_t *)ones[j]->data)[i] = 0x3c00;
            }
            gv = ones[j];
        }
        names[n] = tg->values[g->seed_values[j]].name;
        seeds[n++] = gv;
    }
    for (int i = 0; i < tg->n_nodes; i++) run[i] = g->backward[i];
    og_exec_req r = {names,
                     seeds,
                     n,
                     s->values,
                     (const og_tensor *const *)s->t,
                     s->n,
                     run,
                     g->out_values + g->n_outputs,
                     n_res,
                     grads};
    st = og_session_exec(inst->train, &r);
    if (!st) {
        state_free(a, s, g->n_outputs);
        inst->n_stack--;
    }
done:
    if (ones)
        for (int j = 0; j < g->n_outputs; j++) og_tensor_free(ones[j]);
    og_free(a, ones);
    og_free(a, names);
    og_free(a, seeds);
    og_free(a, run);
    return st;
}
