/* control.c: gradients of If, Loop and Scan (src/ops/control.c).
 *
 * A subgraph's gradient is built as a graph of its own: the subgraph is taken out
 * (og_graph_extract: its outer values become inputs), differentiated by og_grad_build, and
 * the resulting graph T copied into a new subgraph of the training graph, where T's inputs
 * are defined from what the backward node has (T recomputes the subgraph's forward values
 * it needs, so only per-iteration states are kept, not every intermediate).
 *
 *   If: a backward If on the same condition; each branch is its T, reading the If's
 *       output gradients (float tensors, and sequences and optionals of them; another
 *       output with a gradient is refused) and the outer values from the enclosing graph,
 *       and giving the gradient of every outer value a gradient reaches (zeros from a
 *       branch that does not read one).
 *   Loop: the forward body also gives, as scan outputs, each iteration's loop-carried
 *       values and its number, so that a backward Loop over the same count, iterations in
 *       reverse, recomputes iteration i from its state:  dS_{i} = ∂body/∂S · dS_{i+1} (+ the
 *       scan outputs' gradients at i), and sums the outer values' gradients as loop-carried
 *       accumulators.  dv_initial = dS_0.  A carried sequence's gradient is a carried
 *       sequence (where the final one has a gradient, or the body computes a float tensor
 *       from it: feeds_tensor); its values per iteration are not kept (a scan output cannot
 *       hold one): a body appending to it needs none, and where the body's gradient reads
 *       one (SequenceAt of it, SequenceLength, a front insert, SequenceErase) the backward
 *       body recomputes it at iteration i by running a copy of the forward body i times
 *       from the Loop's initial values (recompute_sequences: quadratic in the iterations,
 *       any body).
 *   Scan (9 and later): the same with the states saved per step; the scan inputs' slice
 *       gradients are the backward Loop's scan outputs, put back in the input's order and
 *       axis.
 *   Scan-8: a Loop over the batch rows, each running the backward Loop of its own
 *       sequence_lens steps (g_scan8).
 * An outer value is a float tensor, or a sequence or optional of them, that a subgraph
 * reads (by more than SequenceLength or OptionalHasElement): a sequence's gradient is a
 * sequence, an optional's an optional, zeros like it from an If branch that does not read
 * it, and summed item by item (element) as a Loop's accumulator (implicit_sources, zeros_in,
 * acc_add). */
#include <stdio.h>
#include <string.h>

#include "grad/rule_util.h"
#include "grad/subgraph.h"
#include "ops/control.h"

/* No fixed limit on the values a node carries: the index lists below are allocated, sized
 * by the node and its subgraph (ints), and the names by their parts (og_strfmt). */

/* count zeroed ints from the training graph's allocator; NULL after an error on b */
static int *ints(og_gb *b, const og_node *n, size_t count)
{
    int *p = og_calloc(og_gb_alloc(b), count ? count : 1, sizeof *p);
    if (!p) og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    return p;
}

/* A name made of parts (allocated); NULL after an error on b */
#define NAME(b, ...) name_of((b), og_strfmt(og_gb_alloc(b), __VA_ARGS__))
static char *name_of(og_gb *b, char *s)
{
    if (!s) og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
    return s;
}

/* ---- a subgraph's gradient as a graph ------------------------------------------------ */

typedef struct sub_grad {
    og_graph *T;           /* og_grad_build of the extracted subgraph */
    int *grad;             /* T's value holding the gradient of each source */
    int *seed;             /* T's input taking the gradient of each differentiated output */
    const og_allocator *a; /* of grad and seed */
} sub_grad;

static void sub_grad_free(sub_grad *sg)
{
    og_graph_free(sg->T);
    sg->T = NULL;
    if (sg->a) {
        og_free(sg->a, sg->grad);
        og_free(sg->a, sg->seed);
    }
    sg->grad = sg->seed = NULL;
}

/* The gradient of subgraph G's outputs outs[0..n_out-1] (value ids of G) with respect to
 * its values src[0..n_src-1] (inputs or outer values), with value names starting with
 * prefix.  Functions and opset imports T needs go to the training graph. */
static bool sub_gradient(og_gb *b, const og_node *n, const og_graph *G, const int *src, int n_src,
                         const int *outs, int n_out, const char *prefix, sub_grad *sg)
{
    og_graph *S = NULL;
    memset(sg, 0, sizeof *sg);
    sg->a = og_gb_alloc(b);
    if (!(sg->grad = ints(b, n, (size_t)n_src)) || !(sg->seed = ints(b, n, (size_t)n_out)))
        return false;
    og_grad_spec spec = {NULL, 0, src, n_src, outs, n_out, NULL, NULL, prefix, true};
    og_status st = og_graph_extract(G, &S);
    if (!st) st = og_grad_build(S, &spec, og_gb_alloc(b), &sg->T);
    og_graph_free(S);
    if (st) {
        og_gb_fail(b, n, st, "in a subgraph: %s", og_last_error());
        return false;
    }
    og_graph *T = sg->T;
    for (int k = 0; k < n_src; k++) sg->grad[k] = T->outputs[n_out + k];
    for (int j = 0; j < n_out; j++) {
        char *name = NAME(b, "%s_%s_grad", prefix, G->values[outs[j]].name);
        if (!name) return false;
        sg->seed[j] = og_graph_find_value(T, name);
        if (sg->seed[j] < 0)
            og_gb_fail(b, n, OG_ERR_INTERNAL, "the subgraph gradient has no seed '%s'", name);
        og_free(og_gb_alloc(b), name);
        if (sg->seed[j] < 0) return false;
    }
    for (int i = 0; i < T->n_opsets; i++)
        og_gb_import(b, T->opsets[i].domain, T->opsets[i].version);
    for (int i = 0; i < T->n_functions; i++) {
        const og_function *f = &T->functions[i];
        og_gb_add_function(b, f->domain, f->name, f->overload, &f->proto);
    }
    return og_gb_status(b) == OG_OK;
}

/* Rename T input v of subgraph B (a name of the forward subgraph, which an enclosing graph
 * may use too) before B defines it with a node: SSA holds across scopes. */
static void rename_input(og_gb *eb, og_graph *B, int v, const char *prefix, int k)
{
    char *nm = NAME(eb, "%s_in%d", prefix, k);
    og_status st = nm ? og_graph_rename_value(B, v, nm) : OG_OK;
    if (st) og_gb_fail(eb, NULL, st, "%s", og_last_error());
    og_free(og_gb_alloc(eb), nm);
}

/* B's last output declared with the shape of tensor `like` (a carried gradient has its
 * value's shape), where that is known: its inferred one may not be (the items of a
 * sequence's gradient have none). */
static void shaped_as(og_gb *eb, og_graph *B, const og_value *like)
{
    if (og_gb_status(eb) || !B->n_outputs || like->type || like->rank < 0) return;
    og_value *v = &B->values[B->outputs[B->n_outputs - 1]];
    v->rank = like->rank;
    memcpy(v->dims, like->dims, sizeof v->dims);
}

/* Whether a node of (finalized) B reads its value named `name`. */
static bool reads(const og_graph *B, const char *name)
{
    int v = og_graph_find_value(B, name);
    for (int i = 0; v >= 0 && i < B->n_nodes; i++)
        for (int j = 0; j < B->nodes[i].n_in; j++)
            if (B->nodes[i].in[j] == v) return true;
    return false;
}

/* A prefix for the names of this node's gradient: its first output's name, which no other
 * value of this scope or of an enclosing one has (allocated; NULL after an error on b). */
static char *grad_prefix(og_gb *b, const og_node *n, const char *what)
{
    const char *base = "control";
    for (int j = 0; j < n->n_out; j++)
        if (n->out[j] >= 0) {
            base = og_gb_value(b, n->out[j])->name;
            break;
        }
    return NAME(b, "%s_%s", base, what);
}

static const og_graph *graph_attr(const og_node *n, const char *name)
{
    const og_attr *a = og_node_attr(n, name);
    return a && a->type == OG_ATTR_GRAPH ? a->g : NULL;
}

/* Whether a node of g or of its subgraphs reads the enclosing value `name` (an outer
 * reference of g) by another op than SequenceLength or OptionalHasElement (one a gradient
 * may flow through). */
static bool reads_through(const og_graph *g, const char *name, int depth)
{
    int v = og_graph_find_value(g, name);
    if (v < 0 || g->values[v].kind != OG_VALUE_OUTER || depth > OG_MAX_NESTING) return false;
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *nd = &g->nodes[i];
        for (int j = 0; j < nd->n_in; j++)
            if (nd->in[j] == v && strcmp(nd->op_type, "SequenceLength") != 0 &&
                strcmp(nd->op_type, "OptionalHasElement") != 0)
                return true;
        for (int k = 0; k < nd->n_attrs; k++)
            if (nd->attrs[k].g && reads_through(nd->attrs[k].g, name, depth + 1)) return true;
    }
    return false;
}

/* The implicit inputs of n a gradient flows to: src (their positions in n->in), count.  Float
 * tensors, and sequences and optionals of float tensors that a subgraph reads other than by
 * SequenceLength or OptionalHasElement (their gradient is a sequence of the items'
 * gradients, an optional of the element's); one of another kind (a sequence of sequences,
 * an optional of a sequence) so read and wanting a gradient is refused: -1 then. */
static int implicit_sources(og_gb *b, const og_node *n, int *src)
{
    int k = 0;
    for (int j = n->n_in - n->n_implicit; j < n->n_in; j++) {
        const og_value *v = og_gb_value(b, n->in[j]);
        if (!WANTS(j)) continue;
        og_kind kind = og_value_kind_of(v);
        if (og_dtype_is_float(v->dtype) && kind == OG_KIND_TENSOR) {
            src[k++] = j;
            continue;
        }
        const og_type *t = v->type;
        while (t && t->kind != OG_KIND_TENSOR) t = t->elem;
        bool through = false;
        for (int a = 0; a < n->n_attrs && !through; a++)
            through = n->attrs[a].g && reads_through(n->attrs[a].g, v->name, 0);
        if (kind == OG_KIND_TENSOR || !t || !og_dtype_is_float(t->dtype) || !through) continue;
        if (kind == OG_KIND_OPTIONAL && v->type->elem == t && og_gb_opset(b) < 16) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                       "a gradient into optional '%s', which a subgraph of the node reads from "
                       "the enclosing graph, needs opset 16 or later (an Identity of an "
                       "optional); the model has opset %lld",
                       v->name, (long long)og_gb_opset(b));
            return -1;
        }
        if ((kind == OG_KIND_SEQUENCE || kind == OG_KIND_OPTIONAL) && v->type->elem == t) {
            src[k++] = j;
            continue;
        }
        og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                   "a gradient into %s '%s', which a subgraph of the node reads from the "
                   "enclosing graph: onnxgrad differentiates the tensors, and the sequences "
                   "and optionals of tensors, that a subgraph reads so; this %s holds %s "
                   "values",
                   og_kind_name(kind), v->name, og_kind_name(kind),
                   og_kind_name(v->type->elem->kind));
        return -1;
    }
    return k;
}

static bool is_seq(const og_value *v) { return og_value_kind_of(v) == OG_KIND_SEQUENCE; }
static bool is_opt(const og_value *v) { return og_value_kind_of(v) == OG_KIND_OPTIONAL; }

/* Value v of subgraph B given sv's type (a sequence or optional), interned by B. */
static void type_as(og_gb *eb, og_graph *B, int v, const og_value *sv)
{
    if (v < 0 || !sv->type || og_gb_status(eb)) return;
    const og_type *t = og_graph_type(B, sv->type);
    if (!t) og_gb_fail(eb, NULL, OG_ERR_NOMEM, "out of memory");
    B->values[v].type = t;
}

/* Enclosing value sv read in subgraph B, typed as sv. */
static int outer_as(og_gb *eb, og_graph *B, const og_value *sv)
{
    int o = og_sub_outer(eb, B, sv->name);
    if (o >= 0 && !B->values[o].type) type_as(eb, B, o, sv);
    return o;
}

/* A graph input of B (name: allocated, freed here) of enclosing value sv's type: an
 * accumulator of its gradient. */
static int acc_input(og_gb *eb, og_graph *B, char *name, const og_value *sv)
{
    int v = og_sub_input(eb, B, name, sv->dtype, -1);
    type_as(eb, B, v, sv);
    return v;
}

/* Make v the next output of B: the gradient of enclosing value sv (of its type; a tensor
 * of its shape where known). */
static void grad_output(og_gb *eb, og_graph *B, int v, const og_value *sv)
{
    og_sub_output(eb, B, v, sv->dtype);
    if (og_gb_status(eb) || !B->n_outputs) return;
    if (sv->type)
        type_as(eb, B, B->outputs[B->n_outputs - 1], sv);
    else
        shaped_as(eb, B, sv);
}

/* In B, zeros like enclosing value sv (a tensor; a sequence: zeros item by item; an
 * optional: of a zero element, empty where sv is). */
static int zeros_in(og_gb *eb, og_graph *B, const og_value *sv)
{
    int o = outer_as(eb, B, sv);
    if (is_seq(sv)) return og_gb_sequence_zeros(eb, o);
    if (is_opt(sv)) return og_gb_optional_zeros(eb, o);
    return og_gb_op2(eb, "Mul", o, og_gb_scalar(eb, 0, sv->dtype));
}

/* In B, accumulator acc plus g, gradients of enclosing value sv (sequences: item by item in
 * a Loop, which an empty one runs 0 times; optionals: their elements). */
static int acc_add(og_gb *eb, og_graph *B, int acc, int g, const og_value *sv)
{
    int gs[2] = {acc, g};
    if (is_opt(sv)) return og_gb_optional_sum(eb, outer_as(eb, B, sv), gs, 2);
    if (!is_seq(sv)) return og_rule_add(eb, acc, g);
    return og_gb_sequence_sum_items(eb, outer_as(eb, B, sv), gs, 2);
}

/* Zeros like enclosing value v of the graph b emits (a sequence: item by item; an
 * optional: of a zero element). */
static int zeros_like(og_gb *b, int v)
{
    const og_value *val = og_gb_value(b, v);
    return is_seq(val)   ? og_gb_sequence_zeros(b, v)
           : is_opt(val) ? og_gb_optional_zeros(b, v)
                         : og_rule_zeros_like(b, v);
}

/* The value of subgraph G that is its outer reference to enclosing value `name` (-1). */
static int outer_of(const og_graph *G, const char *name)
{
    int v = og_graph_find_value(G, name);
    return v >= 0 && G->values[v].kind == OG_VALUE_OUTER ? v : -1;
}

/* ---- If ---------------------------------------------------------------------------- */

/* Whether a gradient seeds subgraph output v: a float tensor, or a sequence or optional of
 * float tensors (og_grad_build seeds those, og_grad_spec.seed_sequences). */
static bool seedable(const og_value *v)
{
    og_kind kind = og_value_kind_of(v);
    if (kind == OG_KIND_TENSOR) return og_dtype_is_float(v->dtype);
    if (kind != OG_KIND_SEQUENCE && kind != OG_KIND_OPTIONAL) return false;
    const og_type *e = v->type->elem;
    return e && e->kind == OG_KIND_TENSOR && og_dtype_is_float(e->dtype);
}

static og_status g_if(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_allocator *al = og_gb_alloc(b);
    /* per input: src, gsrc, pos, res; per output: outs, seeds_of */
    size_t ni = (size_t)n->n_in, no_ = (size_t)n->n_out;
    int *w = ints(b, n, 4 * ni + 2 * no_);
    if (!w) return og_gb_status(b);
    int *src = w, *gsrc = src + ni, *pos = gsrc + ni, *res = pos + ni;
    int *outs = res + ni, *seeds_of = outs + no_;
    int n_src = implicit_sources(b, n, src);
    if (n_src < 0) {
        og_free(al, w);
        return og_gb_status(b);
    }
    const char *names[2] = {"then_branch", "else_branch"};
    og_graph *Bs[2] = {NULL, NULL};
    og_gb *ebs[2] = {NULL, NULL};
    char *prefixes[2] = {NULL, NULL}; /* each branch's emitter names by it till attached */
    for (int br = 0; br < 2 && !og_gb_status(b); br++) {
        const og_graph *G = graph_attr(n, names[br]);
        int ns = 0, no = 0;
        for (int k = 0; k < n_src; k++) {
            int v = outer_of(G, og_gb_value(b, n->in[src[k]])->name);
            pos[k] = -1;
            if (v < 0) continue; /* this branch does not read it: zeros */
            pos[k] = ns;
            gsrc[ns++] = v;
        }
        for (int j = 0; j < n->n_out && j < G->n_outputs && !og_gb_status(b); j++) {
            if (dy[j] < 0) continue;
            const og_value *ov = &G->values[G->outputs[j]];
            if (!seedable(ov)) { /* a gradient would be dropped: refused */
                og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                           "output %d '%s' has a gradient, and %s's output '%s' is a %s that "
                           "carries none (float tensors, and sequences and optionals of them, "
                           "do)",
                           j, og_gb_value(b, n->out[j])->name, names[br], ov->name,
                           og_kind_name(og_value_kind_of(ov)));
                break;
            }
            seeds_of[no] = j;
            outs[no++] = G->outputs[j];
        }
        if (og_gb_status(b)) break;
        char *prefix = prefixes[br] = grad_prefix(b, n, br ? "else_grad" : "then_grad");
        if (!prefix) break;
        sub_grad sg = {0};
        og_gb *eb = NULL;
        og_graph *B = NULL;
        if (ns && no) {
            if (sub_gradient(b, n, G, gsrc, ns, outs, no, prefix, &sg))
                B = og_sub_open(b, sg.T, prefix, &eb);
        } else { /* nothing flows through this branch: zeros only */
            og_graph *E = og_graph_new(al);
            if (E) B = og_sub_open(b, E, prefix, &eb);
            og_graph_free(E);
        }
        if (!B) {
            sub_grad_free(&sg);
            break;
        }
        /* the seeds: the If's output gradients, read from outside; a sequence's or an
         * optional's is the outer value itself, renamed (Identity takes sequences from
         * opset 14 only) */
        for (int j = 0; j < no && sg.T; j++) {
            const char *dn = og_gb_value(b, dy[seeds_of[j]])->name;
            if (!B->values[sg.seed[j]].type) {
                int d = og_sub_outer(eb, B, dn);
                og_gb_op_into(eb, "Identity", 1, &d, sg.seed[j]);
                continue;
            }
            og_status st = og_graph_rename_value(B, sg.seed[j], dn);
            if (st) og_gb_fail(eb, n, st, "%s", og_last_error());
        }
        for (int k = 0; k < n_src; k++) {
            const og_value *sv = og_gb_value(b, n->in[src[k]]);
            int g = pos[k] >= 0 && sg.T ? sg.grad[pos[k]] : -1;
            if (g < 0) g = zeros_in(eb, B, sv); /* zeros of the outer value's shape */
            grad_output(eb, B, g, sv);
        }
        sub_grad_free(&sg);
        Bs[br] = B;
        ebs[br] = eb;
    }
    int node = og_gb_op_ext(b, "", "If", 1, &n->in[0], n_src, NULL, res);
    for (int br = 0; br < 2; br++)
        if (Bs[br]) og_sub_attach(b, ebs[br], Bs[br], node, names[br]);
    for (int k = 0; k < n_src; k++) dx[src[k]] = res[k];
    og_free(al, prefixes[0]);
    og_free(al, prefixes[1]);
    og_free(al, w);
    return og_gb_status(b);
}

/* ---- Loop and Scan --------------------------------------------------------------------- */

/* Add to the forward body G (in the training graph) the scan outputs Identity(v) for its
 * values v[0..n-1], with names from prefix; returns false after an error. */
static bool save_per_iteration(og_gb *b, og_graph *G, const int *v, int n, const char *prefix)
{
    og_gb *eg = og_gb_open(G, prefix);
    if (!eg) {
        og_gb_fail(b, NULL, OG_ERR_NOMEM, "out of memory");
        return false;
    }
    for (int k = 0; k < n; k++) {
        og_dtype dt = G->values[v[k]].dtype;
        og_sub_output(eg, G, og_gb_op1(eg, "Identity", v[k]), dt);
        G->values[G->outputs[G->n_outputs - 1]].rank = -1;
    }
    og_status st = og_gb_close(eg);
    if (st) og_gb_fail(b, NULL, st, "%s", og_last_error());
    return !st;
}

/* Append `count` zeros to the INTS attribute `name` of the training graph's node (when the
 * node has it; absent lists default to zeros). */
static void append_zeros(og_gb *b, const og_node *n, const char *name, int count)
{
    for (int k = 0; k < n->n_attrs; k++) {
        og_attr *a = &n->attrs[k];
        if (strcmp(a->name, name) != 0 || a->type != OG_ATTR_INTS) continue;
        int64_t *v = og_realloc(og_gb_alloc(b), a->ints, (size_t)a->n * sizeof *v,
                                (size_t)(a->n + count) * sizeof *v);
        if (!v) {
            og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
            return;
        }
        for (int i = 0; i < count; i++) v[a->n + i] = 0;
        a->ints = v;
        a->n += count;
    }
}

/* Give every value that g and its subgraphs define (all but their outer references) a name
 * starting with prefix, the outer references to them following (og_graph_rename_value).
 * Outer references to enclosing graphs keep their names. */
static og_status rename_defined(og_graph *g, const char *prefix, const og_allocator *al, int depth)
{
    if (depth > OG_MAX_NESTING) return og_depth_error(depth, OG_MAX_NESTING, "a Loop body");
    int nv = g->n_values;
    for (int v = 0; v < nv; v++) {
        if (g->values[v].kind == OG_VALUE_OUTER) continue;
        char *nm = og_strfmt(al, "%s_%s", prefix, g->values[v].name);
        og_status st =
            nm ? og_graph_rename_value(g, v, nm) : og_error(OG_ERR_NOMEM, "out of memory");
        og_free(al, nm);
        if (st) return st;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_attrs; k++) {
            og_graph *sub = g->nodes[i].attrs[k].g;
            og_status st = sub ? rename_defined(sub, prefix, al, depth + 1) : OG_OK;
            if (st) return st;
        }
    return OG_OK;
}

/* In the backward body B (emitter eb), the values the forward Loop n's carried sequences
 * k (where need[k]) hold at the start of forward iteration i (a value of B): the forward
 * body G run again for i iterations from the Loop's initial values (a Loop in B whose body
 * is a copy of G, its values renamed by prefix pf, without the scan outputs the gradient
 * added to G: n_g_out outputs kept), its outputs written into B's values G->inputs[2 + k]. */
static void recompute_sequences(og_gb *b, og_gb *eb, og_graph *B, const og_node *n,
                                const og_graph *G, int n_g_out, const bool *need, int i,
                                const char *pf)
{
    const og_control_params *p = n->params;
    int N = p->n_state, K = n_g_out - 1 - N;
    const og_allocator *al = og_gb_alloc(b);
    if (og_gb_status(eb)) return;
    og_graph *R = og_graph_new_sub(B);
    og_status st = R ? og_graph_copy_into(G, R) : og_error(OG_ERR_NOMEM, "out of memory");
    if (!st) {
        for (int o = n_g_out; o < R->n_outputs; o++)
            R->values[R->outputs[o]].is_graph_output = false;
        R->n_outputs = n_g_out;
        char *rp = NAME(eb, "%s_r", pf);
        st = rp ? rename_defined(R, rp, al, 0) : OG_ERR_NOMEM;
        og_free(al, rp);
    }
    if (!st) st = og_graph_finalize(R);
    if (!st) st = og_graph_prune(R);
    if (!st) st = og_graph_finalize(R);
    int *in = st ? NULL : ints(eb, n, (size_t)(2 + N));
    if (st || !in) {
        if (st) og_gb_fail(eb, n, st, "%s", og_last_error());
        og_graph_free(R);
        return;
    }
    /* every carried value an output (onnxruntime crashes on a Loop whose carried output is
     * omitted, an empty name); the needed ones renamed below, the scan outputs omitted */
    bool *want = og_calloc(al, (size_t)(N + K), sizeof *want);
    for (int k = 0; want && k < N; k++) want[k] = true;
    in[0] = i;
    in[1] = -1;
    for (int k = 0; k < N; k++) in[2 + k] = og_sub_outer(eb, B, og_gb_value(b, n->in[2 + k])->name);
    int *res = og_malloc(al, (size_t)(N + K) * sizeof *res);
    int node = res && want ? og_gb_op_ext(eb, "", "Loop", 2 + N, in, N + K, want, res) : -1;
    if (!res || !want) og_gb_fail(eb, n, OG_ERR_NOMEM, "out of memory");
    if (node >= 0) {
        for (int k = 0; k < N; k++)
            if (need[k]) og_gb_graph(eb)->nodes[node].out[k] = G->inputs[2 + k];
        og_gb_attr_graph(eb, node, "body", R);
    }
    og_free(al, want);
    og_free(al, res);
    og_free(al, in);
    og_graph_free(R);
}

/* Whether a node of g or of its subgraphs reads one of the values named in reach (values of
 * the enclosing graph G; depth: nesting). */
static bool mentions(const og_graph *g, const og_graph *G, const bool *reach, int depth)
{
    if (depth > OG_MAX_NESTING) return true; /* no gradient dropped: assumed read */
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *nd = &g->nodes[i];
        for (int j = 0; j < nd->n_in; j++) {
            int v = nd->in[j];
            if (v < 0 || g->values[v].kind != OG_VALUE_OUTER) continue;
            int u = og_graph_find_value(G, g->values[v].name);
            if (u >= 0 && reach[u]) return true;
        }
        for (int k = 0; k < nd->n_attrs; k++)
            if (nd->attrs[k].g && mentions(nd->attrs[k].g, G, reach, depth + 1)) return true;
    }
    return false;
}

/* Whether body G computes a float tensor from its value v (a carried sequence): then v's
 * gradient flows into the body's other gradients even where the Loop's final sequence has
 * none (an item read, h = SequenceAt(L, -1), feeding a carried tensor). */
static bool feeds_tensor(og_gb *b, const og_graph *G, int v)
{
    bool *reach = og_calloc(og_gb_alloc(b), (size_t)G->n_values + 1, sizeof *reach), found = false;
    if (!reach) return true; /* refused by the caller's next allocation, never dropped */
    reach[v] = true;
    for (int i = 0; i < G->n_nodes && !found; i++) { /* G is sorted */
        const og_node *nd = &G->nodes[i];
        if (!strcmp(nd->op_type, "SequenceLength") || !strcmp(nd->op_type, "OptionalHasElement"))
            continue; /* no gradient through these */
        bool any = false;
        for (int j = 0; j < nd->n_in && !any; j++) any = nd->in[j] >= 0 && reach[nd->in[j]];
        for (int k = 0; k < nd->n_attrs && !any; k++)
            any = nd->attrs[k].g && mentions(nd->attrs[k].g, G, reach, 0);
        for (int j = 0; j < nd->n_out && any; j++) {
            int o = nd->out[j];
            if (o < 0) continue;
            reach[o] = true;
            const og_value *ov = &G->values[o];
            found =
                found || (og_value_kind_of(ov) == OG_KIND_TENSOR && og_dtype_is_float(ov->dtype));
        }
    }
    og_free(og_gb_alloc(b), reach);
    return found;
}

static og_status g_loop(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_control_params *p = n->params;
    og_graph *G = (og_graph *)graph_attr(n, "body"); /* the training graph's: changed below */
    int N = p->n_state, K = p->n_scan_out, n_out0 = n->n_out;
    const og_allocator *al = og_gb_alloc(b);
    char *prefix = grad_prefix(b, n, "grad"), *pf = NULL;
    /* 12 index lists, none longer than the carried values, scan outputs and implicit
     * inputs with 3 more */
    size_t C = (size_t)N + (size_t)K + (size_t)n->n_implicit + 3;
    int *w = prefix ? ints(b, n, 13 * C) : NULL; /* and need (bools) */
    sub_grad sg = {0};
    if (!w) goto done;
    int *src = w, *gsrc = w + C, *outs = w + 2 * C, *fl = w + 3 * C, *scan_of = w + 4 * C;
    int *outer_pos = w + 5 * C, *keep = w + 6 * C, *saved = w + 7 * C, *dS = w + 8 * C;
    int *acc = w + 9 * C, *in = w + 10 * C, *res = w + 11 * C;
    int n_src = implicit_sources(b, n, src);
    if (n_src < 0) goto done;
    /* the body's gradient: sources the float carried inputs and the wanted outer values;
     * outputs the float carried outputs and the scan outputs with a gradient */
    int ns = 0, no = 0, nf = 0, nk = 0;
    for (int k = 0; k < N; k++) {
        const og_value *v = &G->values[G->inputs[2 + k]];
        og_kind kind = og_value_kind_of(v);
        if (kind != OG_KIND_TENSOR && kind != OG_KIND_SEQUENCE) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                       "a gradient through a Loop whose loop-carried value %d is a %s (tensors "
                       "and sequences of tensors have one)",
                       k, og_kind_name(kind));
            goto done;
        }
        /* a sequence is differentiated when its final value has a gradient, or when the
         * body computes a float tensor from it (its gradient then flows back through the
         * iterations from a zero final one); its values per iteration are not kept: see
         * the check below */
        bool seq = kind == OG_KIND_SEQUENCE;
        if (seq ? v->type && v->type->elem && v->type->elem->kind == OG_KIND_TENSOR &&
                      og_dtype_is_float(v->type->elem->dtype) &&
                      (dy[k] >= 0 || feeds_tensor(b, G, G->inputs[2 + k]))
                : og_dtype_is_float(v->dtype)) {
            fl[nf++] = k;
            gsrc[ns++] = G->inputs[2 + k];
            outs[no++] = G->outputs[1 + k];
        }
    }
    for (int r = 0; r < n_src; r++) {
        int v = outer_of(G, og_gb_value(b, n->in[src[r]])->name);
        outer_pos[r] = v >= 0 ? ns : -1;
        if (v >= 0) gsrc[ns++] = v;
    }
    int nscan = 0;
    for (int k = 0; k < K; k++)
        if (dy[N + k] >= 0 && og_dtype_is_float(G->values[G->outputs[1 + N + k]].dtype)) {
            scan_of[nscan++] = k;
            outs[no++] = G->outputs[1 + N + k];
        }
    if (!(pf = NAME(b, "%s_b", prefix)) || !sub_gradient(b, n, G, gsrc, ns, outs, no, pf, &sg))
        goto done;
    /* the carried sequences whose values the body's gradient reads (need), which are
     * recomputed per iteration (recompute_sequences) */
    bool *need = (bool *)(w + 12 * C), any_need = false;
    for (int k = 0; k < N; k++) {
        const og_value *v = &G->values[G->inputs[2 + k]];
        need[k] = og_value_kind_of(v) == OG_KIND_SEQUENCE && reads(sg.T, v->name);
        any_need |= need[k];
    }
    int n_g_out = G->n_outputs;
    /* the forward body also gives each iteration's carried tensors and its number (a
     * sequence cannot be a scan output: saved -1) */
    for (int k = 0; k < N; k++)
        if (og_value_kind_of(&G->values[G->inputs[2 + k]]) == OG_KIND_TENSOR)
            keep[nk++] = G->inputs[2 + k];
    keep[nk++] = G->inputs[0];
    og_free(al, pf);
    if (!(pf = NAME(b, "%s_f", prefix))) goto done;
    if (save_per_iteration(b, G, keep, nk, pf))
        for (int k = 0, q = 0; k <= N; k++)
            saved[k] = k == N || og_value_kind_of(&G->values[G->inputs[2 + k]]) == OG_KIND_TENSOR
                           ? og_gb_forward_output(b, n, n_out0 + q++)
                           : -1;
    /* the backward loop runs as many iterations */
    int count =
        og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", saved[N]), og_gb_scalar(b, 0, OG_INT64));
    int last = og_rule_sub(b, count, og_gb_scalar(b, 1, OG_INT64));
    /* the backward body: j, cond, dS (float carried), accumulators (outer values) */
    og_gb *eb = NULL;
    og_free(al, pf);
    if (!(pf = NAME(b, "%s_l", prefix))) goto done;
    og_graph *B = og_gb_status(b) ? NULL : og_sub_open(b, sg.T, pf, &eb);
    if (!B) goto done;
    int j = og_sub_input(eb, B, NAME(eb, "%s_j", pf), OG_INT64, 0);
    int cond = og_sub_input(eb, B, NAME(eb, "%s_cond", pf), OG_BOOL, 0);
    for (int f = 0; f < nf; f++) {
        const og_value *cv = &G->values[G->inputs[2 + fl[f]]];
        if (!cv->type) {
            dS[f] = og_sub_input(eb, B, NAME(eb, "%s_d%d", pf, f), cv->dtype, -1);
            continue;
        }
        /* a sequence: its seed is the input itself (Identity takes sequences from opset 14
         * only), of the carried value's type */
        char *nm = NAME(eb, "%s_d%d", pf, f);
        og_status st = nm ? og_graph_rename_value(B, sg.seed[f], nm) : OG_OK;
        og_free(og_gb_alloc(eb), nm);
        const og_type *t = nm && !st ? og_graph_type(B, cv->type) : NULL;
        if (st || (nm && !t)) og_gb_fail(eb, NULL, st ? st : OG_ERR_NOMEM, "%s", og_last_error());
        dS[f] = t ? og_sub_make_input(eb, B, sg.seed[f]) : -1;
        if (dS[f] >= 0) B->values[dS[f]].type = t;
    }
    for (int r = 0; r < n_src; r++)
        acc[r] = acc_input(eb, B, NAME(eb, "%s_acc%d", pf, r), og_gb_value(b, n->in[src[r]]));
    for (int k = 0; k < 2 + N; k++) rename_input(eb, B, G->inputs[k], pf, k);
    /* iteration i = count − 1 − j of the forward, recomputed from its saved state */
    int i = og_rule_sub(eb, og_sub_outer(eb, B, og_gb_value(b, last)->name), j);
    og_gb_op_into(eb, "Identity", 1, &i, G->inputs[0]);
    og_gb_op_into(eb, "Identity", 1, &cond, G->inputs[1]);
    if (any_need) recompute_sequences(b, eb, B, n, G, n_g_out, need, i, pf);
    for (int k = 0; k < N; k++) {
        if (saved[k] < 0) continue; /* a sequence: recomputed when read */
        int sv = og_sub_outer(eb, B, og_gb_value(b, saved[k])->name);
        int in2[2] = {sv, i};
        og_gb_op_into(eb, "Gather", 2, in2, G->inputs[2 + k]);
    }
    for (int f = 0; f < nf; f++)
        if (dS[f] != sg.seed[f]) og_gb_op_into(eb, "Identity", 1, &dS[f], sg.seed[f]);
    for (int s = 0; s < nscan; s++) {
        int d = og_sub_outer(eb, B, og_gb_value(b, dy[N + scan_of[s]])->name);
        int in2[2] = {d, i};
        og_gb_op_into(eb, "Gather", 2, in2, sg.seed[nf + s]);
    }
    og_sub_output(eb, B, cond, OG_BOOL);
    for (int f = 0; f < nf; f++) {
        og_sub_output(eb, B, sg.grad[f], G->values[G->inputs[2 + fl[f]]].dtype);
        shaped_as(eb, B, &G->values[G->inputs[2 + fl[f]]]);
    }
    for (int r = 0; r < n_src; r++) {
        const og_value *sv = og_gb_value(b, n->in[src[r]]);
        int at = outer_pos[r];
        grad_output(eb, B, at >= 0 ? acc_add(eb, B, acc[r], sg.grad[at], sv) : acc[r], sv);
    }
    sub_grad_free(&sg);
    /* the backward Loop: dS starts at the carried outputs' gradients, accumulators at 0 */
    in[0] = count;
    in[1] = -1;
    for (int f = 0; f < nf; f++) {
        int k = fl[f];
        if (dy[k] >= 0 || !G->values[G->inputs[2 + k]].type) {
            in[2 + f] = dy[k] >= 0 ? dy[k] : og_rule_zeros_like(b, n->out[k]);
            continue;
        }
        /* a sequence whose final value has no gradient: zeros like it (the Loop's output,
         * made where the model omits it, typed as the carried value) */
        int o = og_gb_forward_output(b, n, k);
        og_value *ov = o >= 0 ? &og_gb_graph(b)->values[o] : NULL;
        if (ov && !ov->type &&
            !(ov->type = og_graph_type(og_gb_graph(b), G->values[G->inputs[2 + k]].type)))
            og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        in[2 + f] = og_gb_status(b) ? -1 : og_gb_sequence_zeros(b, o);
    }
    for (int r = 0; r < n_src; r++) in[2 + nf + r] = zeros_like(b, n->in[src[r]]);
    int node = og_gb_op_ext(b, "", "Loop", 2 + nf + n_src, in, nf + n_src, NULL, res);
    bool ok = og_sub_finish(b, eb, B);
    if (ok) og_gb_attr_graph(b, node, "body", B);
    og_graph_free(B);
    for (int f = 0; f < nf; f++)
        if (WANTS(2 + fl[f])) dx[2 + fl[f]] = res[f];
    for (int r = 0; r < n_src; r++) dx[src[r]] = res[nf + r];
    og_gb_forward_reparse(b, n); /* last: n->params goes */
done:
    sub_grad_free(&sg);
    og_free(al, w);
    og_free(al, pf);
    og_free(al, prefix);
    return og_gb_status(b);
}

/* What the gradients of both Scan forms share: the body's gradient (sources the float
 * states, the wanted scan inputs' slices and the outer values the body reads; outputs the
 * float states and the scan outputs with a gradient), and each step's states, which the
 * forward body also gives (stacked along the steps, as scan outputs). */
typedef struct scan_grad {
    int S, M, K, first; /* first: the position of state 0 among the inputs (1 in Scan-8) */
    int nf, nx, nscan, n_src;
    int *src;       /* the implicit inputs a gradient flows to (positions in n->in) */
    int *fl;        /* the float states (their positions among the states) */
    int *xs;        /* the scan inputs whose gradient is wanted */
    int *scan_of;   /* the scan outputs with a gradient */
    int *outer_pos; /* per src: its position among the body gradient's sources (-1: unread) */
    int *saved;     /* per state: the forward output holding it per step */
    int *w;         /* the block of the lists */
    sub_grad sg;
} scan_grad;

static void scan_grad_free(og_gb *b, scan_grad *sc)
{
    sub_grad_free(&sc->sg);
    og_free(og_gb_alloc(b), sc->w);
    sc->w = NULL;
}

static bool scan_prepare(og_gb *b, const og_node *n, const int *dy, const char *prefix,
                         scan_grad *sc)
{
    const og_control_params *p = n->params;
    og_graph *G = (og_graph *)graph_attr(n, "body"); /* the training graph's: changed below */
    int S = sc->S = p->n_state, M = sc->M = p->n_scan_in, K = sc->K = p->n_scan_out;
    int first = sc->first = p->v8 ? 1 : 0, n_out0 = n->n_out;
    const og_allocator *al = og_gb_alloc(b);
    /* 9 index lists, none longer than the states, scan inputs and outputs and implicit
     * inputs with 3 more */
    size_t C = (size_t)S + (size_t)M + (size_t)K + (size_t)n->n_implicit + 3;
    int *w = sc->w = ints(b, n, 9 * C);
    if (!w) return false;
    sc->src = w;
    int *gsrc = w + C, *outs = w + 2 * C, *keep = w + 3 * C;
    sc->fl = w + 4 * C;
    sc->xs = w + 5 * C;
    sc->scan_of = w + 6 * C;
    sc->outer_pos = w + 7 * C;
    sc->saved = w + 8 * C;
    if ((sc->n_src = implicit_sources(b, n, sc->src)) < 0) return false;
    int ns = 0, no = 0;
    for (int k = 0; k < S; k++) {
        const og_value *v = &G->values[G->inputs[k]];
        if (og_value_kind_of(v) != OG_KIND_TENSOR) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "a gradient through a Scan whose state %d is a %s",
                       k, og_kind_name(og_value_kind_of(v)));
            return false;
        }
        if (og_dtype_is_float(v->dtype)) {
            sc->fl[sc->nf++] = k;
            gsrc[ns++] = G->inputs[k];
            outs[no++] = G->outputs[k];
        }
    }
    for (int k = 0; k < M; k++)
        if (WANTS(first + S + k)) {
            sc->xs[sc->nx++] = k;
            gsrc[ns++] = G->inputs[S + k];
        }
    for (int r = 0; r < sc->n_src; r++) {
        int v = outer_of(G, og_gb_value(b, n->in[sc->src[r]])->name);
        sc->outer_pos[r] = v >= 0 ? ns : -1;
        if (v >= 0) gsrc[ns++] = v;
    }
    for (int k = 0; k < K; k++)
        if (dy[S + k] >= 0 && og_dtype_is_float(G->values[G->outputs[S + k]].dtype)) {
            sc->scan_of[sc->nscan++] = k;
            outs[no++] = G->outputs[S + k];
        }
    char *pf = NAME(b, "%s_b", prefix);
    bool ok = pf && sub_gradient(b, n, G, gsrc, ns, outs, no, pf, &sc->sg);
    og_free(al, pf);
    if (!ok || !S) return ok;
    for (int k = 0; k < S; k++) keep[k] = G->inputs[k];
    pf = NAME(b, "%s_f", prefix);
    ok = pf && save_per_iteration(b, G, keep, S, pf);
    og_free(al, pf);
    if (!ok) return false;
    if (!p->v8) { /* Scan-8 stacks along axis 1 (after the batch), forward */
        append_zeros(b, n, "scan_output_axes", S);
        append_zeros(b, n, "scan_output_directions", S);
    }
    for (int k = 0; k < S; k++) sc->saved[k] = og_gb_forward_output(b, n, n_out0 + k);
    return og_gb_status(b) == OG_OK;
}

/* The backward body of a Scan's steps, taken in reverse, as a subgraph of the graph pb
 * emits (the training graph's, or that of Scan-8's loop over the batch rows): forward step
 * t = last − j recomputed from its states st[k] (stacked along axis 0) and its slices of
 * the scan inputs x[k] (along axis x_ax[k]; reversed where the Scan reads them so), seeded
 * with the carried dS and the slices of the scan outputs' gradients gy[k] (along y_ax[k];
 * reversed where y_rev[k]).  It gives (cond, dS, the outer values' gradients added to the
 * carried ones, the wanted slices' gradients, t).  st, x, gy and last are pb's values.
 * NULL after an error (*ebp: B's emitter, for attach). */
static og_graph *scan_back_body(og_gb *b, og_gb *pb, const og_node *n, const scan_grad *sc,
                                const int *st, const int *x, const int *x_ax, const int *gy,
                                const int *y_ax, const int64_t *y_rev, int last, const char *pf,
                                og_gb **ebp)
{
    const og_control_params *p = n->params;
    const og_graph *G = graph_attr(n, "body");
    const sub_grad *sg = &sc->sg;
    int S = sc->S, M = sc->M, nf = sc->nf;
    og_gb *eb = NULL;
    og_graph *B = og_sub_open(pb, sg->T, pf, &eb);
    *ebp = eb;
    if (!B) return NULL;
    int j = og_sub_input(eb, B, NAME(eb, "%s_j", pf), OG_INT64, 0);
    int cond = og_sub_input(eb, B, NAME(eb, "%s_cond", pf), OG_BOOL, 0);
    for (int f = 0; f < nf; f++)
        og_sub_input(eb, B, NAME(eb, "%s_d%d", pf, f), G->values[G->inputs[sc->fl[f]]].dtype, -1);
    for (int r = 0; r < sc->n_src; r++)
        acc_input(eb, B, NAME(eb, "%s_acc%d", pf, r), og_gb_value(b, n->in[sc->src[r]]));
    if (og_gb_status(eb)) return B;
    for (int k = 0; k < S + M; k++) rename_input(eb, B, G->inputs[k], pf, k);
    int t = og_rule_sub(eb, og_sub_outer(eb, B, og_gb_value(pb, last)->name), j); /* rt = j */
    for (int k = 0; k < S; k++) {
        int in2[2] = {og_sub_outer(eb, B, og_gb_value(pb, st[k])->name), t};
        og_gb_op_into(eb, "Gather", 2, in2, G->inputs[k]);
    }
    for (int k = 0; k < M; k++) {
        int in2[2] = {og_sub_outer(eb, B, og_gb_value(pb, x[k])->name), p->in_dirs[k] ? j : t};
        og_gb_op_into(eb, "Gather", 2, in2, G->inputs[S + k]);
        if (x_ax[k]) og_gb_attr_int(eb, og_gb_last(eb), "axis", x_ax[k]);
    }
    for (int f = 0; f < nf; f++) og_gb_op_into(eb, "Identity", 1, &B->inputs[2 + f], sg->seed[f]);
    for (int q = 0; q < sc->nscan; q++) {
        int k = sc->scan_of[q];
        int in2[2] = {og_sub_outer(eb, B, og_gb_value(pb, gy[k])->name), y_rev[k] ? j : t};
        og_gb_op_into(eb, "Gather", 2, in2, sg->seed[nf + q]);
        if (y_ax[k]) og_gb_attr_int(eb, og_gb_last(eb), "axis", y_ax[k]);
    }
    og_sub_output(eb, B, cond, OG_BOOL);
    for (int f = 0; f < nf; f++)
        og_sub_output(eb, B, sg->grad[f], G->values[G->inputs[sc->fl[f]]].dtype);
    for (int r = 0; r < sc->n_src; r++) {
        const og_value *sv = og_gb_value(b, n->in[sc->src[r]]);
        int acc = B->inputs[2 + nf + r], at = sc->outer_pos[r];
        grad_output(eb, B, at >= 0 ? acc_add(eb, B, acc, sg->grad[at], sv) : acc, sv);
    }
    for (int q = 0; q < sc->nx; q++)
        og_sub_output(eb, B, sg->grad[nf + q],
                      og_gb_value(b, n->in[sc->first + S + sc->xs[q]])->dtype);
    og_sub_output(eb, B, t, OG_INT64);
    return B;
}

/* The backward Loop in pb over `steps` iterations with body B (attached here): dS starting
 * at ds0[f], the accumulators at acc0[r]; res gets its nf + n_src + nx + 1 outputs (dS, the
 * outer values' gradients, the slices' gradients stacked in the order of the backward
 * steps, their forward step numbers). */
static void scan_back_loop(og_gb *pb, og_gb *eb, og_graph *B, const scan_grad *sc, int steps,
                           const int *ds0, const int *acc0, int *in, int *res)
{
    int nf = sc->nf, n_src = sc->n_src;
    in[0] = steps;
    in[1] = -1;
    for (int f = 0; f < nf; f++) in[2 + f] = ds0[f];
    for (int r = 0; r < n_src; r++) in[2 + nf + r] = acc0[r];
    int node = og_gb_op_ext(pb, "", "Loop", 2 + nf + n_src, in, nf + n_src + sc->nx + 1, NULL, res);
    og_sub_attach(pb, eb, B, node, "body");
}

/* The final states' gradients (zeros where none) and zeros for the accumulators. */
static void scan_back_init(og_gb *b, const og_node *n, const int *dy, const scan_grad *sc, int *ds0,
                           int *acc0)
{
    for (int f = 0; f < sc->nf; f++) {
        int k = sc->fl[f];
        ds0[f] = dy[k] >= 0 ? dy[k] : og_rule_zeros_like(b, n->out[k]);
    }
    for (int r = 0; r < sc->n_src; r++) acc0[r] = zeros_like(b, n->in[sc->src[r]]);
}

static og_status g_scan8(og_gb *b, const og_node *n, const int *dy, int *dx);

static og_status g_scan(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_control_params *p = n->params;
    if (p->v8) return g_scan8(b, n, dy, dx);
    int S = p->n_state, M = p->n_scan_in, K = p->n_scan_out;
    const og_allocator *al = og_gb_alloc(b);
    char *prefix = grad_prefix(b, n, "grad"), *pf = NULL;
    scan_grad sc = {0};
    /* 6 more lists: per scan input or output, or as long as the backward Loop's inputs and
     * outputs */
    size_t C = (size_t)S + (size_t)M + (size_t)K + (size_t)n->n_implicit + 3;
    int *w = prefix ? ints(b, n, 6 * C) : NULL;
    if (!w) goto done;
    int *in_ax = w, *out_ax = w + C, *rank = w + 2 * C, *ds0 = w + 3 * C, *in = w + 4 * C;
    int *res = w + 5 * C;
    /* axes of the scan inputs and outputs, normalized with the inputs' static ranks */
    for (int k = 0; k < M; k++) {
        rank[k] = og_gb_value(b, n->in[S + k])->rank;
        in_ax[k] = (int)(p->in_axes[k] < 0 ? p->in_axes[k] + rank[k] : p->in_axes[k]);
        if (rank[k] < 1 || in_ax[k] < 0 || in_ax[k] >= rank[k]) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                       "the gradient needs scan input %d's rank (and its axis in it)", k);
            goto done;
        }
    }
    for (int k = 0; k < K; k++) {
        int r = og_gb_value(b, n->out[S + k] >= 0 ? n->out[S + k] : n->in[0])->rank;
        out_ax[k] = (int)(p->out_axes[k] < 0 ? p->out_axes[k] + r : p->out_axes[k]);
        if (dy[S + k] >= 0 && (r < 1 || out_ax[k] < 0 || out_ax[k] >= r)) {
            og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                       "the gradient needs scan output %d's rank (and its axis in it)", k);
            goto done;
        }
    }
    if (!scan_prepare(b, n, dy, prefix, &sc)) goto done;
    int nf = sc.nf, n_src = sc.n_src, nx = sc.nx;
    /* the step count, from scan input 0 */
    int steps = og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", n->in[S]),
                          og_gb_scalar(b, in_ax[0], OG_INT64));
    int last = og_rule_sub(b, steps, og_gb_scalar(b, 1, OG_INT64));
    og_gb *eb = NULL;
    if (!(pf = NAME(b, "%s_l", prefix))) goto done;
    og_graph *B = og_gb_status(b) ? NULL
                                  : scan_back_body(b, b, n, &sc, sc.saved, &n->in[S], in_ax, dy + S,
                                                   out_ax, p->out_dirs, last, pf, &eb);
    if (!B) goto done;
    sub_grad_free(&sc.sg);
    scan_back_init(b, n, dy, &sc, ds0, ds0 + nf);
    scan_back_loop(b, eb, B, &sc, steps, ds0, ds0 + nf, in, res);
    int ts = res[nf + n_src + nx];
    for (int f = 0; f < nf; f++)
        if (WANTS(sc.fl[f])) dx[sc.fl[f]] = res[f];
    for (int r = 0; r < n_src; r++) dx[sc.src[r]] = res[nf + r];
    for (int q = 0; q < nx; q++) {
        int k = sc.xs[q], d = res[nf + n_src + q];
        /* the backward loop went from the last step to the first: each slice's position */
        if (!p->in_dirs[k]) d = og_gb_op2(b, "Gather", d, ts);
        if (in_ax[k]) {
            int64_t perm[OG_MAX_RANK];
            for (int a = 0; a < rank[k]; a++)
                perm[a] = a < in_ax[k] ? a + 1 : a == in_ax[k] ? 0 : a;
            d = og_rule_transpose(b, d, perm, rank[k]);
        }
        dx[S + k] = d;
    }
    og_gb_forward_reparse(b, n); /* last: n->params goes */
done:
    scan_grad_free(b, &sc);
    og_free(al, w);
    og_free(al, pf);
    og_free(al, prefix);
    return og_gb_status(b);
}

/* Scan-8: every state and scan input has the batch axis first, each batch row scans its own
 * sequence_lens[row] steps (the scan inputs' axis 1), its states stop there and its scan
 * outputs are zeros past it.  The gradient is a Loop over the rows whose body runs the
 * backward Loop of that row's steps (scan_back_body on the row's saved states, slices and
 * output gradients), and gives the row's initial states' gradients and its scan inputs'
 * gradients, zeros past its length, as scan outputs: stacked, they have the inputs' shapes.
 * The outer values' gradients are summed over the rows and steps. */
static og_status g_scan8(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_control_params *p = n->params;
    int S = p->n_state, M = p->n_scan_in, K = p->n_scan_out;
    const og_allocator *al = og_gb_alloc(b);
    char *prefix = grad_prefix(b, n, "grad"), *pf = NULL, *pl = NULL;
    scan_grad sc = {0};
    /* 9 more lists: per state, scan input or output, or as long as a backward Loop's inputs
     * and outputs */
    size_t C = (size_t)S + (size_t)M + (size_t)K + (size_t)n->n_implicit + 3;
    int *w = prefix ? ints(b, n, 9 * C) : NULL;
    int64_t *fwd = w ? og_calloc(al, C, sizeof *fwd) : NULL; /* no scan output reversed */
    if (!fwd) {
        if (w) og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    int *st = w, *x = w + C, *gy = w + 2 * C, *ax0 = w + 3 * C, *top = w + 4 * C;
    int *ds0 = w + 5 * C, *in = w + 6 * C, *res = w + 7 * C, *out = w + 8 * C;
    if (!scan_prepare(b, n, dy, prefix, &sc)) goto done;
    int nf = sc.nf, n_src = sc.n_src, nx = sc.nx;
    /* the batch and the steps, from scan input 0 [batch, steps, ...] */
    int shape0 = og_gb_op1(b, "Shape", n->in[1 + S]);
    int batch = og_gb_op2(b, "Gather", shape0, og_gb_scalar(b, 0, OG_INT64));
    int steps = og_gb_op2(b, "Gather", shape0, og_gb_scalar(b, 1, OG_INT64));
    scan_back_init(b, n, dy, &sc, top, top + nf);
    /* the body over the rows: (row, cond, accumulators) */
    og_gb *eo = NULL, *eb = NULL;
    if (!(pf = NAME(b, "%s_r", prefix)) || !(pl = NAME(b, "%s_l", prefix))) goto done;
    og_graph *E = og_gb_status(b) ? NULL : og_graph_new(al);
    og_graph *O = E ? og_sub_open(b, E, pf, &eo) : NULL;
    og_graph_free(E);
    if (!O) {
        if (!og_gb_status(b)) og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    int row = og_sub_input(eo, O, NAME(eo, "%s_row", pf), OG_INT64, 0);
    int cond = og_sub_input(eo, O, NAME(eo, "%s_cond", pf), OG_BOOL, 0);
    for (int r = 0; r < n_src; r++)
        acc_input(eo, O, NAME(eo, "%s_acc%d", pf, r), og_gb_value(b, n->in[sc.src[r]]));
#define ROW(v) og_gb_op2(eo, "Gather", og_sub_outer(eo, O, og_gb_value(b, (v))->name), row)
    int len = n->in[0] >= 0 ? og_rule_cast(eo, ROW(n->in[0]), OG_INT64)
                            : og_sub_outer(eo, O, og_gb_value(b, steps)->name);
    int last = og_rule_sub(eo, len, og_gb_scalar(eo, 1, OG_INT64));
    for (int k = 0; k < S; k++) st[k] = ROW(sc.saved[k]);
    for (int k = 0; k < M; k++) x[k] = ROW(n->in[1 + S + k]);
    for (int k = 0; k < K; k++) gy[k] = -1;
    for (int q = 0; q < sc.nscan; q++) gy[sc.scan_of[q]] = ROW(dy[S + sc.scan_of[q]]);
    for (int f = 0; f < nf; f++) ds0[f] = ROW(top[f]);
#undef ROW
    og_graph *B = og_gb_status(eo)
                      ? NULL
                      : scan_back_body(b, eo, n, &sc, st, x, ax0, gy, ax0, fwd, last, pl, &eb);
    if (B) scan_back_loop(eo, eb, B, &sc, len, ds0, O->inputs + 2, in, res);
    sub_grad_free(&sc.sg);
    og_sub_output(eo, O, cond, OG_BOOL);
    for (int r = 0; r < n_src; r++)
        grad_output(eo, O, res[nf + r], og_gb_value(b, n->in[sc.src[r]]));
    for (int f = 0; f < nf; f++)
        og_sub_output(eo, O, res[f], og_gb_value(b, n->in[1 + sc.fl[f]])->dtype);
    /* the row's slice gradients in the order of its steps, then zeros to the full length */
    int pad = og_rule_unsqueeze(
        eo, og_rule_sub(eo, og_sub_outer(eo, O, og_gb_value(b, steps)->name), len),
        (const int64_t[]){0}, 1);
    for (int q = 0; q < nx; q++) {
        int k = sc.xs[q], d = res[nf + n_src + q];
        og_dtype dt = og_gb_value(b, n->in[1 + S + k])->dtype;
        if (!p->in_dirs[k]) d = og_gb_op2(eo, "Gather", d, res[nf + n_src + nx]);
        int tail = og_rule_slice(eo, og_gb_op1(eo, "Shape", x[k]), (const int64_t[]){0},
                                 (const int64_t[]){1}, (const int64_t[]){INT64_MAX}, NULL, 1);
        int zshape = og_gb_op2(eo, "Concat", pad, tail);
        og_gb_attr_int(eo, og_gb_last(eo), "axis", 0);
        int z = og_gb_op2(eo, "Expand", og_gb_scalar(eo, 0, dt), zshape);
        d = og_gb_op2(eo, "Concat", d, z);
        og_gb_attr_int(eo, og_gb_last(eo), "axis", 0);
        og_sub_output(eo, O, d, dt);
    }
    /* the Loop over the rows */
    in[0] = batch;
    in[1] = -1;
    for (int r = 0; r < n_src; r++) in[2 + r] = top[nf + r];
    int node = og_gb_op_ext(b, "", "Loop", 2 + n_src, in, n_src + nf + nx, NULL, out);
    og_sub_attach(b, eo, O, node, "body");
    for (int r = 0; r < n_src; r++) dx[sc.src[r]] = out[r];
    for (int f = 0; f < nf; f++)
        if (WANTS(1 + sc.fl[f])) dx[1 + sc.fl[f]] = out[n_src + f];
    for (int q = 0; q < nx; q++) dx[1 + S + sc.xs[q]] = out[n_src + nf + q];
    og_gb_forward_reparse(b, n); /* last: n->params goes */
done:
    scan_grad_free(b, &sc);
    og_free(al, fwd);
    og_free(al, w);
    og_free(al, pf);
    og_free(al, pl);
    og_free(al, prefix);
    return og_gb_status(b);
}

const og_grad_rule og_grad_control[] = {
    {"If", "", g_if}, {"Loop", "", g_loop}, {"Scan", "", g_scan}, {0}};
