/* instance.c: og_instance, the forward/backward mechanism of the seed: a training forward
 * runs the forward half of the training graph and keeps, on a stack, exactly the values
 * the backward half reads; backward pops the newest state and runs the backward half. */
#include <string.h>

#include "api/grad_api.h"

/* dtype and shape of an output of a pending forward: what its gradient must have */
typedef struct og_shape {
    og_dtype dtype;
    int rank;
    int64_t dims[OG_MAX_RANK];
    int64_t numel;
} og_shape;

typedef struct og_state {
    og_tensor **t; /* saved values, then overridden weights the backward half reads */
    int *values;   /* their value ids in the training graph */
    int n;
    og_shape *shapes; /* per selected output */
    size_t bytes;
} og_state;

struct og_instance {
    og_grad *g;
    og_session *train, *eval;
    og_state *stack;
    int n_stack, cap_stack;
    /* bound calls: forward slots (model inputs, then weights) and seed slots */
    int n_slots;
    const char **slot_names; /* owned by the training graph */
    og_tensor **slots, **seeds;
    const char **call_names; /* scratch for a bound call */
    const og_tensor **call_tensors;
    /* what every call needs, made once: the values a training forward hands back (outputs,
     * then the saved values) and which of them may be views, the nodes of each half, the
     * values backward nodes read; scratch arrays for the results and the seeds */
    int n_want;
    int *want;
    bool *share_saved;
    bool *run_fw, *run_bw;
    bool *bw_reads;
    og_tensor **got;
    const char **bw_names;
    const og_tensor **bw_seeds;
    og_tensor **bw_ones;
    atomic_int busy; /* a call is running: another thread's call is refused */
};

/* Enter a call on inst (one at a time per instance; shared use of its gradient object,
 * which og_grad_set_weight must not change meanwhile). */
static og_status instance_enter(og_instance *inst, const char *fn)
{
    if (atomic_exchange(&inst->busy, 1))
        return og_error(OG_ERR_BUSY,
                        "%s: the instance is running a call in another thread (one thread at a "
                        "time per instance: make one instance per thread)",
                        fn);
    if (!og_grad_enter_shared(inst->g)) {
        atomic_store(&inst->busy, 0);
        return og_error(OG_ERR_BUSY,
                        "%s: og_grad_set_weight is changing the weights in another thread", fn);
    }
    return OG_OK;
}

static void instance_leave(og_instance *inst)
{
    og_grad_leave_shared(inst->g);
    atomic_store(&inst->busy, 0);
}

static void state_free(const og_allocator *a, og_state *s)
{
    if (s->t)
        for (int i = 0; i < s->n; i++) og_tensor_free(s->t[i]);
    og_free(a, s->t);
    og_free(a, s->values);
    og_free(a, s->shapes);
    memset(s, 0, sizeof *s);
}

/* The arrays every call of inst uses (see struct og_instance). */
static og_status prepare(og_instance *inst)
{
    og_grad *g = inst->g;
    const og_allocator *a = g->alloc;
    const og_graph *tg = g->training->graph;
    inst->n_want = g->n_outputs + g->n_saved;
    inst->want = og_malloc(a, (size_t)(inst->n_want + 1) * sizeof *inst->want);
    inst->share_saved = og_calloc(a, (size_t)inst->n_want + 1, sizeof *inst->share_saved);
    inst->run_fw = og_malloc(a, (size_t)(tg->n_nodes + 1) * sizeof *inst->run_fw);
    inst->run_bw = og_malloc(a, (size_t)(tg->n_nodes + 1) * sizeof *inst->run_bw);
    inst->bw_reads = og_calloc(a, (size_t)tg->n_values + 1, sizeof *inst->bw_reads);
    inst->got = og_calloc(a, (size_t)inst->n_want + 1, sizeof *inst->got);
    inst->bw_names = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *inst->bw_names);
    inst->bw_seeds = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *inst->bw_seeds);
    inst->bw_ones = og_calloc(a, (size_t)g->n_outputs + 1, sizeof *inst->bw_ones);
    if (!inst->want || !inst->share_saved || !inst->run_fw || !inst->run_bw || !inst->bw_reads ||
        !inst->got || !inst->bw_names || !inst->bw_seeds || !inst->bw_ones)
        return og_error(OG_ERR_NOMEM, "out of memory");
    for (int j = 0; j < g->n_outputs; j++) inst->want[j] = g->out_values[j];
    for (int k = 0; k < g->n_saved; k++) {
        inst->want[g->n_outputs + k] = g->saved[k];
        inst->share_saved[g->n_outputs + k] = true;
    }
    for (int i = 0; i < tg->n_nodes; i++) {
        inst->run_fw[i] = !g->backward[i];
        inst->run_bw[i] = g->backward[i];
        if (!g->backward[i]) continue;
        for (int k = 0; k < tg->nodes[i].n_in; k++)
            if (tg->nodes[i].in[k] >= 0) inst->bw_reads[tg->nodes[i].in[k]] = true;
    }
    return OG_OK;
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
    if (!st) st = og_session_create_mutable(g->eval, &g->sopts, &inst->eval);
    if (!st) st = prepare(inst);
    if (st) {
        og_instance_free(inst);
        return st;
    }
    /* the forward slots: the eval graph's inputs without initializer, then the weights */
    const og_graph *eg = g->eval->graph;
    int n_in = 0;
    for (int i = 0; i < eg->n_inputs; i++) n_in += eg->values[eg->inputs[i]].kind == OG_VALUE_INPUT;
    inst->n_slots = n_in + g->n_weights;
    int n_call = inst->n_slots > g->n_outputs ? inst->n_slots : g->n_outputs;
    inst->slot_names = og_calloc(g->alloc, (size_t)inst->n_slots + 1, sizeof *inst->slot_names);
    inst->slots = og_calloc(g->alloc, (size_t)inst->n_slots + 1, sizeof *inst->slots);
    inst->seeds = og_calloc(g->alloc, (size_t)g->n_outputs + 1, sizeof *inst->seeds);
    inst->call_names = og_calloc(g->alloc, (size_t)n_call + 1, sizeof *inst->call_names);
    inst->call_tensors = og_calloc(g->alloc, (size_t)n_call + 1, sizeof *inst->call_tensors);
    if (!inst->slot_names || !inst->slots || !inst->seeds || !inst->call_names ||
        !inst->call_tensors) {
        og_instance_free(inst);
        return og_error(OG_ERR_NOMEM, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < eg->n_inputs; i++)
        if (eg->values[eg->inputs[i]].kind == OG_VALUE_INPUT)
            inst->slot_names[k++] = eg->values[eg->inputs[i]].name;
    for (int i = 0; i < g->n_weights; i++)
        inst->slot_names[k++] = g->names[g->n_outputs + g->n_inputs + i];
    *out = inst;
    return OG_OK;
}

void og_instance_free(og_instance *inst)
{
    if (!inst) return;
    const og_allocator *a = inst->g->alloc;
    for (int i = 0; i < inst->n_stack; i++) state_free(a, &inst->stack[i]);
    og_free(a, inst->stack);
    for (int i = 0; inst->slots && i < inst->n_slots; i++) og_tensor_free(inst->slots[i]);
    for (int j = 0; inst->seeds && j < inst->g->n_outputs; j++) og_tensor_free(inst->seeds[j]);
    for (int j = 0; inst->bw_ones && j < inst->g->n_outputs; j++) og_tensor_free(inst->bw_ones[j]);
    og_free(a, inst->slots);
    og_free(a, inst->seeds);
    og_free(a, inst->slot_names);
    og_free(a, inst->call_names);
    og_free(a, inst->call_tensors);
    og_free(a, inst->want);
    og_free(a, inst->share_saved);
    og_free(a, inst->run_fw);
    og_free(a, inst->run_bw);
    og_free(a, inst->bw_reads);
    og_free(a, inst->got);
    og_free(a, inst->bw_names);
    og_free(a, inst->bw_seeds);
    og_free(a, inst->bw_ones);
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

/* A forward.  share: the caller keeps the inputs' memory alive until the matching backward,
 * so the state keeps views of what backward reads instead of copies. */
static og_status forward(og_instance *inst, const char *const *input_names,
                         const og_tensor *const *inputs, int n_inputs, int training, bool share,
                         og_tensor **outputs)
{
    og_grad *g = inst->g;
    const og_allocator *a = g->alloc;
    for (int j = 0; j < g->n_outputs; j++) outputs[j] = NULL; /* what a failure leaves */
    if (!training)
        return og_session_run_named(inst->eval, input_names, inputs, n_inputs, g->names,
                                    g->n_outputs, outputs);
    const og_graph *tg = g->training->graph;
    og_status st = OG_OK;
    og_state s = {0};
    int n_want = inst->n_want;
    og_tensor **got = inst->got;
    s.t = og_calloc(a, (size_t)(g->n_saved + n_inputs) + 1, sizeof *s.t);
    s.values = og_malloc(a, (size_t)(g->n_saved + n_inputs + 1) * sizeof *s.values);
    s.shapes = og_malloc(a, (size_t)(g->n_outputs + 1) * sizeof *s.shapes);
    if (!s.t || !s.values || !s.shapes) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    og_exec_req r = {input_names,
                     inputs,
                     n_inputs,
                     NULL,
                     NULL,
                     0,
                     inst->run_fw,
                     inst->want,
                     n_want,
                     got,
                     share ? inst->share_saved : NULL,
                     NULL,
                     false};
    st = og_session_exec(inst->train, &r);
    if (st) goto done;
    for (int j = 0; j < g->n_outputs; j++) {
        og_shape *sh = &s.shapes[j];
        sh->dtype = got[j]->dtype;
        sh->rank = got[j]->rank;
        memcpy(sh->dims, got[j]->dims, sizeof sh->dims);
        sh->numel = got[j]->numel;
    }
    for (int k = 0; k < g->n_saved; k++) {
        s.values[s.n] = g->saved[k];
        s.t[s.n] = got[g->n_outputs + k];
        s.bytes += og_tensor_nbytes(s.t[s.n]);
        got[g->n_outputs + k] = NULL;
        s.n++;
    }
    /* weights given for this call that the backward half reads: keep a copy (a view when
     * the caller keeps them alive) */
    for (int i = 0; i < n_inputs; i++) {
        int v = og_graph_find_value(tg, input_names[i]);
        if (v < 0 || tg->values[v].kind != OG_VALUE_INITIALIZER || !inst->bw_reads[v]) continue;
        st = share ? og_tensor_view(inputs[i], inputs[i]->rank, inputs[i]->dims, &s.t[s.n])
                   : og_tensor_clone(inputs[i], a, &s.t[s.n]);
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
    for (int k = 0; k < n_want; k++) {
        og_tensor_free(got[k]);
        got[k] = NULL;
    }
    state_free(a, &s);
    return st;
}

og_status og_instance_forward(og_instance *inst, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, int training,
                              og_tensor **outputs)
{
    if (!inst || !outputs)
        return og_error(OG_ERR_INVALID_ARG, "og_instance_forward: NULL argument");
    for (int j = 0; j < inst->g->n_outputs; j++) outputs[j] = NULL; /* what a failure leaves */
    og_status st = instance_enter(inst, "og_instance_forward");
    if (st) return st;
    st = forward(inst, input_names, inputs, n_inputs, training, false, outputs);
    instance_leave(inst);
    return st;
}

/* A backward (the caller has entered inst). */
static og_status backward(og_instance *inst, const og_tensor *const *grad_outputs,
                          og_tensor **grads)
{
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
    const char **names = inst->bw_names;
    const og_tensor **seeds = inst->bw_seeds;
    og_tensor **ones = inst->bw_ones;
    int n = 0;
    for (int j = 0; j < g->n_outputs; j++) {
        if (g->seed_values[j] < 0) continue;
        const og_shape *want = &s->shapes[j];
        const og_tensor *gv = grad_outputs ? grad_outputs[j] : NULL;
        if (gv) {
            bool same = gv->dtype == want->dtype && gv->rank == want->rank &&
                        memcmp(gv->dims, want->dims, (size_t)gv->rank * sizeof *gv->dims) == 0;
            if (!same) {
                char x[128], y[128];
                return og_error(
                    gv->dtype != want->dtype ? OG_ERR_TYPE : OG_ERR_SHAPE,
                    "the gradient of output '%s' is %s %s; the output is %s %s", g->names[j],
                    og_dtype_name(gv->dtype), og_shape_str(gv->rank, gv->dims, x, sizeof x),
                    og_dtype_name(want->dtype), og_shape_str(want->rank, want->dims, y, sizeof y));
            }
        } else {
            /* ones of the output's shape, kept for the next call of the same shape */
            og_tensor *o = ones[j];
            if (!o || o->dtype != want->dtype || o->rank != want->rank ||
                memcmp(o->dims, want->dims, (size_t)want->rank * sizeof *want->dims) != 0) {
                og_tensor_free(o);
                ones[j] = NULL;
                st = og_tensor_alloc(want->dtype, want->rank, want->dims, a, &ones[j]);
                if (st) return st;
                o = ones[j];
                for (int64_t i = 0; i < want->numel; i++) {
                    if (want->dtype == OG_FLOAT)
                        ((float *)o->data)[i] = 1.0f;
                    else if (want->dtype == OG_DOUBLE)
                        ((double *)o->data)[i] = 1.0;
                    else if (want->dtype == OG_FLOAT16)
                        ((uint16_t *)o->data)[i] = 0x3c00;
                }
            }
            gv = o;
        }
        names[n] = tg->values[g->seed_values[j]].name;
        seeds[n++] = gv;
    }
    og_exec_req r = {names,
                     seeds,
                     n,
                     s->values,
                     (const og_tensor *const *)s->t,
                     s->n,
                     inst->run_bw,
                     g->out_values + g->n_outputs,
                     n_res,
                     grads,
                     NULL,
                     NULL,
                     false};
    st = og_session_exec(inst->train, &r);
    if (!st) {
        state_free(a, s);
        inst->n_stack--;
    }
    return st;
}

og_status og_instance_backward(og_instance *inst, const og_tensor *const *grad_outputs,
                               og_tensor **grads)
{
    if (!inst || !grads) return og_error(OG_ERR_INVALID_ARG, "og_instance_backward: NULL argument");
    for (int k = 0; k < inst->g->n_inputs + inst->g->n_weights; k++) grads[k] = NULL;
    og_status st = instance_enter(inst, "og_instance_backward");
    if (st) return st;
    st = backward(inst, grad_outputs, grads);
    instance_leave(inst);
    return st;
}

int og_instance_slot_count(const og_instance *inst) { return inst ? inst->n_slots : 0; }

const char *og_instance_slot_name(const og_instance *inst, int slot)
{
    if (!og_api_index_ok("og_instance_slot_name", "slot", slot, og_instance_slot_count(inst)))
        return NULL;
    return inst->slot_names[slot];
}

og_status og_instance_bind(og_instance *inst, int backward, int slot, og_tensor *t)
{
    int n = !inst ? 0 : backward ? inst->g->n_outputs : inst->n_slots;
    if (!inst) {
        og_tensor_free(t);
        return og_error(OG_ERR_INVALID_ARG, "og_instance_bind: NULL instance");
    }
    if (!og_api_index_ok("og_instance_bind", backward ? "seed slot" : "forward slot", slot, n)) {
        og_tensor_free(t);
        return OG_ERR_INVALID_ARG;
    }
    og_status st = instance_enter(inst, "og_instance_bind");
    if (st) {
        og_tensor_free(t);
        return st;
    }
    og_tensor **where = backward ? &inst->seeds[slot] : &inst->slots[slot];
    og_tensor_free(*where); /* pending states hold views of what they need */
    *where = t;
    instance_leave(inst);
    return OG_OK;
}

/* Results into the caller's block (see og_instance_forward_bound), info updated. */
static void pack_small(og_tensor **res, int n, int64_t *info, void *block, size_t block_bytes)
{
    size_t off = 0;
    for (int k = 0; block && k < n; k++) {
        og_tensor *t = res[k];
        size_t nb = og_tensor_nbytes(t);
        /* empty tensors, strings and containers are handed over */
        const void *src = og_tensor_cdata(t);
        if (!t || !src || !nb || og_tensor_kind(t) != OG_KIND_TENSOR ||
            og_tensor_dtype(t) == OG_STRING || nb > OG_BLOCK_RESULT_MAX || nb > block_bytes ||
            off > block_bytes - nb)
            continue;
        char *dst = (char *)block + off;
        memcpy(dst, src, nb);
        if (info) info[(size_t)k * OG_TENSOR_INFO_SIZE] = (int64_t)(intptr_t)dst;
        og_tensor_free(t);
        res[k] = NULL;
        off += (nb + 63) / 64 * 64;
    }
}

og_status og_instance_forward_bound(og_instance *inst, int training, og_tensor **outputs,
                                    int64_t *info, void *block, size_t block_bytes)
{
    if (!inst || !outputs)
        return og_error(OG_ERR_INVALID_ARG, "og_instance_forward_bound: NULL argument");
    for (int j = 0; j < inst->g->n_outputs; j++) outputs[j] = NULL; /* what a failure leaves */
    og_status st = instance_enter(inst, "og_instance_forward_bound");
    if (st) return st;
    int n = 0;
    for (int i = 0; i < inst->n_slots; i++) {
        if (!inst->slots[i]) continue;
        inst->call_names[n] = inst->slot_names[i];
        inst->call_tensors[n++] = inst->slots[i];
    }
    st = forward(inst, inst->call_names, inst->call_tensors, n, training, true, outputs);
    if (!st) {
        if (info) og_tensor_info((const og_tensor *const *)outputs, inst->g->n_outputs, info);
        pack_small(outputs, inst->g->n_outputs, info, block, block_bytes);
    }
    instance_leave(inst);
    return st;
}

og_status og_instance_backward_bound(og_instance *inst, og_tensor **grads, int64_t *info,
                                     void *block, size_t block_bytes)
{
    if (!inst || !grads)
        return og_error(OG_ERR_INVALID_ARG, "og_instance_backward_bound: NULL argument");
    int n = inst->g->n_inputs + inst->g->n_weights;
    for (int k = 0; k < n; k++) grads[k] = NULL;
    og_status st = instance_enter(inst, "og_instance_backward_bound");
    if (st) return st;
    st = backward(inst, (const og_tensor *const *)inst->seeds, grads);
    if (!st) {
        if (info) og_tensor_info((const og_tensor *const *)grads, n, info);
        pack_small(grads, n, info, block, block_bytes);
    }
    instance_leave(inst);
    return st;
}
