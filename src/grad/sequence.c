/* sequence.c: gradients through sequences and optionals (src/ops/sequence.c).  A sequence's
 * gradient is a sequence of its items' gradients, an optional's an optional of its element's;
 * the rules move items between them with the same ops, run backwards:
 *   SequenceConstruct(x_0..x_n):  dx_i = SequenceAt(dS, i)
 *   SequenceAt(S, p):             dS gets dy at item p (og_gb_item_gradient; added up when the
 *                                 whole of dS is known, og_gb_sequence_total: whole gradients
 *                                 from several consumers are summed item by item, add_whole)
 *   SequenceInsert(S, t, p):      dS = SequenceErase(dS', p'), dt = SequenceAt(dS', p')
 *   SequenceErase(S, p):          dS = SequenceInsert(dS', zeros like S[p'], p')
 *   SplitToSequence(x):           dx = ConcatFromSequence(dS) along the axis (stacked back
 *                                 when the split dropped it)
 *   ConcatFromSequence(S):        dS = SplitToSequence(dy) into the items' lengths, which the
 *                                 producer of S gives (SplitToSequence's split, the lengths
 *                                 of SequenceConstruct's inputs), else a Loop over the items
 *                                 counts (a Loop's carried sequence)
 *   Optional(x): dx = OptionalGetElement(dO);  OptionalGetElement(O): dO = Optional(dy)
 *   (zeros like an optional, and sums of optionals a Loop accumulates, are made under an If
 *   on OptionalHasElement: opt_guarded)
 * where p' is the position made nonnegative (p + length when p < 0).  Zeros like a sequence
 * are made the way it was made, else (a Loop's output, a graph or body input) by a Loop over
 * its items (seq_items_rt), as are whole gradients summed over a length known at run time
 * only.  Everything is standard ai.onnx (opset 11 and later; those Loops carry a sequence,
 * which the spec allows from opset 13), so saved training graphs run in other runtimes. */
#include <string.h>

#include "grad/rule_util.h"
#include "grad/subgraph.h"

/* The element dtype of a sequence or optional value (OG_UNDEFINED when unknown). */
static og_dtype elem_dtype(og_gb *b, int v)
{
    const og_type *t = og_gb_value(b, v)->type;
    while (t && t->kind != OG_KIND_TENSOR) t = t->elem;
    return t ? t->dtype : OG_UNDEFINED;
}

/* p (an int32 or int64 scalar) as int64, + len when negative. */
static int norm_pos(og_gb *b, int p, int len)
{
    int q = og_rule_cast(b, p, OG_INT64);
    int neg = og_gb_op2(b, "Less", q, og_gb_scalar(b, 0, OG_INT64));
    return og_gb_op3(b, "Where", neg, og_gb_op2(b, "Add", q, len), q);
}

static int seq_at(og_gb *b, int s, int pos) { return og_gb_op2(b, "SequenceAt", s, pos); }

/* Zeros of dtype dt in the shape of (emitted) tensor value x. */
static int zeros_shaped(og_gb *b, int x, og_dtype dt)
{
    return og_gb_op2(b, "Expand", og_gb_scalar(b, 0, dt), og_gb_op1(b, "Shape", x));
}

/* A sequence as long as forward sequence v, made at run time by a Loop over v's items
 * (SequenceLength(v) iterations, a sequence carried from SequenceEmpty, SequenceInsert at
 * the end): item i is zeros shaped as v[i] when m is 0, else the Sum of seqs[k][i] over the
 * m sequences seqs (emitted values as long as v).  The Loop carries a sequence, which the
 * ONNX spec allows from opset 13 (onnxgrad runs it at every opset).  -1 after an error. */
static int seq_items_rt(og_gb *b, int v, const int *seqs, int m)
{
    const og_allocator *al = og_gb_alloc(b);
    og_dtype dt = elem_dtype(b, v);
    if (dt == OG_UNDEFINED) dt = OG_FLOAT;
    /* names unique in the training graph: v's and the count of its values so far */
    char *pf = og_strfmt(al, "%s_%s%d", og_gb_value(b, v)->name, m ? "sum" : "zeros",
                         og_gb_graph(b)->n_values);
    char *ni = pf ? og_strfmt(al, "%s_i", pf) : NULL, *nc = pf ? og_strfmt(al, "%s_c", pf) : NULL;
    char *ns = pf ? og_strfmt(al, "%s_s", pf) : NULL;
    int *at = og_malloc(al, (size_t)(m ? m : 1) * sizeof *at);
    og_graph *E = ni && nc && ns && at ? og_graph_new(al) : NULL;
    og_gb *eb = NULL;
    og_graph *B = E ? og_sub_open(b, E, pf, &eb) : NULL;
    og_graph_free(E);
    int r = -1;
    if (!B) {
        og_free(al, ni);
        og_free(al, nc);
        og_free(al, ns);
        if (!og_gb_status(b)) og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    int i = og_sub_input(eb, B, ni, OG_INT64, 0), cond = og_sub_input(eb, B, nc, OG_BOOL, 0);
    int acc = og_sub_input(eb, B, ns, OG_UNDEFINED, -1);
    const og_type *t = og_graph_type_tensor(B, dt, -1, NULL);
    t = t ? og_graph_type_wrap(B, OG_KIND_SEQUENCE, OG_UNDEFINED, t) : NULL;
    if (!t) og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    if (acc >= 0 && t) B->values[acc].type = t;
    int item;
    if (m == 0) {
        item = zeros_shaped(eb, seq_at(eb, og_sub_outer(eb, B, og_gb_value(b, v)->name), i), dt);
    } else {
        for (int k = 0; k < m; k++)
            at[k] = seq_at(eb, og_sub_outer(eb, B, og_gb_value(b, seqs[k])->name), i);
        item = og_gb_op(eb, "Sum", m, at);
    }
    og_sub_output(eb, B, cond, OG_BOOL);
    og_sub_output(eb, B, og_gb_op2(eb, "SequenceInsert", acc, item), OG_UNDEFINED);
    if (!og_gb_status(eb)) B->values[B->outputs[1]].type = t;
    int empty = og_gb_op(b, "SequenceEmpty", 0, NULL);
    og_gb_attr_int(b, og_gb_last(b), "dtype", dt);
    int in[3] = {og_gb_op1(b, "SequenceLength", v), -1, empty};
    int node = og_gb_op_ext(b, "", "Loop", 3, in, 1, NULL, &r);
    og_sub_attach(b, eb, B, node, "body");
done:
    og_free(al, at);
    og_free(al, pf); /* eb named by it till attached */
    return og_gb_status(b) ? -1 : r;
}

/* A sequence of zeros like forward sequence v, item by item, made the way v was when its
 * producers are ops below, else at run time (seq_items_rt: a graph input, a Loop's output,
 * a body's carried sequence, ...). */
static int zeros_seq(og_gb *b, const og_node *rule_node, int v, int depth)
{
    const og_node *pp = og_gb_producer(b, v);
    if (!pp || depth > OG_MAX_NESTING) return seq_items_rt(b, v, NULL, 0);
    og_node p = *pp; /* a copy: emitting moves the node array (attributes stay put) */
    const char *op = p.op_type;
    if (strcmp(op, "SequenceConstruct") == 0) {
        int *z = og_malloc(og_gb_alloc(b), (size_t)p.n_in * sizeof *z);
        if (!z) return og_gb_fail(b, rule_node, OG_ERR_NOMEM, "out of memory");
        for (int i = 0; i < p.n_in; i++) z[i] = og_rule_zeros_like(b, p.in[i]);
        int s = og_gb_op(b, "SequenceConstruct", p.n_in, z);
        og_free(og_gb_alloc(b), z);
        return s;
    }
    if (strcmp(op, "SplitToSequence") == 0) {
        int in[2] = {og_rule_zeros_like(b, p.in[0]), p.n_in > 1 ? p.in[1] : -1};
        int s = og_gb_op(b, "SplitToSequence", 2, in);
        og_gb_copy_attrs(b, og_gb_last(b), &p, NULL);
        return s;
    }
    if (strcmp(op, "SequenceInsert") == 0) {
        int in[3] = {zeros_seq(b, rule_node, p.in[0], depth + 1), og_rule_zeros_like(b, p.in[1]),
                     p.n_in > 2 ? p.in[2] : -1};
        return og_gb_op(b, "SequenceInsert", 3, in);
    }
    if (strcmp(op, "SequenceErase") == 0) {
        int in[2] = {zeros_seq(b, rule_node, p.in[0], depth + 1), p.n_in > 1 ? p.in[1] : -1};
        return og_gb_op(b, "SequenceErase", 2, in);
    }
    if (strcmp(op, "SequenceEmpty") == 0) {
        int s = og_gb_op(b, "SequenceEmpty", 0, NULL);
        og_gb_copy_attrs(b, og_gb_last(b), &p, NULL);
        return s;
    }
    if (strcmp(op, "Identity") == 0) return zeros_seq(b, rule_node, p.in[0], depth + 1);
    if (strcmp(op, "OptionalGetElement") == 0) {
        /* a sequence passed through (opset 18), or the element of Optional(S) */
        int o = p.in[0];
        if (og_value_kind_of(og_gb_value(b, o)) == OG_KIND_SEQUENCE)
            return zeros_seq(b, rule_node, o, depth + 1);
        const og_node *q = og_gb_producer(b, o);
        if (q && strcmp(q->op_type, "Optional") == 0 && q->n_in > 0 && q->in[0] >= 0)
            return zeros_seq(b, rule_node, q->in[0], depth + 1);
    }
    return seq_items_rt(b, v, NULL, 0);
}

/* The number of items of forward sequence v when the graph fixes it (-1 when not): from
 * SequenceConstruct's inputs, SequenceEmpty, SequenceInsert and SequenceErase of a sequence
 * of known length, SplitToSequence by a split of static length or, without one, along an
 * axis of static size, and Identity. */
static int64_t static_length(og_gb *b, int v, int depth)
{
    const og_node *p = og_gb_producer(b, v);
    if (!p || depth > OG_MAX_NESTING) return -1;
    const char *op = p->op_type;
    if (strcmp(op, "SequenceConstruct") == 0) return p->n_in;
    if (strcmp(op, "SequenceEmpty") == 0) return 0;
    if (strcmp(op, "Identity") == 0) return static_length(b, p->in[0], depth + 1);
    if (strcmp(op, "SequenceInsert") == 0 || strcmp(op, "SequenceErase") == 0) {
        int64_t len = static_length(b, p->in[0], depth + 1);
        return len < 0 ? -1 : len + (op[8] == 'I' ? 1 : -1);
    }
    if (strcmp(op, "SplitToSequence") == 0) {
        const og_value *x = og_gb_value(b, p->in[0]);
        if (p->n_in > 1 && p->in[1] >= 0) {
            const og_value *sp = og_gb_value(b, p->in[1]);
            return sp->rank == 1 && og_dim_known(sp->dims[0]) ? sp->dims[0] : -1;
        }
        if (x->rank < 1) return -1;
        int64_t a = og_attr_int(p, "axis", 0);
        a = a < 0 ? a + x->rank : a;
        return a >= 0 && a < x->rank && og_dim_known(x->dims[a]) ? x->dims[a] : -1;
    }
    return -1;
}

/* The sum of the whole gradients (pos[i] < 0) of sequence v.  Items of one static shape, or
 * of one shape known at run time (SplitToSequence without a split, into size-1 parts):
 * each whole gradient stacked (ConcatFromSequence, new_axis), added, and split again.
 * Otherwise (items of different shapes, or shapes known only at run time) item by item over
 * the length the graph fixes (static_length): each item the Sum of the SequenceAt of every
 * whole gradient, gathered again by SequenceConstruct; over a length known at run time
 * only, the same item by item in a Loop (seq_items_rt). */
static int add_whole(og_gb *b, int v, const int *grads, const int *pos, int n, int whole)
{
    const og_value *val = og_gb_value(b, v);
    const og_type *e = val->type ? val->type->elem : NULL;
    bool fixed = e && e->kind == OG_KIND_TENSOR && e->rank >= 0;
    for (int d = 0; fixed && d < e->rank; d++) fixed = e->dims[d] >= 0;
    /* SplitToSequence without a split makes items of one shape, known at run time or not */
    const og_node *pp = og_gb_producer(b, v);
    fixed = fixed ||
            (pp && strcmp(pp->op_type, "SplitToSequence") == 0 && (pp->n_in < 2 || pp->in[1] < 0));
    int64_t len = static_length(b, v, 0);
    if (len == 0) fixed = false; /* empty: nothing to stack (ConcatFromSequence refuses) */
    if (fixed) len = -1;
    int *st = og_malloc(og_gb_alloc(b), (size_t)whole * sizeof *st), *items = NULL, k = 0, r = -1;
    if (!st) {
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (fixed) {
        for (int i = 0; i < n; i++) {
            if (pos[i] >= 0) continue;
            st[k++] = og_gb_op1(b, "ConcatFromSequence", grads[i]);
            og_gb_attr_int(b, og_gb_last(b), "axis", 0);
            og_gb_attr_int(b, og_gb_last(b), "new_axis", 1);
        }
        r = og_gb_op1(b, "SplitToSequence", og_gb_op(b, "Sum", whole, st));
        og_gb_attr_int(b, og_gb_last(b), "axis", 0);
        og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    } else if (len == 0) { /* empty: any of them */
        for (int i = 0; i < n && r < 0; i++)
            if (pos[i] < 0) r = grads[i];
    } else if (len > 0 && len <= (1 << 16)) {
        items = og_malloc(og_gb_alloc(b), (size_t)len * sizeof *items);
        if (!items) {
            og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (int64_t j = 0; j < len; j++) {
            int at = og_gb_scalar_i64(b, j, OG_INT64);
            k = 0;
            for (int i = 0; i < n; i++)
                if (pos[i] < 0) st[k++] = seq_at(b, grads[i], at);
            items[j] = og_gb_op(b, "Sum", whole, st);
        }
        r = og_gb_op(b, "SequenceConstruct", (int)len, items);
    } else { /* a length known at run time only: a Loop over the items */
        for (int i = 0; i < n; i++)
            if (pos[i] < 0) st[k++] = grads[i];
        r = seq_items_rt(b, v, st, whole);
    }
done:
    og_free(og_gb_alloc(b), items);
    og_free(og_gb_alloc(b), st);
    return og_gb_status(b) ? -1 : r;
}

static int opt_guarded(og_gb *b, int v, const int *opts, int m);

int og_gb_sequence_total(og_gb *b, int v, const int *grads, const int *pos, int n)
{
    const og_value *val = og_gb_value(b, v);
    if (og_value_kind_of(val) == OG_KIND_OPTIONAL) {
        if (n == 1) return grads[0];
        /* an empty optional's gradients are empty (zeros_in, opt_guarded): summed where it
         * has an element only; before opset 16 (no Identity of an optional) the elements
         * are summed unguarded, which fails at run time on an empty one */
        const og_type *e = val->type->elem;
        if (!e || e->kind != OG_KIND_TENSOR)
            return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                              "optional '%s' gets gradients from several consumers, and its "
                              "element is not a tensor",
                              val->name);
        if (og_gb_opset(b) >= 16) return opt_guarded(b, v, grads, n);
        int *el = og_malloc(og_gb_alloc(b), (size_t)n * sizeof *el);
        if (!el) return og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        for (int i = 0; i < n; i++) el[i] = og_gb_op1(b, "OptionalGetElement", grads[i]);
        int s = og_gb_op1(b, "Optional", og_gb_op(b, "Sum", n, el));
        og_free(og_gb_alloc(b), el);
        return s;
    }
    /* a sequence: the whole contributions, then the items */
    int whole = 0, base = -1;
    for (int i = 0; i < n; i++) whole += pos[i] < 0;
    if (whole == 1 || (whole == 0 && n == 1 && pos[0] < 0)) {
        for (int i = 0; i < n; i++)
            if (pos[i] < 0) base = grads[i];
    } else if (whole > 1) {
        base = add_whole(b, v, grads, pos, n, whole);
    } else {
        base = zeros_seq(b, NULL, v, 0);
    }
    int len = -1;
    for (int i = 0; i < n; i++) {
        if (pos[i] < 0) continue;
        if (len < 0) len = og_gb_op1(b, "SequenceLength", v);
        int p = norm_pos(b, pos[i], len);
        int sum = og_rule_add(b, seq_at(b, base, p), grads[i]);
        base = og_gb_op3(b, "SequenceInsert", og_gb_op2(b, "SequenceErase", base, p), sum, p);
    }
    return base;
}

int og_gb_sequence_zeros(og_gb *b, int v) { return zeros_seq(b, NULL, v, 0); }

int og_gb_sequence_sum_items(og_gb *b, int v, const int *seqs, int m)
{
    return seq_items_rt(b, v, seqs, m);
}

/* Branch `which` (0: then, 1: else) of the If opt_guarded makes, in B: then Optional(the
 * Sum of the elements of opts[0..m-1], or zeros like v's element when m is 0), else v. */
static void opt_branch(og_gb *b, og_gb *eb, og_graph *B, int which, int v, const int *opts, int m)
{
    const og_value *val = og_gb_value(b, v);
    int r;
    if (which) {
        r = og_sub_outer(eb, B, val->name);
    } else if (m == 0) {
        int el = og_gb_op1(eb, "OptionalGetElement", og_sub_outer(eb, B, val->name));
        r = og_gb_op1(eb, "Optional", zeros_shaped(eb, el, elem_dtype(b, v)));
    } else {
        int *el = og_malloc(og_gb_alloc(b), (size_t)m * sizeof *el);
        if (!el) {
            og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
            return;
        }
        for (int k = 0; k < m; k++)
            el[k] = og_gb_op1(eb, "OptionalGetElement",
                              og_sub_outer(eb, B, og_gb_value(b, opts[k])->name));
        r = og_gb_op1(eb, "Optional", og_gb_op(eb, "Sum", m, el));
        og_free(og_gb_alloc(b), el);
    }
    og_sub_output(eb, B, r, OG_UNDEFINED); /* v itself: an Identity (opset 16) */
    if (og_gb_status(eb) || !B->n_outputs) return;
    const og_type *t = val->type ? og_graph_type(B, val->type) : NULL;
    if (!t) og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    B->values[B->outputs[B->n_outputs - 1]].type = t;
}

/* An optional like forward optional v (of a tensor), made only where v has an element:
 * If(OptionalHasElement(v)) then Optional(the Sum of the elements of opts[0..m-1], or
 * zeros like v's element when m is 0) else v (empty: its gradient is empty too).  The else
 * branch gives v through an Identity, which takes optionals from opset 16.  -1 after an
 * error. */
static int opt_guarded(og_gb *b, int v, const int *opts, int m)
{
    const og_allocator *al = og_gb_alloc(b);
    const og_value *val = og_gb_value(b, v);
    if (og_gb_opset(b) < 16)
        return og_gb_fail(b, NULL, OG_ERR_UNSUPPORTED,
                          "the gradient of optional '%s' read in a subgraph needs opset 16 or "
                          "later (an Identity of an optional), the model has %lld",
                          val->name, (long long)og_gb_opset(b));
    int cond = og_gb_op1(b, "OptionalHasElement", v), r = -1;
    og_graph *Bs[2] = {NULL, NULL};
    og_gb *ebs[2] = {NULL, NULL};
    char *pf[2] = {NULL, NULL}; /* each branch's emitter names by it till attached */
    for (int k = 0; k < 2 && !og_gb_status(b); k++) {
        pf[k] = og_strfmt(al, "%s_%s%d_%s", val->name, m ? "sum" : "zeros",
                          og_gb_graph(b)->n_values, k ? "else" : "then");
        og_graph *E = pf[k] ? og_graph_new(al) : NULL;
        Bs[k] = E ? og_sub_open(b, E, pf[k], &ebs[k]) : NULL;
        og_graph_free(E);
        if (!Bs[k] && !og_gb_status(b)) og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        if (Bs[k]) opt_branch(b, ebs[k], Bs[k], k, v, opts, m);
    }
    int node = og_gb_status(b) ? -1 : og_gb_op_ext(b, "", "If", 1, &cond, 1, NULL, &r);
    for (int k = 0; k < 2; k++) {
        if (Bs[k] && node >= 0) {
            og_sub_attach(b, ebs[k], Bs[k], node, k ? "else_branch" : "then_branch");
        } else if (Bs[k]) {
            og_gb_close(ebs[k]);
            og_graph_free(Bs[k]);
        }
        og_free(al, pf[k]);
    }
    return og_gb_status(b) ? -1 : r;
}

int og_gb_optional_zeros(og_gb *b, int v) { return opt_guarded(b, v, NULL, 0); }

int og_gb_optional_sum(og_gb *b, int v, const int *opts, int m)
{
    return opt_guarded(b, v, opts, m);
}

/* ---- rules ----------------------------------------------------------------------------- */

static og_status g_construct(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    for (int i = 0; i < n->n_in && dy[0] >= 0; i++)
        if (WANTS(i)) dx[i] = seq_at(b, dy[0], og_gb_scalar(b, i, OG_INT64));
    return og_gb_status(b);
}

static og_status g_at(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    og_gb_item_gradient(b, IN(0), IN(1), dy[0]);
    return og_gb_status(b);
}

static og_status g_insert(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] < 0) return og_gb_status(b);
    int p = n->n_in > 2 && IN(2) >= 0 ? norm_pos(b, IN(2), og_gb_op1(b, "SequenceLength", IN(0)))
                                      : og_gb_scalar(b, -1, OG_INT64);
    if (WANTS(0)) dx[0] = og_gb_op2(b, "SequenceErase", dy[0], p);
    if (WANTS(1)) dx[1] = seq_at(b, dy[0], p);
    return og_gb_status(b);
}

static og_status g_erase(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] < 0 || !WANTS(0)) return og_gb_status(b);
    int len = og_gb_op1(b, "SequenceLength", IN(0));
    int p = n->n_in > 1 && IN(1) >= 0 ? norm_pos(b, IN(1), len)
                                      : og_gb_op2(b, "Sub", len, og_gb_scalar(b, 1, OG_INT64));
    int z = zeros_shaped(b, seq_at(b, IN(0), p), elem_dtype(b, IN(0)));
    dx[0] = og_gb_op3(b, "SequenceInsert", dy[0], z, p);
    return og_gb_status(b);
}

static og_status g_split(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] < 0 || !WANTS(0)) return og_gb_status(b);
    bool has_split = n->n_in > 1 && IN(1) >= 0;
    if (static_length(b, OUT(0), 0) == 0) { /* no items to concatenate: x is empty */
        dx[0] = og_rule_zeros_like(b, IN(0));
        og_gb_gradient_unused(b); /* dy has no items */
        return og_gb_status(b);
    }
    dx[0] = og_gb_op1(b, "ConcatFromSequence", dy[0]);
    og_gb_attr_int(b, og_gb_last(b), "axis", og_attr_int(n, "axis", 0));
    if (!has_split && og_attr_int(n, "keepdims", 1) == 0)
        og_gb_attr_int(b, og_gb_last(b), "new_axis", 1);
    return og_gb_status(b);
}

/* The lengths along axis a of the items of sequence s (a forward value), as a 1-D int64
 * tensor, whatever made the sequence (a Loop appending to it): a Loop over the items. */
static int item_lengths(og_gb *b, const og_node *n, int s, int64_t a)
{
    const og_allocator *al = og_gb_alloc(b);
    char *pf = og_strfmt(al, "%s_lengths", og_gb_value(b, OUT(0))->name);
    char *ni = pf ? og_strfmt(al, "%s_i", pf) : NULL, *nc = pf ? og_strfmt(al, "%s_c", pf) : NULL;
    og_graph *E = ni && nc ? og_graph_new(al) : NULL;
    og_gb *eb = NULL;
    og_graph *B = E ? og_sub_open(b, E, pf, &eb) : NULL;
    og_graph_free(E);
    if (!B) {
        og_free(al, pf);
        og_free(al, ni);
        og_free(al, nc);
        return og_gb_status(b) ? -1 : og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    }
    int i = og_sub_input(eb, B, ni, OG_INT64, 0), cond = og_sub_input(eb, B, nc, OG_BOOL, 0);
    int item = seq_at(eb, og_sub_outer(eb, B, og_gb_value(b, s)->name), i);
    int len = og_gb_op2(eb, "Gather", og_gb_op1(eb, "Shape", item), og_gb_const_i64(eb, &a, 1));
    og_sub_output(eb, B, cond, OG_BOOL);
    og_sub_output(eb, B, len, OG_INT64);
    /* the condition given (true): an omitted last input would be dropped */
    int in[2] = {og_gb_op1(b, "SequenceLength", s),
                 og_rule_cast(b, og_gb_scalar(b, 1, OG_INT64), OG_BOOL)};
    int lens = -1;
    int node = og_gb_op_ext(b, "", "Loop", 2, in, 1, NULL, &lens);
    og_sub_attach(b, eb, B, node, "body");
    og_free(al, pf);                                             /* eb named by it till attached */
    return og_rule_reshape_c(b, lens, (const int64_t[]){-1}, 1); /* [count, 1] -> [count] */
}

static og_status g_concat(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] < 0 || !WANTS(0)) return og_gb_status(b);
    int64_t axis = og_attr_int(n, "axis", 0);
    bool stacked = og_attr_int(n, "new_axis", 0) != 0;
    int split = -1;
    if (!stacked) {
        const og_node *pp = og_gb_producer(b, IN(0));
        og_node p;
        if (pp) p = *pp;
        int rank = og_gb_value(b, OUT(0))->rank;
        if (rank >= 0 && (axis < -(int64_t)rank || axis >= rank)) {
            /* the forward pass checks it against the items' rank, which may be unknown */
            og_gb_fail(b, n, OG_ERR_MODEL, "axis %lld is outside output '%s' of rank %d",
                       (long long)axis, og_gb_value(b, OUT(0))->name, rank);
            return og_gb_status(b);
        }
        int64_t split_axis = pp ? og_attr_int(&p, "axis", 0) : 0;
        if (pp && strcmp(p.op_type, "SplitToSequence") == 0 && rank >= 0 &&
            (p.n_in > 1 && p.in[1] >= 0 ? 1 : og_attr_int(&p, "keepdims", 1)) &&
            split_axis >= -(int64_t)rank && split_axis < rank &&
            (split_axis + rank) % rank == (axis + rank) % rank) {
            /* the same partition as the split that made the sequence */
            split = p.n_in > 1 && p.in[1] >= 0 ? p.in[1] : -2;
        } else if (pp && strcmp(p.op_type, "SequenceConstruct") == 0 && rank >= 0) {
            int *len = og_malloc(og_gb_alloc(b), (size_t)p.n_in * sizeof *len);
            if (!len) {
                og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
                return og_gb_status(b);
            }
            int64_t a = (axis + rank) % rank;
            for (int i = 0; i < p.n_in; i++)
                len[i] = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", p.in[i]),
                                   og_gb_const_i64(b, &a, 1));
            split = og_gb_op(b, "Concat", p.n_in, len);
            og_gb_attr_int(b, og_gb_last(b), "axis", 0);
            og_free(og_gb_alloc(b), len);
        } else if (rank >= 1) { /* a Loop's sequence, ...: the lengths counted at run time */
            split = item_lengths(b, n, IN(0), (axis + rank) % rank);
        } else {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                       "the gradient of ConcatFromSequence needs its output's rank (to find the "
                       "items' lengths along its axis)");
            return og_gb_status(b);
        }
    }
    int in[2] = {dy[0], split >= 0 ? split : -1};
    dx[0] = og_gb_op(b, "SplitToSequence", 2, in);
    og_gb_attr_int(b, og_gb_last(b), "axis", axis);
    if (stacked) og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    return og_gb_status(b);
}

static og_status g_optional(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] >= 0 && n->n_in > 0 && WANTS(0)) dx[0] = og_gb_op1(b, "OptionalGetElement", dy[0]);
    return og_gb_status(b);
}

static og_status g_get_element(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (dy[0] < 0 || !WANTS(0)) return og_gb_status(b);
    bool opt = og_value_kind_of(og_gb_value(b, IN(0))) == OG_KIND_OPTIONAL;
    dx[0] = og_gb_op1(b, opt ? "Optional" : "Identity", dy[0]);
    return og_gb_status(b);
}

const og_grad_rule og_grad_sequence[] = {{"SequenceConstruct", "", g_construct},
                                         {"SequenceAt", "", g_at},
                                         {"SequenceInsert", "", g_insert},
                                         {"SequenceErase", "", g_erase},
                                         {"SplitToSequence", "", g_split},
                                         {"ConcatFromSequence", "", g_concat},
                                         {"Optional", "", g_optional},
                                         {"OptionalGetElement", "", g_get_element},
                                         {0}};
