/* fuse_ew.c: chains of float element-wise nodes run as one loop (see fuse_ew.h): the
 * plan, made when a session is created, and a chain's run. */
#include <math.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "exec/fuse_ew.h"

/* The chain op of node i, or -1 when the node cannot be a member: float inputs and output
 * (static types), one output, bound, and left alone by the other plans. */
static int member_op(const og_graph *g, const og_kernel_binding *kb, const og_fusion *fusion,
                     const bool *internal, int i)
{
    static const struct {
        const char *name;
        og_ew_op op;
        int n_in; /* 0: 2 to OG_EW_MAX_ARGS */
        int since;
    } ops[] = {{"Add", OG_EW_ADD, 2, 7},          {"Sub", OG_EW_SUB, 2, 7},
               {"Mul", OG_EW_MUL, 2, 7},          {"Div", OG_EW_DIV, 2, 7},
               {"Sum", OG_EW_ADD, 0, 8},          {"Neg", OG_EW_UNARY, 1, 6},
               {"Abs", OG_EW_UNARY, 1, 6},        {"Relu", OG_EW_UNARY, 1, 6},
               {"Reciprocal", OG_EW_UNARY, 1, 6}, {"Sqrt", OG_EW_UNARY, 1, 6},
               {"Exp", OG_EW_UNARY, 1, 6},        {"Log", OG_EW_UNARY, 1, 6},
               {"Erf", OG_EW_UNARY, 1, 9},        {"Sigmoid", OG_EW_UNARY, 1, 6},
               {"Tanh", OG_EW_UNARY, 1, 6},       {"Pow", OG_EW_POW, 2, 7}};
    const og_node *n = &g->nodes[i];
    if (!n->op || !n->op_type || (n->domain && n->domain[0]) || n->n_out != 1 || n->out[0] < 0)
        return -1;
    if (fusion[i].skip || fusion[i].out >= 0 || fusion[i].wg_x >= 0 || fusion[i].pre >= 0 ||
        internal[n->out[0]] || g->values[n->out[0]].dtype != OG_FLOAT || !kb[i].fn)
        return -1;
    for (int j = 0; j < n->n_in; j++)
        if (n->in[j] < 0 || internal[n->in[j]] || g->values[n->in[j]].dtype != OG_FLOAT) return -1;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        if (strcmp(n->op_type, ops[k].name) != 0) continue;
        if (n->since_version < ops[k].since) return -1;
        if (ops[k].n_in ? n->n_in != ops[k].n_in : n->n_in < 2 || n->n_in > OG_EW_MAX_ARGS)
            return -1;
        /* a unary loop bound for float (not through a float32 copy of a 16-bit type) */
        if (ops[k].op == OG_EW_UNARY && (!kb[i].impl || kb[i].type != OG_FLOAT)) return -1;
        return (int)ops[k].op;
    }
    return -1;
}

/* Whether value v's last axis is 1 (a mean's, a variance's: LayerNorm's statistics), as
 * far as static shapes tell: such nodes make chains of their own, apart from those on the
 * full rows, since a chain's members all have one shape. */
static bool narrow(const og_graph *g, int v)
{
    const og_value *x = &g->values[v];
    return x->rank == 0 || (x->rank > 0 && x->dims[x->rank - 1] == 1);
}

/* Add node i (op `op`) to chain c when every value it reads from outside the chain is
 * computed before the chain's first node and there is room; false otherwise. */
static bool join(const og_graph *g, const int *group_of, int gi, og_ew_group *c, int i, int op,
                 const og_kernel_binding *kb)
{
    const og_node *n = &g->nodes[i];
    if (c->n >= OG_EW_MAX_STEPS) return false;
    if (c->n > 0 && narrow(g, n->out[0]) != narrow(g, g->nodes[c->node[0]].out[0])) return false;
    og_ew_step st = {.op = (og_ew_op)op, .n_args = n->n_in};
    if (op == OG_EW_UNARY) st.unary = kb[i].impl;
    int n_ops = c->n_ops, op_value[OG_EW_MAX_OPS];
    memcpy(op_value, c->op_value, sizeof op_value);
    for (int j = 0; j < n->n_in; j++) {
        const int v = n->in[j], p = g->values[v].producer;
        if (p >= 0 && group_of[p] == gi) {
            int m = 0;
            while (c->node[m] != p) m++;
            st.arg[j] = m;
            continue;
        }
        if (c->n > 0 && p >= c->node[0]) return false; /* not yet computed there */
        int k = 0;
        while (k < n_ops && op_value[k] != v) k++;
        if (k == n_ops) {
            if (n_ops == OG_EW_MAX_OPS) return false;
            op_value[n_ops++] = v;
        }
        st.arg[j] = -1 - k;
    }
    c->step[c->n] = st;
    c->outside[c->n] = false;
    c->node[c->n++] = i;
    c->n_ops = n_ops;
    memcpy(c->op_value, op_value, sizeof op_value);
    return true;
}

og_status og_ew_plan_make(const og_graph *g, const og_kernel_binding *kernels,
                          const og_fusion *fusion, const bool *internal, const og_allocator *a,
                          og_ew_plan *out)
{
    memset(out, 0, sizeof *out);
    og_ew_plan p = {0};
    int cap = 0;
    p.group_of = og_malloc(a, ((size_t)g->n_nodes + 1) * sizeof *p.group_of);
    if (!p.group_of) goto nomem;
    for (int i = 0; i < g->n_nodes; i++) p.group_of[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const int op = member_op(g, kernels, fusion, internal, i);
        if (op < 0) continue;
        const og_node *n = &g->nodes[i];
        int gi = -1;
        for (int j = 0; j < n->n_in && gi < 0; j++) {
            const int pr = g->values[n->in[j]].producer, c = pr >= 0 ? p.group_of[pr] : -1;
            if (c >= 0 && join(g, p.group_of, c, &p.groups[c], i, op, kernels)) gi = c;
        }
        if (gi < 0) { /* a chain of its own */
            if (p.n_groups == cap) {
                int nc = cap ? 2 * cap : 16;
                og_ew_group *ng =
                    og_realloc(a, p.groups, (size_t)cap * sizeof *ng, (size_t)nc * sizeof *ng);
                if (!ng) goto nomem;
                p.groups = ng;
                cap = nc;
            }
            gi = p.n_groups++;
            memset(&p.groups[gi], 0, sizeof p.groups[gi]);
            join(g, p.group_of, gi, &p.groups[gi], i, op, kernels);
        }
        p.group_of[i] = gi;
    }
    /* which members' outputs are read outside their chain */
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_in; j++) {
            const int pr = n->in[j] >= 0 ? g->values[n->in[j]].producer : -1;
            const int c = pr >= 0 ? p.group_of[pr] : -1;
            if (c < 0 || c == p.group_of[i]) continue;
            og_ew_group *grp = &p.groups[c];
            for (int m = 0; m < grp->n; m++)
                if (grp->node[m] == pr) grp->outside[m] = true;
        }
    }
    /* chains of one node are the node */
    int kept = 0;
    for (int c = 0; c < p.n_groups; c++) {
        og_ew_group *grp = &p.groups[c];
        for (int m = 0; m < grp->n; m++) p.group_of[grp->node[m]] = grp->n > 1 ? kept : -1;
        if (grp->n < 2) continue;
        p.n_members += grp->n;
        if (kept != c) p.groups[kept] = *grp;
        kept++;
    }
    p.n_groups = kept;
    p.done = og_calloc(a, (size_t)kept + 1, sizeof *p.done);
    if (!p.done) goto nomem;
    *out = p;
    return OG_OK;
nomem:
    og_ew_plan_free(&p, a);
    return og_error(OG_ERR_NOMEM, "out of memory creating a session");
}

void og_ew_plan_free(og_ew_plan *p, const og_allocator *a)
{
    og_free(a, p->groups);
    og_free(a, p->group_of);
    og_free(a, p->done);
    memset(p, 0, sizeof *p);
}

/* Whether t's first `rank` dims are dims[0..rank-1]. */
static bool same_dims(const og_tensor *t, int rank, const int64_t *dims)
{
    for (int d = 0; d < rank; d++)
        if (t->dims[d] != dims[d]) return false;
    return true;
}

/* How each operand of chain c that steps[0..n-1] read (used[k]) spreads over the chain's
 * shape (rank, dims: its largest such operand's), or false when these steps cannot run
 * fused in this run (see fuse_ew.h). */
static bool spreads(const og_session *s, const og_ew_group *c, const og_ew_step *steps, int n,
                    const bool *used, og_ew_operand *ops, int *rank, int64_t *dims, int64_t *numel)
{
    const og_tensor *big = NULL;
    for (int k = 0; k < c->n_ops; k++) {
        ops[k].data = NULL;
        ops[k].spread = OG_EW_FULL;
        if (!used[k]) continue;
        const og_tensor *t = s->slot[c->op_value[k]];
        if (!t || t->kind != OG_KIND_TENSOR || t->dtype != OG_FLOAT) return false;
        if (!big || t->numel > big->numel || (t->numel == big->numel && t->rank > big->rank))
            big = t;
    }
    if (!big || big->numel < 1 || big->rank < 1) return false;
    *rank = big->rank;
    memcpy(dims, big->dims, (size_t)big->rank * sizeof *dims);
    *numel = big->numel;
    const int64_t last = dims[*rank - 1];
    for (int k = 0; k < c->n_ops; k++) {
        if (!used[k]) continue;
        const og_tensor *t = s->slot[c->op_value[k]];
        ops[k].data = t->data;
        if (t->rank == *rank && same_dims(t, *rank, dims))
            ops[k].spread = OG_EW_FULL;
        else if (t->numel == 1 && t->rank <= *rank)
            ops[k].spread = OG_EW_SCALAR;
        else if (t->rank >= 1 && t->rank <= *rank && t->numel == last &&
                 t->dims[t->rank - 1] == last)
            ops[k].spread = OG_EW_ROW;
        else if (t->rank == *rank && t->dims[*rank - 1] == 1 && same_dims(t, *rank - 1, dims))
            ops[k].spread = OG_EW_COL;
        else
            return false;
    }
    /* every step has the chain's shape: it reads a full operand or a step (a Pow, as its
     * base) */
    for (int m = 0; m < n; m++) {
        bool full = false;
        const int args = steps[m].op == OG_EW_POW ? 1 : steps[m].n_args;
        for (int j = 0; j < args && !full; j++) {
            const int x = steps[m].arg[j];
            full = x >= 0 || ops[-1 - x].spread == OG_EW_FULL;
        }
        if (!full) return false;
    }
    return true;
}

/* Run chain gi at its first node: *fused tells whether it ran (else its nodes run one by
 * one).  A member this run does not need (run: per node, NULL for all) is left out: nothing
 * that runs reads it, and the values only it reads may be missing. */
static og_status run_chain(og_session *s, int gi, const bool *run, bool *fused)
{
    og_ew_group *c = &s->ew.groups[gi];
    const og_graph *g = s->g;
    og_ew_operand ops[OG_EW_MAX_OPS];
    og_ew_step steps[OG_EW_MAX_STEPS];
    og_tensor *outs[OG_EW_MAX_STEPS] = {0};
    int member[OG_EW_MAX_STEPS], at[OG_EW_MAX_STEPS]; /* step -> member, member -> step */
    bool used[OG_EW_MAX_OPS] = {0};
    int64_t dims[OG_MAX_RANK], numel;
    int rank, n = 0;
    og_status st = OG_OK;
    *fused = false;
    for (int m = 0; m < c->n; m++) {
        at[m] = -1;
        if (run && !run[c->node[m]]) continue;
        /* a value the caller's hooks place is computed by its node alone */
        if (s->placing && s->want_at[g->nodes[c->node[m]].out[0]] >= 0) return OG_OK;
        og_ew_step st1 = c->step[m];
        for (int j = 0; j < st1.n_args; j++) {
            const int x = st1.arg[j];
            if (x >= 0 && at[x] < 0) return OG_OK; /* reads a member left out: never so */
            if (x >= 0)
                st1.arg[j] = at[x];
            else
                used[-1 - x] = true;
        }
        member[n] = m;
        at[m] = n;
        steps[n++] = st1;
    }
    if (n < 1 || !spreads(s, c, steps, n, used, ops, &rank, dims, &numel)) return OG_OK;
    for (int i = 0; i < n; i++) { /* a Pow's loop, by its exponent (binary.c's k_pow) */
        if (steps[i].op != OG_EW_POW) continue;
        const int e = steps[i].arg[1];
        const float v = e < 0 && ops[-1 - e].spread == OG_EW_SCALAR ? ops[-1 - e].data[0] : NAN;
        if (v == 2.0f)
            steps[i].op = OG_EW_SQUARE;
        else if (v == 3.0f)
            steps[i].op = OG_EW_CUBE;
        else if (v == 0.5f)
            steps[i].op = OG_EW_SQRT;
        else
            return OG_OK; /* another exponent: the nodes one by one */
        steps[i].n_args = 1;
    }
    const size_t nbytes = (size_t)numel * sizeof(float);
    for (int i = 0; i < n; i++) {
        steps[i].out = NULL;
        const int v = g->nodes[c->node[member[i]]].out[0];
        if (!c->outside[member[i]] && !s->keep[v]) continue;
        og_buffer *b = og_pool_get(s->pool, nbytes);
        if (!b) {
            og_vinfo vo;
            og_vinfo_unknown(&vo);
            vo.kind = OG_KIND_TENSOR;
            vo.dtype = OG_FLOAT;
            vo.rank = rank;
            memcpy(vo.dims, dims, (size_t)rank * sizeof *dims);
            st = og_exec_budget_error(s, &g->nodes[c->node[member[i]]], 0, nbytes, &vo);
            goto fail;
        }
        st = og_tensor_from_buffer(OG_FLOAT, rank, dims, b, s->alloc, &outs[i]);
        if (st) {
            og_buffer_release(b);
            goto fail;
        }
        steps[i].out = outs[i]->data;
    }
    const og_node *n0 = &g->nodes[c->node[0]];
    og_kernel_ctx k = {.node = n0,
                       .params = n0->params,
                       .alloc = og_pool_allocator(s->pool),
                       .threads = s->threads,
                       .rng = s->run_key,
                       .scratch = &s->scratch,
                       .workers = s->workers};
    st = og_cpu_ew_chain(&k, steps, n, ops, c->n_ops, numel, dims[rank - 1]);
    if (st == OG_ERR_NOMEM) st = og_exec_budget_error(s, n0, -1, 0, NULL);
    if (st) goto fail;
    for (int i = 0; i < n; i++) {
        if (!outs[i]) continue;
        const int v = g->nodes[c->node[member[i]]].out[0];
        s->slot[v] = outs[i];
        s->owned[v] = true;
    }
    *fused = true;
    s->ew.n_fused_runs++;
    return OG_OK;
fail:
    for (int i = 0; i < n; i++) og_tensor_free(outs[i]);
    return st;
}

og_status og_ew_at(og_session *s, int ni, const bool *run, const int *lu, bool *skip)
{
    *skip = false;
    const int gi = s->ew.group_of[ni];
    if (gi < 0) return OG_OK;
    if (s->ew.groups[gi].node[0] == ni) {
        og_status st = run_chain(s, gi, run, &s->ew.done[gi]);
        if (st) return st;
    }
    if (!s->ew.done[gi]) return OG_OK;
    /* the chain computed this node: its inputs whose last reader it is go back to the pool,
     * as after run_node (a value only members read was never computed) */
    const og_node *n = &s->g->nodes[ni];
    for (int j = 0; j < n->n_in; j++) {
        const int v = n->in[j];
        if (v >= 0 && lu[v] == ni && s->owned[v] && !s->keep[v]) {
            og_tensor_free(s->slot[v]);
            s->slot[v] = NULL;
            s->owned[v] = false;
        }
    }
    *skip = true;
    return OG_OK;
}
