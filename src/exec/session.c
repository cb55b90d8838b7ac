/* session.c: planning and running a graph on a device.
 *
 * Creating a session binds every node to the device's kernel once (kernels/kernel.h: op,
 * since-version and the static dtype of its type input), so what the device cannot compute
 * fails then, naming the node.  Nothing else is planned ahead: shapes may change from run
 * to run, so a run walks the nodes in topological order.  For each node it asks the op's infer for
 * the output shapes (with every input's data at hand), takes output buffers from the
 * session's pool, calls the CPU kernel, and gives each input's buffer back to the pool
 * right after its last reader ran, so the memory in use stays near the largest set of
 * values alive at once, and a second run reuses the blocks of the first. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/rng.h"
#include "exec/exec_internal.h"
#include "exec/fuse.h"
#include "ops/tensor_shared.h"
#include "kernels/cpu/conv_wgrad.h"

og_status og_exec_create(const og_graph *g, const og_backend *backend, const og_allocator *host,
                         const og_session_options *opts, bool fuse, og_session **out)
{
    return og_exec_create_in(g, backend, host, opts, fuse, NULL, out);
}

og_status og_exec_create_in(const og_graph *g, const og_backend *backend, const og_allocator *host,
                            const og_session_options *opts, bool fuse, og_workers *shared,
                            og_session **out)
{
    *out = NULL;
    const og_allocator *a = opts && opts->allocator ? opts->allocator : host;
    og_status st = OG_OK;
    og_dtype *in_types = NULL, *out_types = NULL;
    og_session *s = og_calloc(a, 1, sizeof *s);
    if (!s) return og_error(OG_ERR_NOMEM, "out of memory creating a session");
    s->g = g;
    s->root = og_graph_root(g);
    s->backend = backend ? backend : &og_cpu_backend;
    s->alloc = s->backend->allocator(a);
    s->threads = opts ? opts->threads : 0;
    s->rng_seed = opts ? opts->seed : 0;
    if (s->threads < 0) {
        st = og_error(OG_ERR_INVALID_ARG, "threads must be >= 0, got %d", s->threads);
        goto fail;
    }
    if (s->threads == 0) {
#ifdef _OPENMP
        s->threads = omp_get_num_procs();
#else
        s->threads = 1;
#endif
    }
    /* the threads beside the caller's, for the CPU kernels' loops (a subgraph's session
     * uses its parent's); without them (the system refused), the kernels use OpenMP's */
    if (shared)
        s->workers = shared;
    else if (s->threads > 1) {
        s->workers = og_workers_new(s->alloc, s->threads);
        s->owns_workers = s->workers != NULL;
    }
    if (opts) {
        s->log = opts->log;
        s->log_user = opts->log_user;
        s->debug = opts->debug;
    }
    s->pool = og_pool_new(a);
    if (!s->pool) goto nomem;
    int64_t budget = opts ? opts->max_memory : 0;
    if (budget < 0) {
        st = og_error(OG_ERR_INVALID_ARG, "og_session_options.max_memory must be >= 0, got %lld",
                      (long long)budget);
        goto fail;
    }
    og_pool_set_budget(s->pool, budget ? (size_t)budget : (size_t)OG_DEFAULT_MAX_MEMORY);
    size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
    s->kernels = og_calloc(a, nn, sizeof *s->kernels);
    s->last_use = og_calloc(a, nv, sizeof *s->last_use);
    s->slot = og_calloc(a, nv, sizeof *s->slot);
    s->owned = og_calloc(a, nv, sizeof *s->owned);
    s->keep = og_calloc(a, nv, sizeof *s->keep);
    s->want_at = og_malloc(a, nv * sizeof *s->want_at);
    s->placed = og_calloc(a, nv, sizeof *s->placed);
    s->n_sym = s->root->n_symbols;
    s->sym = og_calloc(a, (size_t)s->n_sym + 1, sizeof *s->sym);
    s->subs = og_calloc(a, nn, sizeof *s->subs);
    if (!s->kernels || !s->last_use || !s->slot || !s->owned || !s->keep || !s->want_at ||
        !s->placed || !s->sym || !s->subs)
        goto nomem;
    for (int v = 0; v < g->n_values; v++) s->last_use[v] = s->want_at[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        if (n->n_in > s->max_in) s->max_in = n->n_in;
        if (n->n_out > s->max_out) s->max_out = n->n_out;
    }
    in_types = og_calloc(a, (size_t)s->max_in + 1, sizeof *in_types);
    out_types = og_calloc(a, (size_t)s->max_out + 1, sizeof *out_types);
    if (!in_types || !out_types) goto nomem;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        char label[256];
        if (!n->op) {
            st = og_error(OG_ERR_UNSUPPORTED, "%s: op %s is not implemented",
                          og_node_label(n, label, sizeof label), n->op_type);
            goto fail;
        }
        if (n->op->flags & OG_OP_CONTROL) {
            /* run here, no kernel: its subgraphs get sessions of their own */
            st = og_exec_create_subs(s, i, opts);
            if (st) goto fail;
        } else {
            for (int j = 0; j < n->n_in; j++)
                in_types[j] = n->in[j] >= 0 ? g->values[n->in[j]].dtype : OG_UNDEFINED;
            for (int j = 0; j < n->n_out; j++)
                out_types[j] = n->out[j] >= 0 ? g->values[n->out[j]].dtype : OG_UNDEFINED;
            st = og_backend_bind(s->backend, n, in_types, out_types, &s->kernels[i]);
            if (st) goto fail;
        }
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0) s->last_use[n->in[j]] = i;
    }
    /* activations into their producers (inference sessions), and weight gradients' Convs
     * on the CPU (every session) */
    s->fusion = og_calloc(a, nn, sizeof *s->fusion);
    s->internal = og_calloc(a, nv, sizeof *s->internal);
    s->fused_last_use = og_malloc(a, nv * sizeof *s->fused_last_use);
    s->kcache = og_calloc(a, nn, sizeof *s->kcache);
    if (!s->fusion || !s->internal || !s->fused_last_use || !s->kcache) goto nomem;
    if (fuse)
        s->n_fused = s->n_fused_act = og_fusion_plan(g, s->kernels, s->fusion, s->internal);
    else
        og_fusion_clear(g, s->fusion, s->internal);
    if (fuse && s->backend == &og_cpu_backend)
        s->n_fused += s->n_fused_pre = og_fusion_plan_pwdw(g, s->kernels, s->fusion, s->internal);
    if (fuse && s->backend == &og_cpu_backend)
        s->n_fused += s->n_fused_pool = og_fusion_plan_pool(g, s->kernels, s->fusion, s->internal);
    if (fuse && s->backend == &og_cpu_backend)
        s->n_fused += s->n_fused_res = og_fusion_plan_res(g, s->kernels, s->fusion, s->internal);
    if (s->backend == &og_cpu_backend)
        s->n_fused += og_fusion_plan_wgrad(g, s->kernels, s->fusion, s->internal);
    if (s->backend == &og_cpu_backend && !s->debug)
        s->n_fused += s->n_fused_tr =
            og_fusion_plan_transpose(g, s->kernels, s->fusion, s->internal, s->fused_last_use);
    if (s->backend == &og_cpu_backend && !s->debug) {
        st = og_ew_plan_make(g, s->kernels, s->fusion, s->internal, a, &s->ew);
        if (st) goto fail;
    }
    for (int v = 0; v < g->n_values; v++) s->fused_last_use[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        if (s->fusion[i].skip) continue;
        if (s->fusion[i].wg_x >= 0) {
            s->fused_last_use[s->fusion[i].wg_x] = s->fused_last_use[s->fusion[i].wg_dy] = i;
            continue;
        }
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0) s->fused_last_use[n->in[j]] = i;
        for (int j = 0; j < 2; j++) /* reads its Transpose's input instead of in[j] */
            if (s->fusion[i].tr[j] >= 0) s->fused_last_use[g->nodes[s->fusion[i].tr[j]].in[0]] = i;
        if (s->fusion[i].res >= 0) /* adds the residual of the Add it runs */
            s->fused_last_use[s->fusion[i].res] = i;
        if (s->fusion[i].pre >= 0) { /* reads its pointwise Conv's inputs instead of in[0] */
            const og_node *p = &g->nodes[s->fusion[i].pre];
            for (int j = 0; j < p->n_in; j++)
                if (p->in[j] >= 0) s->fused_last_use[p->in[j]] = i;
        }
    }
    s->vin = og_calloc(a, (size_t)s->max_in + 1, sizeof *s->vin);
    s->vout = og_calloc(a, (size_t)s->max_out + 1, sizeof *s->vout);
    s->tin = og_calloc(a, (size_t)s->max_in + 1, sizeof *s->tin);
    s->tout = og_calloc(a, (size_t)s->max_out + 1, sizeof *s->tout);
    if (!s->vin || !s->vout || !s->tin || !s->tout) goto nomem;
    og_logf(s->log, s->log_user, OG_LOG_INFO,
            "session: %d nodes, %d values, %d threads, %s kernels, %d activation nodes fused, "
            "%d pointwise Convs run in the depthwise Conv of their output, "
            "%d MaxPools run in the Conv of their input, %d Adds run in the Conv of an input, "
            "%d nodes of weight gradients fused, %d Transposes read in place by MatMuls, "
            "%d element-wise nodes in %d loops",
            g->n_nodes, g->n_values, s->threads, s->backend->name, s->n_fused_act, s->n_fused_pre,
            s->n_fused_pool, s->n_fused_res,
            s->n_fused - s->n_fused_act - s->n_fused_pre - s->n_fused_pool - s->n_fused_res -
                s->n_fused_tr,
            s->n_fused_tr, s->ew.n_members, s->ew.n_groups);
    og_free(a, in_types);
    og_free(a, out_types);
    *out = s;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory creating a session");
fail:
    og_free(a, in_types);
    og_free(a, out_types);
    og_session_free(s);
    return st;
}

static void release_slots(og_session *s)
{
    for (int v = 0; v < s->g->n_values; v++) {
        if (s->owned[v]) og_tensor_free(s->slot[v]);
        s->slot[v] = NULL;
        s->owned[v] = false;
        s->keep[v] = false;
        s->want_at[v] = -1;
        s->placed[v] = false;
    }
    s->placing = NULL;
}

og_workers *og_exec_workers(const og_session *s) { return s ? s->workers : NULL; }

void og_exec_set_init_mutable(og_session *s)
{
    s->init_mutable = true;
    for (int i = 0; s->kcache && i < s->g->n_nodes; i++) s->kcache[i].key = NULL;
    /* and the sessions of its nodes' subgraphs (If, Loop, Scan bodies: two at most) */
    for (int i = 0; s->subs && i < s->g->n_nodes; i++)
        for (int k = 0; s->subs[i] && k < 2; k++)
            if (s->subs[i][k].s) og_exec_set_init_mutable(s->subs[i][k].s);
}

void og_session_free(og_session *s)
{
    if (!s) return;
    const og_allocator *a = s->alloc;
    if (s->slot && s->owned && s->keep && s->want_at && s->placed) release_slots(s);
    og_exec_free_subs(s);
    if (s->owns_workers) og_workers_free(s->workers);
    /* the kernels' scratch came from the pool's budgeted allocator (og_kernel_ctx.alloc) */
    if (s->pool) og_free_aligned(og_pool_allocator(s->pool), s->scratch.data);
    for (int i = 0; s->pool && s->kcache && i < s->g->n_nodes; i++)
        og_free_aligned(og_pool_allocator(s->pool), s->kcache[i].data);
    og_free(a, s->kcache);
    og_pool_close(s->pool);
    og_free(a, s->kernels);
    og_free(a, s->last_use);
    og_free(a, s->slot);
    og_free(a, s->owned);
    og_free(a, s->keep);
    og_free(a, s->want_at);
    og_free(a, s->placed);
    og_free(a, s->sym);
    og_free(a, s->vin);
    og_free(a, s->vout);
    og_free(a, s->tin);
    og_free(a, s->tout);
    og_free(a, s->fusion);
    og_free(a, s->internal);
    og_free(a, s->fused_last_use);
    og_ew_plan_free(&s->ew, a);
    og_free(a, s);
}

/* Check a bound input against its declaration; symbolic dims must agree across inputs.
 * item_shapes false: the shapes of a container's items are not compared. */
static og_status check_input(og_session *s, const og_value *v, const og_tensor *t, bool item_shapes)
{
    char a[128], b[128];
    if (v->type || t->kind != OG_KIND_TENSOR) {
        char why[300], ty[256];
        if (!v->type && (v->dtype != OG_UNDEFINED || v->rank >= 0))
            return og_error(OG_ERR_TYPE, "input '%s' must be a tensor (%s), got a %s", v->name,
                            og_value_type_str(s->g, v, ty, sizeof ty), og_kind_name(t->kind));
        if (!(item_shapes ? og_value_fits : og_value_fits_kind)(t, v->type, why, sizeof why))
            return og_error(OG_ERR_TYPE, "input '%s' must be %s, got %s", v->name,
                            og_value_type_str(s->g, v, ty, sizeof ty), why);
        return OG_OK;
    }
    if (v->dtype != OG_UNDEFINED && t->dtype != v->dtype)
        return og_error(OG_ERR_TYPE, "input '%s' must be %s, got %s", v->name,
                        og_dtype_name(v->dtype), og_dtype_name(t->dtype));
    if (v->rank >= 0 && t->rank != v->rank)
        return og_error(OG_ERR_SHAPE, "input '%s' must have rank %d (shape %s), got shape %s",
                        v->name, v->rank, og_shape_str(v->rank, v->dims, a, sizeof a),
                        og_shape_str(t->rank, t->dims, b, sizeof b));
    for (int d = 0; v->rank >= 0 && d < v->rank; d++) {
        int64_t want = v->dims[d];
        if (want >= 0 && t->dims[d] != want)
            return og_error(OG_ERR_SHAPE, "input '%s' must have shape %s, got %s (dim %d)", v->name,
                            og_shape_str(v->rank, v->dims, a, sizeof a),
                            og_shape_str(t->rank, t->dims, b, sizeof b), d);
        if (want < 0 && want != OG_DIM_UNKNOWN && -1 - want < s->n_sym) {
            int64_t sym = -1 - want;
            if (s->sym[sym] < 0) {
                s->sym[sym] = t->dims[d];
            } else if (s->sym[sym] != t->dims[d]) {
                return og_error(OG_ERR_SHAPE,
                                "input '%s': dim %d ('%s') is %lld, but another "
                                "input set '%s' to %lld",
                                v->name, d, s->root->symbols[sym], (long long)t->dims[d],
                                s->root->symbols[sym], (long long)s->sym[sym]);
            }
        }
    }
    return OG_OK;
}

static og_status check_finite(const og_kernel_ctx *k, const og_tensor *t, const char *name)
{
    if (t->kind != OG_KIND_TENSOR) return OG_OK;
    for (int64_t i = 0; i < t->numel; i++) {
        double x = t->dtype == OG_FLOAT    ? ((const float *)t->data)[i]
                   : t->dtype == OG_DOUBLE ? ((const double *)t->data)[i]
                                           : 0.0;
        if (!isfinite(x))
            return og_kernel_error(k, OG_ERR_RUNTIME,
                                   "output '%s' has a non-finite value "
                                   "(%g) at flat index %lld",
                                   name, x, (long long)i);
    }
    return OG_OK;
}

/* The value node ni's output j is written to: with the fusion plan in use, a producer's
 * output 0 is its activation's output. */
static int out_value(const og_session *s, int ni, int j)
{
    if (j == 0 && s->fused_run && s->fusion[ni].out >= 0) return s->fusion[ni].out;
    return s->g->nodes[ni].out[j];
}

/* Whether node ni is a Constant that the fusion plan leaves without a reader (the bounds
 * of a Clip fused into its producer, which the plan holds): nothing reads its outputs in a
 * fused run and the caller wants none of them (MobileNet-v2 ran 35 of them per run). */
static bool fused_dead(const og_session *s, int ni)
{
    const og_node *n = &s->g->nodes[ni];
    if (!n->op_type || strcmp(n->op_type, "Constant") != 0 || (n->domain && n->domain[0]))
        return false;
    for (int k = 0; k < n->n_out; k++) {
        const int v = n->out[k];
        if (v >= 0 && (s->fused_last_use[v] >= 0 || s->keep[v] || s->g->values[v].is_graph_output))
            return false;
    }
    return true;
}

/* A failed allocation for output j (-1: the kernel's scratch, whose size the pool
 * remembers): OG_ERR_LIMIT when the budget refused it, else OG_ERR_NOMEM. */
og_status og_exec_budget_error(og_session *s, const og_node *n, int j, size_t nbytes,
                               const og_vinfo *vo)
{
    char label[256], shape[128], what[192];
    size_t held, budget, refused;
    og_pool_usage(s->pool, &held, &budget, &refused);
    og_node_label(n, label, sizeof label);
    if (j >= 0)
        snprintf(what, sizeof what, "output %d of shape %s", j,
                 og_shape_str(vo->rank, vo->dims, shape, sizeof shape));
    else
        snprintf(what, sizeof what, "%s",
                 n->op && (n->op->flags & OG_OP_CONTROL) ? "a subgraph's run"
                                                         : "the kernel's scratch");
    if (!refused) {
        /* a kernel's message (og_kernel_error) names the node already */
        const char *msg = og_last_error();
        if (j < 0 && msg && strncmp(msg, label, strlen(label)) == 0) return OG_ERR_NOMEM;
        if (j < 0) return og_error_prefix(OG_ERR_NOMEM, "%s", label);
        return og_error(OG_ERR_NOMEM, "%s: out of memory for %s (%zu bytes)", label, what, nbytes);
    }
    return og_error(OG_ERR_LIMIT,
                    "%s: %s needs %zu bytes, past the session's memory budget of %zu bytes "
                    "(%zu in use; og_session_options.max_memory)",
                    label, what, refused, budget, held);
}

/* An operand vi read through Transpose node t (fuse.h): its perm into perm (of the
 * rank the plan saw, which vi's tensor must have) and vi's shape as the Transpose's output
 * would have it. */
static og_status tr_operand(const og_session *s, int t, og_vinfo *vi, int64_t *perm)
{
    const og_graph *g = s->g;
    const og_node *tn = &g->nodes[t];
    const og_transpose_params *p = tn->params;
    const int rank = g->values[tn->in[0]].rank;
    char label[256];
    if (!p || vi->rank != rank || (p->n_perm && p->n_perm != rank))
        return og_error(OG_ERR_SHAPE, "%s: input '%s' has rank %d, the model says %d",
                        og_node_label(tn, label, sizeof label), g->values[tn->in[0]].name, vi->rank,
                        rank);
    int64_t dims[OG_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        perm[i] = p->n_perm ? p->perm[i] : rank - 1 - i;
        dims[i] = vi->dims[perm[i]];
    }
    memcpy(vi->dims, dims, (size_t)rank * sizeof *dims);
    vi->value = NULL;
    return OG_OK;
}

static og_status run_node(og_session *s, int ni)
{
    const og_graph *g = s->g;
    const og_node *n = &g->nodes[ni];
    og_status st = OG_OK;
    char label[256];
    if (s->fused_run && s->fusion[ni].skip) return OG_OK; /* done by its producer */
    if (s->fused_run && fused_dead(s, ni)) return OG_OK;
    /* a weight gradient's Conv (fuse.h) reads X and dY, not its Transposes of them */
    const bool wgrad = s->fused_run && s->fusion[ni].wg_x >= 0;
    const int wg_in[2] = {s->fusion[ni].wg_x, s->fusion[ni].wg_dy};
    const int *in_v = wgrad ? wg_in : n->in, n_in = wgrad ? 2 : n->n_in;
    /* a depthwise Conv running the pointwise Conv of its input (fuse.h): that Conv's input
     * as its input 0 */
    const int pre = s->fused_run ? s->fusion[ni].pre : -1;
    int pre_in[3];
    if (pre >= 0) {
        for (int j = 0; j < n->n_in && j < 3; j++) pre_in[j] = n->in[j];
        pre_in[0] = g->nodes[pre].in[0];
        in_v = pre_in;
    }
    /* a MatMul reading an operand through its Transpose (fuse.h): the Transpose's input */
    const int tr[2] = {s->fused_run ? s->fusion[ni].tr[0] : -1,
                       s->fused_run ? s->fusion[ni].tr[1] : -1};
    int tr_in[2];
    if (tr[0] >= 0 || tr[1] >= 0) {
        for (int j = 0; j < 2; j++) tr_in[j] = tr[j] >= 0 ? g->nodes[tr[j]].in[0] : n->in[j];
        in_v = tr_in;
    }
    const int *lu = s->fused_run ? s->fused_last_use : s->last_use;
    for (int j = 0; j < n_in; j++) {
        int v = in_v[j];
        s->tin[j] = v >= 0 ? s->slot[v] : NULL;
        if (v >= 0 && !s->tin[j] && g->values[v].kind == OG_VALUE_INPUT)
            return og_error(OG_ERR_INVALID_ARG, "input '%s' is missing (%s needs it)",
                            g->values[v].name, og_node_label(n, label, sizeof label));
        if (v >= 0 && !s->tin[j])
            return og_error(OG_ERR_INTERNAL, "%s: input '%s' was not computed",
                            og_node_label(n, label, sizeof label), g->values[v].name);
        og_vinfo *vi = &s->vin[j];
        og_vinfo_unknown(vi);
        if (s->tin[j]) {
            vi->dtype = s->tin[j]->dtype;
            vi->rank = s->tin[j]->kind == OG_KIND_TENSOR ? s->tin[j]->rank : -1;
            memcpy(vi->dims, s->tin[j]->dims, sizeof vi->dims);
            vi->value = s->tin[j];
            vi->kind = s->tin[j]->kind;
            if (vi->kind != OG_KIND_TENSOR && !(n->op->flags & OG_OP_ANY_KIND))
                return og_error(OG_ERR_TYPE,
                                "%s: input %d ('%s') is a %s, and the op takes tensors",
                                og_node_label(n, label, sizeof label), j, g->values[v].name,
                                og_kind_name(vi->kind));
        }
    }
    for (int j = 0; j < n->n_out; j++) {
        og_vinfo_unknown(&s->vout[j]);
        s->tout[j] = NULL;
    }
    const og_kernel_binding *kb = &s->kernels[ni];
    og_kernel_ctx k = {.node = n,
                       .params = n->params,
                       .alloc = og_pool_allocator(s->pool),
                       .threads = s->threads,
                       .rng = s->run_key,
                       .scratch = &s->scratch,
                       .cache = &s->kcache[ni],
                       .workers = s->workers};
    for (int j = 0; j < n_in && j < 32 && !s->init_mutable; j++)
        if (in_v[j] >= 0 && g->values[in_v[j]].kind == OG_VALUE_INITIALIZER &&
            s->tin[j] == g->values[in_v[j]].init)
            k.const_in |= 1u << j;
    int64_t perm[2][OG_MAX_RANK];
    for (int j = 0; j < 2; j++) {
        if (tr[j] < 0) continue;
        st = tr_operand(s, tr[j], &s->vin[j], perm[j]);
        if (st) return st;
        k.perm[j] = perm[j];
    }
    og_pre_conv pc;
    if (pre >= 0) {
        const og_node *p = &g->nodes[pre];
        pc.node = p;
        pc.w = s->slot[p->in[1]];
        pc.b = p->n_in > 2 ? s->slot[p->in[2]] : NULL;
        pc.act = s->fusion[pre].act;
        if (!pc.w || pc.w->kind != OG_KIND_TENSOR || pc.w->rank < 1 ||
            (p->n_in > 2 && (!pc.b || pc.b->kind != OG_KIND_TENSOR)) || s->vin[0].rank < 2)
            return og_error(OG_ERR_INTERNAL, "%s: the inputs of %s, run inside it, are missing",
                            og_node_label(n, label, sizeof label), p->name ? p->name : "");
        /* what its shape inference sees: the pointwise Conv's output (1x1, no pads) */
        s->vin[0].dims[1] = pc.w->dims[0];
        s->vin[0].value = NULL;
        k.pre = &pc;
    }
    const int res = s->fused_run ? s->fusion[ni].res : -1;
    if (res >= 0) { /* the residual of the Add it runs (fuse.h) */
        k.res = s->slot[res];
        if (!k.res || k.res->kind != OG_KIND_TENSOR || k.res->dtype != OG_FLOAT)
            return og_error(OG_ERR_INTERNAL,
                            "%s: the residual '%s' of the Add run inside it is missing",
                            og_node_label(n, label, sizeof label), g->values[res].name);
    }
    if (n->op->flags & OG_OP_CONTROL) {
        st = og_exec_control(s, ni);
        if (st == OG_ERR_NOMEM) st = og_exec_budget_error(s, n, -1, 0, NULL);
        if (st) goto fail;
        goto store;
    }
    og_op_ctx c = {n, s->alloc, NULL, true};
    if (wgrad) { /* dW: the weight's shape, static (fuse.c checked) */
        const og_value *dv = &g->values[s->fusion[ni].out];
        s->vout[0].kind = OG_KIND_TENSOR;
        s->vout[0].dtype = dv->dtype;
        s->vout[0].rank = dv->rank;
        memcpy(s->vout[0].dims, dv->dims, sizeof s->vout[0].dims);
    } else if (n->op->infer) {
        st = n->op->infer(&c, s->vin, n->n_in, s->vout, n->n_out);
        if (st) return st;
        const int post = s->fused_run ? s->fusion[ni].post : -1;
        if (post >= 0) { /* writes the output of the MaxPool it runs */
            const og_node *pn = &g->nodes[post];
            og_op_ctx pcx = {pn, s->alloc, NULL, true};
            og_vinfo mid = s->vout[0];
            st = pn->op->infer(&pcx, &mid, 1, s->vout, 1);
            if (st) return st;
        }
    }
    if (res >= 0) { /* the Add it runs adds tensors of one shape (fuse.h: its symbols) */
        bool same = s->vout[0].rank == k.res->rank;
        for (int d = 0; same && d < k.res->rank; d++) same = s->vout[0].dims[d] == k.res->dims[d];
        if (!same) {
            st = og_error(OG_ERR_SHAPE,
                          "%s: its output and '%s', which the Add after it adds, differ in shape "
                          "though the model gives them the same dims (symbols)",
                          og_node_label(n, label, sizeof label), g->values[res].name);
            goto fail;
        }
    }
    bool viewed = false; /* output 0 a view by OG_OP_ALIAS_SAME_SIZE: no kernel call */
    for (int j = 0; j < n->n_out; j++) {
        if (out_value(s, ni, j) < 0) continue;
        og_vinfo *vo = &s->vout[j];
        int64_t n_view;
        if (vo->rank > OG_MAX_RANK) {
            st = og_error(OG_ERR_UNSUPPORTED, "%s: output %d would have rank %d, above %d",
                          og_node_label(n, label, sizeof label), j, vo->rank, OG_MAX_RANK);
            goto fail;
        }
        if (vo->kind != OG_KIND_TENSOR) {
            /* the kernel fills a container; an alias op shares its input's */
            st = j == 0 && (n->op->flags & OG_OP_ALIAS_INPUT0)
                     ? og_value_share(s->tin[0], s->alloc, &s->tout[0])
                     : og_value_new(vo->kind, s->alloc, &s->tout[j]);
            if (st) goto fail;
            continue;
        }
        if (!og_dtype_is_valid(vo->dtype) || !og_vinfo_static(vo)) {
            st = og_error(OG_ERR_INTERNAL,
                          "%s: could not determine output %d's type and "
                          "shape",
                          og_node_label(n, label, sizeof label), j);
            goto fail;
        }
        bool same_size = j == 0 && (n->op->flags & OG_OP_ALIAS_SAME_SIZE) && s->tin[0] &&
                         s->tin[0]->kind == OG_KIND_TENSOR && s->tin[0]->dtype == vo->dtype &&
                         og_shape_numel(vo->rank, vo->dims, &n_view) && n_view == s->tin[0]->numel;
        viewed = viewed || same_size;
        if (j == 0 && ((n->op->flags & OG_OP_ALIAS_INPUT0) || same_size)) {
            st = og_tensor_view(s->tin[0], vo->rank, vo->dims, &s->tout[0]);
            if (st) {
                og_error_prefix(st, "%s", og_node_label(n, label, sizeof label));
                goto fail;
            }
            if (n->in[0] >= 0 && s->placed[n->in[0]]) s->placed[out_value(s, ni, 0)] = true;
            continue;
        }
        size_t nbytes;
        char shape[128];
        if (!og_shape_nbytes(vo->dtype, vo->rank, vo->dims, &nbytes)) {
            st = og_error(OG_ERR_SHAPE, "%s: output %d would have shape %s, whose size overflows",
                          og_node_label(n, label, sizeof label), j,
                          og_shape_str(vo->rank, vo->dims, shape, sizeof shape));
            goto fail;
        }
        int w = s->placing && vo->dtype != OG_STRING ? s->want_at[out_value(s, ni, j)] : -1;
        void *mem =
            w >= 0 ? s->placing->place(s->placing->user, w, vo->dtype, vo->rank, vo->dims) : NULL;
        if (mem) { /* the caller's memory */
            st = og_tensor_wrap(vo->dtype, vo->rank, vo->dims, mem, nbytes, s->alloc, &s->tout[j]);
            if (st) {
                og_error_prefix(st, "%s", og_node_label(n, label, sizeof label));
                goto fail;
            }
            s->placed[out_value(s, ni, j)] = true;
            continue;
        }
        og_buffer *b = og_pool_get(s->pool, nbytes);
        if (!b) {
            st = og_exec_budget_error(s, n, j, nbytes, vo);
            goto fail;
        }
        if (vo->dtype == OG_STRING) {
            int64_t numel;
            og_shape_numel(vo->rank, vo->dims, &numel);
            og_buffer_hold_strings(b, numel);
        }
        st = og_tensor_from_buffer(vo->dtype, vo->rank, vo->dims, b, s->alloc, &s->tout[j]);
        if (st) {
            og_buffer_release(b);
            goto fail;
        }
    }
    /* the loop bound for the static dtype, unless this run's input says otherwise */
    const void *impl = kb->impl;
    if (impl && (kb->type_input >= n->n_in || !s->tin[kb->type_input] ||
                 s->tin[kb->type_input]->dtype != kb->type))
        impl = NULL;
    for (int j = 0; impl && kb->all_types && j < n->n_in; j++) /* chosen from every input */
        if (s->tin[j] && kb->types[j] != OG_UNDEFINED && s->tin[j]->dtype != kb->types[j])
            impl = NULL;
    for (int j = 0; impl && kb->all_types && j < n->n_out; j++) /* and output */
        if (s->tout[j] && kb->out_types[j] != OG_UNDEFINED && s->tout[j]->dtype != kb->out_types[j])
            impl = NULL;
    k.impl = impl;
    if (s->fused_run && s->fusion[ni].out >= 0) {
        if (s->vout[0].dtype != g->values[n->out[0]].dtype) {
            st = og_error(OG_ERR_INTERNAL, "%s: output 0 is %s, the fused activation expects %s",
                          og_node_label(n, label, sizeof label), og_dtype_name(s->vout[0].dtype),
                          og_dtype_name(g->values[n->out[0]].dtype));
            goto fail;
        }
        k.act = s->fusion[ni].act;
        k.max_pool = s->fusion[ni].post >= 0;
    }
    for (int j = 0; !kb->strings && j < n->n_in; j++)
        if (s->tin[j] && s->tin[j]->kind == OG_KIND_TENSOR && s->tin[j]->dtype == OG_STRING) {
            st = og_error(OG_ERR_UNSUPPORTED,
                          "%s: input %d ('%s') is a string tensor, which the %s kernel of %s "
                          "does not take",
                          og_node_label(n, label, sizeof label), j, g->values[n->in[j]].name,
                          s->backend->name, n->op_type);
            goto fail;
        }
    if (wgrad) {
        st = og_exec_wgrad(&k, s->tin[0], s->tin[1], s->tout[0]);
        if (st == OG_ERR_NOMEM) st = og_exec_budget_error(s, n, -1, 0, NULL);
        if (st) goto fail;
    } else if (kb->fn && !viewed) {
        st = kb->fn(&k, s->tin, n->n_in, s->tout, n->n_out);
        if (st == OG_ERR_NOMEM) st = og_exec_budget_error(s, n, -1, 0, NULL);
        if (st) goto fail;
    }
store:
    for (int j = 0; j < n->n_out; j++) {
        int v = out_value(s, ni, j);
        if (v < 0) { /* an omitted output a kernel computed anyway (a Loop's, If's) */
            og_tensor_free(s->tout[j]);
            s->tout[j] = NULL;
            continue;
        }
        if (s->debug) {
            st = check_finite(&k, s->tout[j], g->values[v].name);
            if (st) goto fail;
        }
        s->slot[v] = s->tout[j];
        s->owned[v] = true;
        s->tout[j] = NULL;
        if (lu[v] < 0 && !s->keep[v]) { /* nobody reads it */
            og_tensor_free(s->slot[v]);
            s->slot[v] = NULL;
            s->owned[v] = false;
        }
    }
    /* inputs whose last reader this was go back to the pool, the residual of a fused Add
     * among them (j == n_in) */
    for (int j = 0; j <= n_in; j++) {
        int v = j < n_in ? in_v[j] : res;
        if (v >= 0 && lu[v] == ni && s->owned[v] && !s->keep[v]) {
            og_tensor_free(s->slot[v]);
            s->slot[v] = NULL;
            s->owned[v] = false;
        }
    }
    return OG_OK;
fail:
    for (int j = 0; j < n->n_out; j++) {
        og_tensor_free(s->tout[j]);
        s->tout[j] = NULL;
    }
    return st;
}

/* Whether every tensor in t has a buffer of onnxgrad's own that may be written (not the
 * caller's memory, not a model's initializer). */
static bool own_buffers(const og_tensor *t)
{
    if (t->kind == OG_KIND_TENSOR) return !t->buf || (t->buf->owned && !t->readonly);
    if (t->keys && !own_buffers(t->keys)) return false;
    for (int64_t i = 0; i < t->n_items; i++)
        if (!own_buffers(t->items[i])) return false;
    return true;
}

/* Give value v to the caller: the session's own tensor when nothing else shares its
 * buffer, else a copy.  Its buffer stays tied to the pool, so that freeing the output gives
 * the block back for the next run. */
static og_status take_output(og_session *s, int v, bool share, og_tensor **out)
{
    og_tensor *t = s->slot[v];
    if (!t && s->g->values[v].kind == OG_VALUE_INPUT)
        return og_error(OG_ERR_INVALID_ARG, "input '%s' is missing", s->g->values[v].name);
    if (!t) return og_error(OG_ERR_INTERNAL, "output '%s' was not computed", s->g->values[v].name);
    if (t->kind != OG_KIND_TENSOR && s->owned[v] && own_buffers(t)) {
        /* a container the session made: its tensors may share buffers with other values of
         * the run, which are reference-counted, so handing it over is safe */
        *out = t;
        s->slot[v] = NULL;
        s->owned[v] = false;
        return OG_OK;
    }
    if (s->owned[v] && t->buf && t->buf->refcount == 1 && t->buf->owned && !t->readonly) {
        *out = t;
        s->slot[v] = NULL;
        s->owned[v] = false;
        return OG_OK;
    }
    if (share) return og_tensor_view(t, t->rank, t->dims, out);
    return og_tensor_clone(t, s->alloc, out);
}

static og_status session_exec(og_session *s, const og_exec_req *r);

static og_status session_enter(og_session *s)
{
    if (!atomic_exchange(&s->busy, 1)) return OG_OK;
    return og_error(OG_ERR_BUSY, "og_session_run: the session is running a call in another thread "
                                 "(a session runs one call at a time: use one session per thread)");
}

og_status og_session_exec(og_session *s, const og_exec_req *r)
{
    og_status st = session_enter(s);
    if (st) {
        for (int j = 0; j < r->n_want && r->out; j++) r->out[j] = NULL;
        return st;
    }
    st = session_exec(s, r);
    atomic_store(&s->busy, 0);
    return st;
}

static og_status session_exec(og_session *s, const og_exec_req *r)
{
    if (r->n_inputs < 0 || r->n_want < 0 || r->n_pre < 0 ||
        (r->n_inputs && (!r->input_names || !r->inputs)) || (r->n_want && (!r->want || !r->out)))
        return og_error(OG_ERR_INVALID_ARG, "og_session_run: bad input or output arrays");
    for (int j = 0; j < r->n_want; j++) r->out[j] = NULL;
    const og_graph *g = s->g;
    og_status st = OG_OK;
    int *out_v = NULL;
    for (int i = 0; i < s->n_sym; i++) s->sym[i] = -1;
    s->run_key = og_exec_run_key(s->rng_seed, s->rng_runs);
    s->rng_runs++;
    out_v = og_malloc(s->alloc, (size_t)(r->n_want + 1) * sizeof *out_v);
    if (!out_v) return og_error(OG_ERR_NOMEM, "out of memory");

    /* values computed by an earlier partial run: borrowed */
    for (int i = 0; i < r->n_pre; i++) s->slot[r->pre_values[i]] = (og_tensor *)r->pre_tensors[i];
    /* bind inputs */
    for (int i = 0; i < r->n_inputs; i++) {
        if (!r->input_names[i] || !r->inputs[i]) {
            st = og_error(OG_ERR_INVALID_ARG, "input %d: NULL name or tensor", i);
            goto done;
        }
        /* by the name index: a scan of the inputs per input was quadratic in their count */
        int v = og_graph_find_value(g, r->input_names[i]);
        if (v >= 0 && !g->values[v].is_graph_input) v = -1;
        if (v < 0) {
            char names[512] = "";
            size_t used = 0;
            for (int k = 0; k < g->n_inputs && used < sizeof names - 1; k++)
                if (g->values[g->inputs[k]].kind == OG_VALUE_INPUT)
                    used += (size_t)snprintf(names + used, sizeof names - used, "%s'%s'",
                                             used ? ", " : "", g->values[g->inputs[k]].name);
            st = og_error(OG_ERR_INVALID_ARG, "the model has no input named '%s' (inputs: %s)",
                          r->input_names[i], names);
            goto done;
        }
        if (s->slot[v]) {
            st = og_error(OG_ERR_INVALID_ARG, "input '%s' is given twice", r->input_names[i]);
            goto done;
        }
        st = check_input(s, &g->values[v], r->inputs[i], !r->any_item_shape);
        if (st) goto done;
        s->slot[v] = (og_tensor *)r->inputs[i]; /* borrowed: never written, never freed */
    }
    for (int v = 0; v < g->n_values; v++) {
        if (s->slot[v]) continue;
        if (g->values[v].kind == OG_VALUE_INITIALIZER) {
            s->slot[v] = g->values[v].init;
        } else if (g->values[v].kind == OG_VALUE_INPUT && !r->run) {
            st = og_error(OG_ERR_INVALID_ARG, "input '%s' is missing", g->values[v].name);
            goto done;
        }
    }
    /* which values the caller wants */
    s->placing = r->hooks && r->hooks->place ? r->hooks : NULL;
    for (int j = 0; j < r->n_want; j++) {
        out_v[j] = r->want[j];
        s->keep[r->want[j]] = true;
        if (s->placing && s->want_at[r->want[j]] < 0) s->want_at[r->want[j]] = j;
    }
    /* a view's memory is the viewed value's: place that one (a graph output is often an
     * Identity or a Reshape of what a kernel computed).  Not through ops that are views only
     * when sizes allow (OG_OP_ALIAS_SAME_SIZE): their input and output could then both be
     * placed in the same memory. */
    for (int j = 0; s->placing && j < r->n_want; j++) {
        if (s->want_at[r->want[j]] != j) continue;
        for (int p = g->values[r->want[j]].producer; p >= 0;) {
            const og_node *n = &g->nodes[p];
            if (!n->op || !(n->op->flags & OG_OP_ALIAS_INPUT0) || n->n_in < 1 || n->in[0] < 0 ||
                s->want_at[n->in[0]] >= 0)
                break;
            s->want_at[n->in[0]] = j;
            p = g->values[n->in[0]].producer;
        }
    }
    /* the fusion plan, unless this run asks for or binds a value it leaves out */
    s->fused_run = s->n_fused > 0;
    for (int j = 0; s->fused_run && j < r->n_want; j++)
        if (s->internal[r->want[j]]) s->fused_run = false;
    for (int i = 0; s->fused_run && i < r->n_pre; i++)
        if (s->internal[r->pre_values[i]]) s->fused_run = false;
    const og_exec_hooks *h = r->hooks && r->hooks->ready ? r->hooks : NULL;
    for (int j = 0; h && j < r->n_want; j++)
        if (s->slot[out_v[j]] && (st = h->ready(h->user, j, s->slot[out_v[j]]))) goto done;
    /* the element-wise chains */
    const bool chains = s->ew.n_groups > 0;
    const int *lu = s->fused_run ? s->fused_last_use : s->last_use;
    for (int c = 0; c < s->ew.n_groups; c++) s->ew.done[c] = false;
    for (int i = 0; i < g->n_nodes; i++) {
        if (r->run && !r->run[i]) continue;
        bool by_chain = false;
        if (chains && (st = og_ew_at(s, i, r->run, lu, &by_chain))) goto done;
        if (!by_chain && (st = run_node(s, i))) goto done;
        const og_node *n = &g->nodes[i];
        for (int k = 0; h && k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0 || !s->keep[v]) continue;
            for (int j = 0; j < r->n_want; j++)
                if (out_v[j] == v && (st = h->ready(h->user, j, s->slot[v]))) goto done;
        }
        if (r->hooks && r->hooks->after_node && (st = r->hooks->after_node(r->hooks->user)))
            goto done;
    }
    for (int j = 0; j < r->n_want; j++) {
        int v = out_v[j];
        int first = -1;
        for (int k = 0; k < j; k++)
            if (out_v[k] == v) first = k;
        st = first >= 0 ? og_tensor_clone(r->out[first], s->alloc, &r->out[j])
                        : take_output(s, v, (r->share && r->share[j]) || s->placed[v], &r->out[j]);
        if (st) goto done;
    }
done:
    for (int i = 0; i < r->n_pre; i++) s->slot[r->pre_values[i]] = NULL; /* not ours */
    release_slots(s);
    if (st)
        for (int j = 0; j < r->n_want; j++) {
            og_tensor_free(r->out[j]);
            r->out[j] = NULL;
        }
    og_free(s->alloc, out_v);
    return st;
}

static og_status run_named(og_session *s, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs,
                           const char *const *output_names, int n_outputs, og_tensor **outputs,
                           const og_exec_hooks *hooks);

og_status og_session_run_named(og_session *s, const char *const *input_names,
                               const og_tensor *const *inputs, int n_inputs,
                               const char *const *output_names, int n_outputs, og_tensor **outputs)
{
    return og_session_run_hooked(s, input_names, inputs, n_inputs, output_names, n_outputs, outputs,
                                 NULL);
}

og_status og_session_run_hooked(og_session *s, const char *const *input_names,
                                const og_tensor *const *inputs, int n_inputs,
                                const char *const *output_names, int n_outputs, og_tensor **outputs,
                                const og_exec_hooks *hooks)
{
    if (!s) return og_error(OG_ERR_INVALID_ARG, "og_session_run: session is NULL");
    if (n_outputs < 0 || (n_outputs && (!output_names || !outputs)))
        return og_error(OG_ERR_INVALID_ARG, "og_session_run: bad input or output arrays");
    for (int j = 0; j < n_outputs; j++) outputs[j] = NULL;
    og_status st = session_enter(s);
    if (st) return st;
    st = run_named(s, input_names, inputs, n_inputs, output_names, n_outputs, outputs, hooks);
    atomic_store(&s->busy, 0);
    return st;
}

static og_status run_named(og_session *s, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs,
                           const char *const *output_names, int n_outputs, og_tensor **outputs,
                           const og_exec_hooks *hooks)
{
    int *want = og_malloc(s->alloc, (size_t)(n_outputs + 1) * sizeof *want);
    if (!want) return og_error(OG_ERR_NOMEM, "out of memory");
    og_status st = OG_OK;
    for (int j = 0; j < n_outputs; j++) {
        outputs[j] = NULL;
        want[j] = output_names[j] ? og_graph_find_value(s->g, output_names[j]) : -1;
        if (want[j] < 0) {
            st = og_error(OG_ERR_INVALID_ARG, "the model has no value named '%s'",
                          output_names[j] ? output_names[j] : "(null)");
            break;
        }
    }
    /* only the nodes the wanted values depend on run; only their inputs must be given (a
     * missing one is reported by the node that reads it) */
    const og_graph *g = s->g;
    bool *need = og_calloc(s->alloc, (size_t)g->n_values + 1, sizeof *need);
    bool *run = og_calloc(s->alloc, (size_t)g->n_nodes + 1, sizeof *run);
    if (!st && (!need || !run)) st = og_error(OG_ERR_NOMEM, "out of memory");
    for (int j = 0; !st && j < n_outputs; j++) need[want[j]] = true;
    for (int i = g->n_nodes - 1; !st && i >= 0; i--) {
        const og_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_out && !run[i]; k++) run[i] = n->out[k] >= 0 && need[n->out[k]];
        for (int k = 0; run[i] && k < n->n_in; k++)
            if (n->in[k] >= 0) need[n->in[k]] = true;
    }
    if (!st) {
        og_exec_req r = {input_names, inputs,    n_inputs, NULL, NULL,  0,    run,
                         want,        n_outputs, outputs,  NULL, hooks, false};
        st = session_exec(s, &r);
    }
    og_free(s->alloc, need);
    og_free(s->alloc, run);
    og_free(s->alloc, want);
    return st;
}

og_status og_session_run(og_session *s, const char *const *input_names,
                         const og_tensor *const *inputs, int n_inputs, og_tensor **outputs)
{
    if (!s) return og_error(OG_ERR_INVALID_ARG, "og_session_run: session is NULL");
    const og_graph *g = s->g;
    const char *stack_names[16] = {0};
    const char **names = stack_names;
    if (g->n_outputs > 16) {
        names = og_malloc(s->alloc, (size_t)g->n_outputs * sizeof *names);
        if (!names) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    for (int j = 0; j < g->n_outputs; j++) names[j] = g->values[g->outputs[j]].name;
    og_status st =
        og_session_run_named(s, input_names, inputs, n_inputs, names, g->n_outputs, outputs);
    if (names != stack_names) og_free(s->alloc, names);
    return st;
}

const og_graph *og_session_graph(const og_session *s) { return s->g; }

/* run k draws from (seed, k): a key no two runs share */
uint64_t og_exec_run_key(uint64_t seed, uint64_t run)
{
    uint64_t mix = seed ^ 0xD1B54A32D192ED03ull * (run + 1);
    return og_splitmix64(&mix);
}

og_status og_session_get_rng(const og_session *s, uint64_t *seed, uint64_t *runs)
{
    if (!s) return og_error(OG_ERR_INVALID_ARG, "og_session_get_rng: session is NULL");
    if (seed) *seed = s->rng_seed;
    if (runs) *runs = s->rng_runs;
    return OG_OK;
}

og_status og_session_set_rng(og_session *s, uint64_t seed, uint64_t runs)
{
    if (!s) return og_error(OG_ERR_INVALID_ARG, "og_session_set_rng: session is NULL");
    s->rng_seed = seed;
    s->rng_runs = runs;
    return OG_OK;
}
