/* control.c: running If, Loop, Scan and SequenceMap (src/ops/control.c).
 *
 * Each subgraph has a session of its own, made with its parent's; a run binds the
 * subgraph's outer values to the node's implicit inputs (the same names in the enclosing
 * graph) as values computed beforehand, its graph inputs to what the op passes, and takes
 * every graph output.  Nesting needs nothing more: a subgraph's own control nodes bind
 * their subgraphs the same way, from values that are, in the subgraph, bound outer values.
 * Loop and Scan reuse one session for every iteration, so that its memory pool serves them
 * all. */
#include <string.h>

#include "exec/exec_internal.h"
#include "ops/control.h"

static const og_graph *graph_attr(const og_node *n, const char *name)
{
    const og_attr *a = og_node_attr(n, name);
    return a && a->type == OG_ATTR_GRAPH ? a->g : NULL;
}

og_status og_exec_create_subs(og_session *s, int ni, const og_session_options *opts)
{
    const og_node *n = &s->g->nodes[ni];
    const og_control_params *p = n->params;
    const char *names[2] = {"body", NULL};
    if (p->kind == OG_CONTROL_IF) names[0] = "then_branch", names[1] = "else_branch";
    og_subexec *subs = og_calloc(s->alloc, 2, sizeof *subs);
    if (!subs) return og_error(OG_ERR_NOMEM, "out of memory creating a session");
    s->subs[ni] = subs;
    og_session_options o = {0};
    if (opts) o = *opts;
    o.threads = s->threads;
    /* the subgraph's memory (its pool's blocks, its outputs) counts against this session's
     * budget, so nesting or iterating cannot multiply the budget */
    o.allocator = og_pool_allocator(s->pool);
    for (int k = 0; k < 2 && names[k]; k++) {
        const og_graph *sub = graph_attr(n, names[k]);
        char label[256];
        if (!sub)
            return og_error(OG_ERR_INTERNAL, "%s: no attribute '%s'",
                            og_node_label(n, label, sizeof label), names[k]);
        og_status st =
            og_exec_create_in(sub, s->backend, s->alloc, &o, false, s->workers, &subs[k].s);
        size_t held, budget, refused;
        og_pool_usage(s->pool, &held, &budget, &refused);
        (void)held;
        if (st == OG_ERR_NOMEM && refused)
            return og_error(
                OG_ERR_LIMIT,
                "%s, attribute '%s': an allocation of %zu bytes for its session would pass "
                "the session's memory budget of %zu bytes "
                "(og_session_options.max_memory)",
                og_node_label(n, label, sizeof label), names[k], refused, budget);
        if (st)
            return og_error_prefix(st, "%s, attribute '%s'", og_node_label(n, label, sizeof label),
                                   names[k]);
        int count = 0;
        for (int v = 0; v < sub->n_values; v++) count += sub->values[v].kind == OG_VALUE_OUTER;
        subs[k].outer_v = og_malloc(s->alloc, (size_t)(count + 1) * sizeof(int));
        subs[k].outer_in = og_malloc(s->alloc, (size_t)(count + 1) * sizeof(int));
        subs[k].pre = og_malloc(s->alloc, (size_t)(count + 1) * sizeof *subs[k].pre);
        subs[k].in_names = og_malloc(s->alloc, (size_t)(sub->n_inputs + 1) * sizeof(char *));
        if (!subs[k].outer_v || !subs[k].outer_in || !subs[k].pre || !subs[k].in_names)
            return og_error(OG_ERR_NOMEM, "out of memory creating a session");
        for (int i = 0; i < sub->n_inputs; i++)
            subs[k].in_names[i] = sub->values[sub->inputs[i]].name;
        for (int v = 0; v < sub->n_values; v++) {
            if (sub->values[v].kind != OG_VALUE_OUTER) continue;
            int j = n->n_in - n->n_implicit;
            while (j < n->n_in && strcmp(s->g->values[n->in[j]].name, sub->values[v].name) != 0)
                j++;
            if (j == n->n_in)
                return og_error(OG_ERR_INTERNAL, "%s: outer value '%s' of '%s' is no input",
                                og_node_label(n, label, sizeof label), sub->values[v].name,
                                names[k]);
            subs[k].outer_v[subs[k].n_outer] = v;
            subs[k].outer_in[subs[k].n_outer++] = j;
        }
    }
    return OG_OK;
}

void og_exec_free_subs(og_session *s)
{
    for (int i = 0; s->subs && i < s->g->n_nodes; i++) {
        og_subexec *subs = s->subs[i];
        for (int k = 0; subs && k < 2; k++) {
            og_session_free(subs[k].s);
            og_free(s->alloc, subs[k].outer_v);
            og_free(s->alloc, subs[k].outer_in);
            og_free(s->alloc, (void *)subs[k].pre);
            og_free(s->alloc, (void *)subs[k].in_names);
        }
        og_free(s->alloc, subs);
    }
    og_free(s->alloc, s->subs);
}

/* Run subgraph x with graph inputs ins[0..n_ins-1] (in its input order); outs gets every
 * graph output (new tensors).  Names and outer slots were made with the session: nothing is
 * allocated per iteration.  any_item_shape: see og_exec_req. */
static og_status run_sub_as(og_session *s, const og_subexec *x, const og_tensor *const *ins,
                            int n_ins, og_tensor **outs, bool any_item_shape)
{
    const og_graph *sg = x->s->g;
    if (n_ins > sg->n_inputs) return og_error(OG_ERR_INTERNAL, "a subgraph given %d inputs", n_ins);
    for (int k = 0; k < x->n_outer; k++) x->pre[k] = s->tin[x->outer_in[k]];
    og_exec_req r = {x->in_names, ins,           n_ins, x->outer_v, x->pre, x->n_outer,    NULL,
                     sg->outputs, sg->n_outputs, outs,  NULL,       NULL,   any_item_shape};
    return og_session_exec(x->s, &r);
}

/* Zeroed scratch for one run of a control node: count pointers; NULL after an error
 * message. */
static void *scratch(const og_session *s, size_t count, size_t size)
{
    void *p = og_calloc(s->alloc, count ? count : 1, size);
    if (!p) og_error(OG_ERR_NOMEM, "out of memory");
    return p;
}

static og_status run_sub(og_session *s, const og_subexec *x, const og_tensor *const *ins, int n_ins,
                         og_tensor **outs)
{
    return run_sub_as(s, x, ins, n_ins, outs, false);
}

/* The single boolean of t (a bool tensor of one element). */
static og_status bool_of(const og_node *n, const og_tensor *t, const char *what, bool *out)
{
    char label[256];
    if (!t || t->kind != OG_KIND_TENSOR || t->dtype != OG_BOOL || t->numel != 1)
        return og_error(OG_ERR_RUNTIME, "%s: %s must be one bool, got %s",
                        og_node_label(n, label, sizeof label), what,
                        t ? og_dtype_name(t->dtype) : "nothing");
    *out = *(const uint8_t *)t->data != 0;
    return OG_OK;
}

/* ---- If ------------------------------------------------------------------------------ */

static og_status run_if(og_session *s, int ni)
{
    const og_node *n = &s->g->nodes[ni];
    bool c = false;
    og_status st = bool_of(n, s->tin[0], "cond", &c);
    if (st) return st;
    const og_subexec *x = &s->subs[ni][c ? 0 : 1];
    int no = x->s->g->n_outputs;
    if (no != n->n_out)
        return og_error(OG_ERR_INTERNAL, "If: %d branch outputs for %d node outputs", no, n->n_out);
    og_tensor **outs = scratch(s, (size_t)no, sizeof *outs);
    if (!outs) return OG_ERR_NOMEM;
    if (!(st = run_sub(s, x, NULL, 0, outs)))
        for (int j = 0; j < n->n_out; j++) {
            if (n->out[j] >= 0)
                s->tout[j] = outs[j];
            else
                og_tensor_free(outs[j]);
        }
    og_free(s->alloc, outs);
    return st;
}

/* ---- stacking -------------------------------------------------------------------------- */

/* The outer count, the axis length and the bytes per inner block of shape dims around axis. */
static void around(const og_tensor *t, int axis, int64_t *outer, int64_t *len, size_t *inner)
{
    *outer = 1;
    *inner = og_dtype_size(t->dtype);
    for (int d = 0; d < axis; d++) *outer *= t->dims[d];
    *len = t->dims[axis];
    for (int d = axis + 1; d < t->rank; d++) *inner *= (size_t)t->dims[d];
}

/* A new tensor: x's slice at index i along axis (that axis removed). */
static og_status slice_at(const og_tensor *x, int axis, int64_t i, const og_allocator *a,
                          og_tensor **out)
{
    int64_t dims[OG_MAX_RANK], outer, len;
    size_t inner;
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != axis) dims[r++] = x->dims[d];
    og_status st = og_tensor_alloc(x->dtype, r, dims, a, out);
    if (st) return st;
    around(x, axis, &outer, &len, &inner);
    for (int64_t o = 0; o < outer && inner; o++)
        memcpy((char *)(*out)->data + (size_t)o * inner,
               (const char *)x->data + ((size_t)o * (size_t)len + (size_t)i) * inner, inner);
    return OG_OK;
}

/* items[0..count-1] (same dtype and shape) stacked along a new axis `axis_in` (count may be 0:
 * the shape of each item is then `like`, rank like_rank, dtype dt), in reverse when rev. */
static og_status stack(const og_node *n, og_tensor *const *items, int64_t count, int64_t axis_in,
                       bool rev, og_dtype dt, int like_rank, const int64_t *like,
                       const og_allocator *a, og_tensor **out)
{
    char label[256];
    const og_tensor *f = count ? items[0] : NULL;
    int rank = f ? f->rank : like_rank;
    if (f) dt = f->dtype;
    /* a negative axis counts from the end of the result */
    int axis = (int)(axis_in < 0 && rank >= 0 ? axis_in + rank + 1 : axis_in);
    if (rank < 0 || rank + 1 > OG_MAX_RANK || axis < 0 || axis > rank || dt == OG_STRING ||
        (!f && dt == OG_UNDEFINED))
        return og_error(
            OG_ERR_UNSUPPORTED, "%s: cannot stack a scan output (rank %d, axis %d, %s, %lld items)",
            og_node_label(n, label, sizeof label), rank, axis, og_dtype_name(dt), (long long)count);
    int64_t dims[OG_MAX_RANK];
    for (int d = 0, k = 0; d <= rank; d++) {
        if (d == axis) {
            dims[d] = count;
            continue;
        }
        int64_t v = f ? f->dims[k] : like[k];
        dims[d] = v >= 0 ? v : 0;
        k++;
    }
    for (int64_t i = 0; i < count; i++) {
        const og_tensor *t = items[i];
        bool same = t->kind == OG_KIND_TENSOR && t->dtype == dt && t->rank == rank;
        for (int d = 0; same && d < rank; d++) same = t->dims[d] == f->dims[d];
        if (!same)
            return og_error(OG_ERR_SHAPE,
                            "%s: a scan output changes type or shape between iterations "
                            "(iteration %lld)",
                            og_node_label(n, label, sizeof label), (long long)i);
    }
    og_status st = og_tensor_alloc(dt, rank + 1, dims, a, out);
    if (st || !count) return st;
    int64_t outer, len;
    size_t inner;
    around(*out, axis, &outer, &len, &inner);
    for (int64_t i = 0; i < count; i++) {
        int64_t pos = rev ? count - 1 - i : i;
        for (int64_t o = 0; o < outer && inner; o++)
            memcpy((char *)(*out)->data + ((size_t)o * (size_t)len + (size_t)pos) * inner,
                   (const char *)items[i]->data + (size_t)o * inner, inner);
    }
    return OG_OK;
}

/* A growable list of tensors. */
typedef struct tlist {
    og_tensor **t;
    int64_t n, cap;
} tlist;

static bool tlist_push(const og_allocator *a, tlist *l, og_tensor *t)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 16;
        og_tensor **p = og_realloc(a, l->t, (size_t)l->n * sizeof *p, (size_t)cap * sizeof *p);
        if (!p) return false;
        l->t = p;
        l->cap = cap;
    }
    l->t[l->n++] = t;
    return true;
}

static void tlist_free(const og_allocator *a, tlist *l)
{
    for (int64_t i = 0; i < l->n; i++) og_tensor_free(l->t[i]);
    og_free(a, l->t);
    l->t = NULL;
    l->n = l->cap = 0;
}

/* The static shape of subgraph output j (rank -1 when unknown). */
static const og_value *sub_out(const og_subexec *x, int j)
{
    return &x->s->g->values[x->s->g->outputs[j]];
}

/* ---- Loop ----------------------------------------------------------------------------- */

/* A loop-carried value v that the body gives back as a sequence or tensor while its input i
 * is declared an optional (opset 16's optional state): *out is v wrapped in an optional
 * (sharing its buffers), as the next iteration's input; NULL when no wrapping is needed. */
static og_status wrap_optional(const og_subexec *x, int i, const og_tensor *v,
                               const og_allocator *a, og_tensor **out)
{
    const og_graph *sg = x->s->g;
    const og_type *t = sg->values[sg->inputs[i]].type;
    *out = NULL;
    if (!v || !t || t->kind != OG_KIND_OPTIONAL || v->kind == OG_KIND_OPTIONAL) return OG_OK;
    og_tensor *o = NULL, *item = NULL;
    og_status st = og_value_new(OG_KIND_OPTIONAL, a, &o);
    if (!st) st = og_value_share(v, a, &item);
    if (!st) {
        st = og_value_append(o, item);
        item = NULL;
    }
    if (st) {
        og_tensor_free(o);
        og_tensor_free(item);
        return st;
    }
    *out = o;
    return OG_OK;
}

static og_status run_loop(og_session *s, int ni)
{
    const og_node *n = &s->g->nodes[ni];
    const og_control_params *p = n->params;
    const og_allocator *a = og_pool_allocator(s->pool); /* counted in the budget */
    const og_subexec *x = &s->subs[ni][0];
    int N = p->n_state, K = p->n_scan_out;
    og_status st = OG_OK;
    char label[256];
    int64_t trip = INT64_MAX;
    bool keep = true;
    if (s->tin[0]) {
        const og_tensor *m = s->tin[0];
        if (m->kind != OG_KIND_TENSOR || m->dtype != OG_INT64 || m->numel != 1)
            return og_error(OG_ERR_RUNTIME, "%s: M must be one int64",
                            og_node_label(n, label, sizeof label));
        trip = *(const int64_t *)m->data;
    }
    if (s->tin[1] && (st = bool_of(n, s->tin[1], "cond", &keep))) return st;
    /* any number of carried values and scan outputs: the arrays follow the node */
    const og_tensor **ins = scratch(s, (size_t)N + 2, sizeof *ins);
    og_tensor **carried = scratch(s, (size_t)N + 1, sizeof *carried);
    og_tensor **wrapped = scratch(s, (size_t)N + 1, sizeof *wrapped);
    og_tensor **outs = scratch(s, (size_t)N + K + 1, sizeof *outs);
    tlist *scans = scratch(s, (size_t)K + 1, sizeof *scans);
    og_tensor *it = NULL, *ct = NULL;
    if (!ins || !carried || !wrapped || !outs || !scans) {
        st = OG_ERR_NOMEM;
        goto done;
    }
    if ((st = og_tensor_alloc(OG_INT64, 0, NULL, a, &it)) ||
        (st = og_tensor_alloc(OG_BOOL, 0, NULL, a, &ct)))
        goto done;
    for (int i = 0; i < N; i++) ins[2 + i] = s->tin[2 + i];
    ins[0] = it;
    ins[1] = ct;
    for (int64_t i = 0; i < trip && keep; i++) {
        *(int64_t *)it->data = i;
        *(uint8_t *)ct->data = 1;
        if ((st = run_sub_as(s, x, ins, 2 + N, outs, true))) goto done;
        st = bool_of(n, outs[0], "the body's condition output", &keep);
        og_tensor_free(outs[0]);
        outs[0] = NULL;
        if (st) goto done;
        for (int j = 0; j < N; j++) {
            og_tensor_free(carried[j]);
            og_tensor_free(wrapped[j]);
            wrapped[j] = NULL;
            carried[j] = outs[1 + j];
            outs[1 + j] = NULL;
            ins[2 + j] = carried[j];
            if ((st = wrap_optional(x, 2 + j, carried[j], a, &wrapped[j]))) goto done;
            if (wrapped[j]) ins[2 + j] = wrapped[j];
        }
        for (int k = 0; k < K; k++) {
            if (!tlist_push(a, &scans[k], outs[1 + N + k])) {
                st = og_error(OG_ERR_NOMEM, "out of memory");
                goto done;
            }
            outs[1 + N + k] = NULL;
        }
    }
    for (int j = 0; j < N; j++) {
        if (carried[j]) {
            s->tout[j] = carried[j];
            carried[j] = NULL;
        } else if ((st = og_tensor_clone(s->tin[2 + j], a, &s->tout[j]))) { /* no iteration */
            goto done;
        }
    }
    for (int k = 0; k < K; k++) {
        const og_value *v = sub_out(x, 1 + N + k);
        if ((st = stack(n, scans[k].t, scans[k].n, 0, false, v->dtype, v->rank, v->dims, a,
                        &s->tout[N + k])))
            goto done;
    }
done:
    og_tensor_free(it);
    og_tensor_free(ct);
    for (int j = 0; outs && j < N + K + 1; j++) og_tensor_free(outs[j]);
    for (int j = 0; carried && j < N; j++) og_tensor_free(carried[j]);
    for (int j = 0; wrapped && j < N; j++) og_tensor_free(wrapped[j]);
    for (int k = 0; scans && k < K; k++) tlist_free(a, &scans[k]);
    og_free(s->alloc, (void *)ins);
    og_free(s->alloc, carried);
    og_free(s->alloc, wrapped);
    og_free(s->alloc, outs);
    og_free(s->alloc, scans);
    return st;
}

/* ---- Scan ------------------------------------------------------------------------------ */

/* One scan (Scan-9 and later, or one batch row of Scan-8) over `steps` steps: states in
 * st0 (borrowed), scan inputs xs with their axes; final states and stacked scan outputs
 * into res[0..n_out-1]. */
static og_status scan_once(og_session *s, int ni, const og_tensor *const *st0,
                           const og_tensor *const *xs, const int *in_axes, int64_t steps,
                           const int64_t *out_axes, og_tensor **res)
{
    const og_node *n = &s->g->nodes[ni];
    const og_control_params *p = n->params;
    const og_allocator *a = og_pool_allocator(s->pool); /* counted in the budget */
    const og_subexec *x = &s->subs[ni][0];
    int S = p->n_state, M = p->n_scan_in, K = p->n_scan_out;
    og_status st = OG_OK;
    const og_tensor **ins = scratch(s, (size_t)S + M, sizeof *ins);
    og_tensor **state = scratch(s, (size_t)S, sizeof *state);
    og_tensor **slices = scratch(s, (size_t)M, sizeof *slices);
    og_tensor **outs = scratch(s, (size_t)S + K, sizeof *outs);
    tlist *scans = scratch(s, (size_t)K, sizeof *scans);
    if (!ins || !state || !slices || !outs || !scans) {
        st = OG_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i < S; i++) ins[i] = st0[i];
    for (int64_t t = 0; t < steps; t++) {
        for (int k = 0; k < M; k++) {
            int64_t at = p->in_dirs[k] ? steps - 1 - t : t;
            og_tensor_free(slices[k]);
            slices[k] = NULL;
            if ((st = slice_at(xs[k], in_axes[k], at, a, &slices[k]))) goto done;
            ins[S + k] = slices[k];
        }
        if ((st = run_sub(s, x, ins, S + M, outs))) goto done;
        for (int j = 0; j < S; j++) {
            og_tensor_free(state[j]);
            state[j] = outs[j];
            outs[j] = NULL;
            ins[j] = state[j];
        }
        for (int k = 0; k < K; k++) {
            if (!tlist_push(a, &scans[k], outs[S + k])) {
                st = og_error(OG_ERR_NOMEM, "out of memory");
                goto done;
            }
            outs[S + k] = NULL;
        }
    }
    for (int j = 0; j < S; j++) {
        if (state[j]) {
            res[j] = state[j];
            state[j] = NULL;
        } else if ((st = og_tensor_clone(st0[j], a, &res[j]))) {
            goto done;
        }
    }
    for (int k = 0; k < K; k++) {
        const og_value *v = sub_out(x, S + k);
        if ((st = stack(n, scans[k].t, scans[k].n, out_axes[k], p->out_dirs[k] != 0, v->dtype,
                        v->rank, v->dims, a, &res[S + k])))
            goto done;
    }
done:
    for (int j = 0; state && j < S; j++) og_tensor_free(state[j]);
    for (int k = 0; slices && k < M; k++) og_tensor_free(slices[k]);
    for (int j = 0; outs && j < S + K; j++) og_tensor_free(outs[j]);
    for (int k = 0; scans && k < K; k++) tlist_free(a, &scans[k]);
    og_free(s->alloc, (void *)ins);
    og_free(s->alloc, state);
    og_free(s->alloc, slices);
    og_free(s->alloc, outs);
    og_free(s->alloc, scans);
    return st;
}

static og_status run_scan(og_session *s, int ni)
{
    const og_node *n = &s->g->nodes[ni];
    const og_control_params *p = n->params;
    int S = p->n_state, M = p->n_scan_in, K = p->n_scan_out, first = p->v8 ? 1 : 0;
    char label[256];
    og_status st = OG_OK;
    int64_t steps = -1;
    int *in_axes = scratch(s, (size_t)M, sizeof *in_axes);
    if (!in_axes) return OG_ERR_NOMEM;
    for (int k = 0; k < M; k++) {
        const og_tensor *xk = s->tin[first + S + k];
        if (xk->kind != OG_KIND_TENSOR) {
            st = og_error(OG_ERR_TYPE, "%s: scan input %d is a %s",
                          og_node_label(n, label, sizeof label), k, og_kind_name(xk->kind));
            goto fail;
        }
        int64_t ax = p->v8 ? 1 : p->in_axes[k];
        if (ax < 0) ax += xk->rank;
        if (ax < 0 || ax >= xk->rank || (p->v8 && xk->rank < 2)) {
            st = og_error(OG_ERR_SHAPE, "%s: scan input %d has rank %d, no scan axis %lld",
                          og_node_label(n, label, sizeof label), k, xk->rank,
                          p->v8 ? 1LL : (long long)p->in_axes[k]);
            goto fail;
        }
        in_axes[k] = (int)ax;
        if (steps >= 0 && xk->dims[ax] != steps) {
            st = og_error(OG_ERR_SHAPE, "%s: scan input %d has %lld steps, input 0 has %lld",
                          og_node_label(n, label, sizeof label), k, (long long)xk->dims[ax],
                          (long long)steps);
            goto fail;
        }
        steps = xk->dims[ax];
    }
    if (!p->v8) {
        st = scan_once(s, ni, s->tin, s->tin + S, in_axes, steps, p->out_axes, s->tout);
        goto fail;
    }
    /* Scan-8: per batch row, its own length; scan outputs padded with zeros past it; the
     * rows are sliced along their axis 0 and stacked along it (zeroed axes) */
    const og_tensor *lens = s->tin[0];
    int64_t batch = s->tin[first + S]->dims[0];
    int64_t *out_axes = scratch(s, (size_t)K, sizeof *out_axes);
    int *slice_axes = scratch(s, (size_t)M, sizeof *slice_axes);
    tlist *rows = scratch(s, (size_t)S + K, sizeof *rows);
    og_tensor **st0 = scratch(s, (size_t)S, sizeof *st0), **xs = scratch(s, (size_t)M, sizeof *xs);
    og_tensor **res = scratch(s, (size_t)S + K, sizeof *res);
    if (!out_axes || !slice_axes || !rows || !st0 || !xs || !res) {
        st = OG_ERR_NOMEM;
        goto done8;
    }
    for (int64_t b = 0; b < batch; b++) {
        int64_t len = steps;
        if (lens) {
            len = lens->dtype == OG_INT32 ? ((const int32_t *)lens->data)[b]
                                          : ((const int64_t *)lens->data)[b];
            if (len < 0 || len > steps) {
                st = og_error(OG_ERR_RUNTIME, "%s: sequence_lens[%lld] is %lld, outside 0..%lld",
                              og_node_label(n, label, sizeof label), (long long)b, (long long)len,
                              (long long)steps);
                goto done8;
            }
        }
        for (int j = 0; j < S; j++) {
            og_tensor_free(st0[j]);
            st0[j] = NULL;
            if ((st = slice_at(s->tin[first + j], 0, b, og_pool_allocator(s->pool), &st0[j])))
                goto done8;
        }
        for (int k = 0; k < M; k++) {
            og_tensor *row = NULL;
            og_tensor_free(xs[k]);
            xs[k] = NULL;
            if ((st = slice_at(s->tin[first + S + k], 0, b, og_pool_allocator(s->pool), &row)))
                goto done8;
            /* the row's first len steps */
            row->dims[0] = len;
            row->numel = 1;
            for (int d = 0; d < row->rank; d++) row->numel *= row->dims[d];
            xs[k] = row;
        }
        memset(res, 0, (size_t)(S + K) * sizeof *res);
        st = scan_once(s, ni, (const og_tensor *const *)st0, (const og_tensor *const *)xs,
                       slice_axes, len, out_axes, res);
        if (st) goto done8;
        for (int j = 0; j < S + K; j++)
            if (!tlist_push(s->alloc, &rows[j], res[j])) {
                for (int i = j; i < S + K; i++) og_tensor_free(res[i]);
                st = og_error(OG_ERR_NOMEM, "out of memory");
                goto done8;
            }
    }
    /* states: rows stacked; scan outputs: rows padded to `steps` and stacked */
    for (int j = 0; j < S + K; j++) {
        const og_value *v = sub_out(&s->subs[ni][0], j);
        if (j >= S) {
            for (int64_t b = 0; b < rows[j].n; b++) {
                og_tensor *r = rows[j].t[b], *pad = NULL;
                if (r->dims[0] == steps) continue;
                int64_t dims[OG_MAX_RANK];
                memcpy(dims, r->dims, sizeof dims);
                dims[0] = steps;
                if ((st = og_tensor_create(r->dtype, r->rank, dims, og_pool_allocator(s->pool),
                                           &pad)))
                    goto done8;
                memcpy(pad->data, r->data, og_tensor_nbytes(r));
                og_tensor_free(r);
                rows[j].t[b] = pad;
            }
        }
        int64_t like[OG_MAX_RANK] = {0};
        int lr = v->rank >= 0 ? v->rank + (j >= S ? 1 : 0) : -1;
        if (j >= S && v->rank >= 0) {
            like[0] = steps;
            for (int d = 0; d < v->rank; d++) like[d + 1] = v->dims[d];
        } else {
            for (int d = 0; d < v->rank && d < OG_MAX_RANK; d++) like[d] = v->dims[d];
        }
        if ((st = stack(n, rows[j].t, rows[j].n, 0, false, v->dtype, lr, like,
                        og_pool_allocator(s->pool), &s->tout[j])))
            goto done8;
    }
done8:
    for (int j = 0; st0 && j < S; j++) og_tensor_free(st0[j]);
    for (int k = 0; xs && k < M; k++) og_tensor_free(xs[k]);
    for (int j = 0; rows && j < S + K; j++) tlist_free(s->alloc, &rows[j]);
    og_free(s->alloc, out_axes);
    og_free(s->alloc, slice_axes);
    og_free(s->alloc, rows);
    og_free(s->alloc, st0);
    og_free(s->alloc, xs);
    og_free(s->alloc, res);
fail:
    og_free(s->alloc, in_axes);
    return st;
}

/* ---- SequenceMap -------------------------------------------------------------------- */

/* The body runs once per item i of input 0; an input that is a sequence gives its item i
 * (every sequence input has input 0's length), a tensor is passed whole each time; output j
 * is the sequence of the body's j-th outputs. */
static og_status run_seqmap(og_session *s, int ni)
{
    const og_node *n = &s->g->nodes[ni];
    const og_control_params *p = n->params;
    const og_subexec *x = &s->subs[ni][0];
    const og_allocator *a = s->alloc;
    char label[256];
    int no = x->s->g->n_outputs;
    if (no != n->n_out)
        return og_error(OG_ERR_INTERNAL, "SequenceMap: %d body outputs for %d node outputs", no,
                        n->n_out);
    const og_tensor *seq = s->tin[0];
    if (!seq || seq->kind != OG_KIND_SEQUENCE)
        return og_error(OG_ERR_TYPE, "%s: input 0 must be a sequence, got a %s",
                        og_node_label(n, label, sizeof label),
                        seq ? og_kind_name(seq->kind) : "missing value");
    int64_t len = seq->n_items;
    for (int i = 1; i < p->n_own; i++) {
        const og_tensor *t = s->tin[i];
        if (!t)
            return og_error(OG_ERR_INVALID_ARG, "%s: input %d is missing",
                            og_node_label(n, label, sizeof label), i);
        if (t->kind == OG_KIND_SEQUENCE && t->n_items != len)
            return og_error(OG_ERR_SHAPE,
                            "%s: input %d is a sequence of %lld items, input 0 of %lld: they must "
                            "be equal",
                            og_node_label(n, label, sizeof label), i, (long long)t->n_items,
                            (long long)len);
    }
    /* the arrays follow the node: any number of inputs and outputs */
    const og_tensor **ins = scratch(s, (size_t)p->n_own + 1, sizeof *ins);
    og_tensor **outs = scratch(s, (size_t)no + 1, sizeof *outs);
    og_tensor **seqs = scratch(s, (size_t)no + 1, sizeof *seqs);
    og_status st = ins && outs && seqs ? OG_OK : OG_ERR_NOMEM;
    for (int j = 0; j < no && !st; j++) st = og_value_new(OG_KIND_SEQUENCE, a, &seqs[j]);
    for (int64_t k = 0; k < len && !st; k++) {
        for (int i = 0; i < p->n_own; i++)
            ins[i] = s->tin[i]->kind == OG_KIND_SEQUENCE ? s->tin[i]->items[k] : s->tin[i];
        if ((st = run_sub(s, x, ins, p->n_own, outs))) break;
        for (int j = 0; j < no; j++) {
            og_tensor *o = outs[j];
            outs[j] = NULL;
            if (!st)
                st = og_value_append(seqs[j], o); /* frees o on failure */
            else
                og_tensor_free(o);
        }
    }
    for (int j = 0; outs && seqs && j < no; j++) {
        og_tensor_free(outs[j]); /* what a failed run left */
        if (!st && n->out[j] >= 0) {
            s->tout[j] = seqs[j];
            seqs[j] = NULL;
        }
        og_tensor_free(seqs[j]);
    }
    og_free(s->alloc, (void *)ins);
    og_free(s->alloc, outs);
    og_free(s->alloc, seqs);
    return st;
}

og_status og_exec_control(og_session *s, int ni)
{
    const og_control_params *p = s->g->nodes[ni].params;
    og_status st;
    switch (p->kind) {
    case OG_CONTROL_IF: st = run_if(s, ni); break;
    case OG_CONTROL_LOOP: st = run_loop(s, ni); break;
    case OG_CONTROL_SEQMAP: st = run_seqmap(s, ni); break;
    default: st = run_scan(s, ni); break;
    }
    /* the subgraphs' idle blocks count against this session's budget, where its own pool
     * cannot free them to make room: free them now (iterations reused them meanwhile) */
    for (int k = 0; k < 2; k++)
        if (s->subs[ni][k].s) og_pool_trim(s->subs[ni][k].s->pool);
    return st;
}
