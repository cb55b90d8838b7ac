/*
 * node_harness.h: one-node graphs for the op families' unit tests.  Every family's test
 * builds its cases with this, so adding an op's tests means writing cases, not plumbing.
 *
 * A case is an nh_node: the op, its opset, attributes of any kind, input tensors with their
 * data (NULL: an omitted optional input), how many outputs (some may be omitted).  nh_run
 * builds the one-node graph, resolves it (parse and static inference: NH_LOAD), creates a
 * session on the CPU (every node bound to its kernel and typed loop: NH_BIND), and runs it
 * (run-time inference and the kernel: NH_RUN).  Two checks of its own follow every run
 * that succeeds, counted apart as "harness checks":
 *  - what static inference said of each tensor output (dtype, rank, known dims) holds at
 *    run time, and a sequence, map or optional output fits its inferred type;
 *  - the kernel called directly, without the session's binding (k->impl NULL: it picks its
 *    loop itself) on outputs filled with a byte pattern, writes the same values as the bound
 *    run, bit for bit (strings by content): every element is written, and the bound loop is
 *    the loop of the run's dtype.
 *
 *   og_tensor *x = nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
 *   nh_node n = {.op = "Softmax", .opset = 13, .attrs = {NH_INT("axis", 0)}, .in = {x}};
 *   nh_result r;
 *   CHECK_OK(nh_run(&n, &r));
 *   nh_expect("softmax", r.out[0], 6, want, 1e-6);
 *   nh_release(&r);
 *
 * Errors are checked as a status, the stage that failed and a piece of the message:
 *   nh_expect_fail(&n, NH_RUN, OG_ERR_RUNTIME, "out of range");
 *
 * The checks go through test.h's CHECK (counted in og_test_checks); a case is one node built
 * (nh_run, nh_load or nh_parse).  End main with NH_DONE(), which prints the counts.
 * Functions are static inline: a test uses what it needs, and links onnxgrad_static.
 */
#ifndef OG_NODE_HARNESS_H
#define OG_NODE_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "kernels/cpu/kernel.h"
#include "test.h"

enum { NH_MAX_IO = 16, NH_MAX_ATTRS = 16 };

static int og_test_cases;   /* one-node graphs built */
static int og_test_harness; /* the harness's own checks (above) */

/* Print the counts; exit status 1 if a check failed. */
#define NH_DONE()                                                                                  \
    do {                                                                                           \
        printf("%d cases, %d checks, %d harness checks, %d failed\n", og_test_cases,               \
               og_test_checks, og_test_harness, og_test_failures);                                 \
        return og_test_failures ? 1 : 0;                                                           \
    } while (0)

/* ---- attributes ------------------------------------------------------------------ */

/* One attribute: `type` says which field holds the value (n counts ints, floats, strings). */
typedef struct nh_attr {
    const char *name; /* NULL ends the list */
    og_attr_type type;
    int64_t i;
    float f;
    const char *s;
    int n;
    const int64_t *ints;
    const float *floats;
    const char *const *strings;
    const og_tensor *t;
} nh_attr;

#define NH_COUNT(T, ...) ((int)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))
#define NH_INT(nm, v)                                                                              \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_INT, .i = (v)                                                \
    }
#define NH_FLOAT(nm, v)                                                                            \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_FLOAT, .f = (v)                                              \
    }
#define NH_STRING(nm, v)                                                                           \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_STRING, .s = (v)                                             \
    }
#define NH_TENSOR(nm, v)                                                                           \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_TENSOR, .t = (v)                                             \
    }
#define NH_INTS(nm, ...)                                                                           \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_INTS, .n = NH_COUNT(int64_t, __VA_ARGS__),                   \
        .ints = (const int64_t[])                                                                  \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define NH_FLOATS(nm, ...)                                                                         \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_FLOATS, .n = NH_COUNT(float, __VA_ARGS__),                   \
        .floats = (const float[])                                                                  \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define NH_STRINGS(nm, ...)                                                                        \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_STRINGS, .n = NH_COUNT(const char *, __VA_ARGS__),           \
        .strings = (const char *const[])                                                           \
        {                                                                                          \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
/* Lists given as an array and a count (which may be 0, or known only at run time). */
#define NH_INTS_N(nm, cnt, arr)                                                                    \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_INTS, .n = (cnt), .ints = (arr)                              \
    }
#define NH_FLOATS_N(nm, cnt, arr)                                                                  \
    {                                                                                              \
        .name = (nm), .type = OG_ATTR_FLOATS, .n = (cnt), .floats = (arr)                          \
    }

/* ---- a case ---------------------------------------------------------------------- */

typedef struct nh_node {
    const char *op;
    int opset;                   /* the opset the graph imports for the op's domain */
    const char *domain;          /* NULL or "": ai.onnx; another domain also imports ai.onnx 17 */
    const char *name;            /* the node's name, NULL: "n0" (messages name it) */
    nh_attr attrs[NH_MAX_ATTRS]; /* up to the first without a name */
    const og_tensor *in[NH_MAX_IO]; /* inputs x0, x1, ... with their data; NULL: omitted */
    int n_in;                       /* 0: through the last input given */
    int n_out;                      /* outputs y0, y1, ...; 0: one */
    unsigned omit_out;              /* bit j: output j is omitted (empty name) */
    /* How the graph declares input i: NULL, the tensor's dtype and shape; "?", nothing (only
     * run-time inference sees it); else the tensor's dtype and comma-separated dims, each a
     * number, a symbol (a dim_param: "N") or "?" (unknown): "N,3,?,?"; "?:" before the dims
     * leaves the dtype undeclared ("?:N,3").  A sequence, map or optional input is declared with
     * its type (nh_value_type), or not at all with "?". */
    const char *decl[NH_MAX_IO];
    int threads; /* the session's thread count; 0: one */
} nh_node;

/* Where nh_run stopped. */
typedef enum nh_stage {
    NH_LOAD = 1, /* building the graph, resolve: parse and static inference */
    NH_BIND,     /* session creation: each node bound to its kernel and typed loop */
    NH_RUN,      /* run-time inference and the kernel */
    NH_DONE      /* it ran */
} nh_stage;

typedef struct nh_result {
    og_status status;
    nh_stage stage;
    og_tensor *out[NH_MAX_IO]; /* output j, owned; NULL when omitted or not run */
    og_graph *g;               /* the graph as resolved: static inference in its values */
    og_node *node;             /* its node */
    int y[NH_MAX_IO];          /* value of output j in g, -1 if omitted */
    const nh_node *spec;       /* the case (must outlive the result) */
} nh_result;

/* ---- tensors --------------------------------------------------------------------- */

/* A new tensor of dtype (any numeric type, float16, bfloat16 and bool included) holding
 * vals converted (NULL: zeros); NULL on failure. */
static inline og_tensor *nh_tensor(og_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    og_tensor *t = NULL;
    if (og_tensor_create(dt, rank, dims, NULL, &t)) return NULL;
    for (int64_t i = 0; vals && i < t->numel; i++) {
        double v = vals[i];
        void *d = t->data;
        switch (dt) {
        case OG_FLOAT: ((float *)d)[i] = (float)v; break;
        case OG_DOUBLE: ((double *)d)[i] = v; break;
        case OG_FLOAT16: ((uint16_t *)d)[i] = og_float_to_half((float)v); break;
        case OG_BFLOAT16: ((uint16_t *)d)[i] = og_float_to_bfloat16((float)v); break;
        case OG_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
        case OG_INT16: ((int16_t *)d)[i] = (int16_t)v; break;
        case OG_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
        case OG_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
        case OG_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
        case OG_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; break;
        case OG_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; break;
        case OG_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; break;
        case OG_BOOL: ((uint8_t *)d)[i] = v != 0; break;
        default: og_tensor_free(t); return NULL;
        }
    }
    return t;
}

/* A new tensor holding a copy of `data` (its elements in dtype's layout). */
static inline og_tensor *nh_tensor_raw(og_dtype dt, int rank, const int64_t *dims, const void *data)
{
    og_tensor *t = NULL;
    size_t nb = 0;
    if (!og_shape_nbytes(dt, rank, dims, &nb)) return NULL;
    if (og_tensor_from_data(dt, rank, dims, data, nb, NULL, &t)) return NULL;
    return t;
}

static inline og_tensor *nh_scalar(og_dtype dt, double v) { return nh_tensor(dt, 0, NULL, &v); }

static inline void nh_free_tensors(og_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        og_tensor_free(t[i]);
        t[i] = NULL;
    }
}

/* ---- building, running ----------------------------------------------------------- */

static inline int nh_n_in(const nh_node *n)
{
    if (n->n_in) return n->n_in;
    int k = 0;
    for (int i = 0; i < NH_MAX_IO; i++)
        if (n->in[i]) k = i + 1;
    return k;
}

static inline int nh_n_out(const nh_node *n) { return n->n_out ? n->n_out : 1; }

static inline const char *nh_domain(const nh_node *n) { return n->domain ? n->domain : ""; }

/* The type of value t as a declaration would give it, interned in g: a tensor's dtype and
 * shape; a container's kind around its items' type (tensors: their dtype, and their rank and
 * the dims all items share when their ranks agree; nothing for an empty container).  NULL
 * when out of memory. */
static inline const og_type *nh_value_type(og_graph *g, const og_tensor *t)
{
    if (t->kind == OG_KIND_TENSOR) return og_graph_type_tensor(g, t->dtype, t->rank, t->dims);
    const og_type *elem = NULL;
    if (t->n_items && t->items[0]->kind == OG_KIND_TENSOR) {
        const og_tensor *a = t->items[0];
        int rank = a->rank;
        int64_t dims[OG_MAX_RANK];
        memcpy(dims, a->dims, sizeof dims);
        for (int64_t i = 1; i < t->n_items; i++) {
            if (t->items[i]->rank != rank) rank = -1;
            for (int d = 0; d < rank; d++)
                if (t->items[i]->dims[d] != dims[d]) dims[d] = OG_DIM_UNKNOWN;
        }
        elem = og_graph_type_tensor(g, a->dtype, rank, dims);
    } else if (t->n_items) {
        elem = nh_value_type(g, t->items[0]);
    }
    og_dtype key = t->keys ? t->keys->dtype : OG_UNDEFINED;
    return og_graph_type_wrap(g, t->kind, key, elem);
}

/* Declare value v as d says (see nh_node.decl) for tensor t; a value of another kind as its
 * type (nh_value_type) unless d is "?". */
static inline og_status nh_declare(og_graph *g, og_value *v, const og_tensor *t, const char *d)
{
    if (d && strcmp(d, "?") == 0) return OG_OK; /* dtype undefined, rank -1 */
    if (t->kind != OG_KIND_TENSOR) {
        v->type = nh_value_type(g, t);
        return v->type ? OG_OK : og_error(OG_ERR_NOMEM, "out of memory declaring a type");
    }
    v->dtype = t->dtype;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
    if (!d) return OG_OK;
    if (strncmp(d, "?:", 2) == 0) {
        v->dtype = OG_UNDEFINED;
        d += 2;
    }
    int rank = 0;
    for (const char *p = d; *p; rank++) {
        char tok[64];
        size_t len = strcspn(p, ",");
        if (rank == OG_MAX_RANK || len == 0 || len >= sizeof tok)
            return og_error(OG_ERR_INVALID_ARG, "decl '%s': bad dims", d);
        memcpy(tok, p, len);
        tok[len] = '\0';
        p += len + (p[len] == ',');
        char *end;
        long long k = strtoll(tok, &end, 10);
        if (*end == '\0') {
            v->dims[rank] = k;
        } else if (strcmp(tok, "?") == 0) {
            v->dims[rank] = OG_DIM_UNKNOWN;
        } else {
            int sym = og_graph_symbol(g, tok);
            if (sym < 0) return og_error(OG_ERR_NOMEM, "decl '%s'", d);
            v->dims[rank] = og_dim_symbol(sym);
        }
    }
    v->rank = rank;
    return OG_OK;
}

static inline og_status nh_attr_add(og_graph *g, const nh_attr *src)
{
    og_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)src->name;
    a.type = src->type;
    a.i = src->i;
    a.f = src->f;
    a.n = src->n;
    a.ints = (int64_t *)src->ints;
    a.floats = (float *)src->floats;
    a.strings = (char **)src->strings;
    a.t = (og_tensor *)src->t;
    if (src->s) {
        a.s = (char *)src->s;
        a.s_len = strlen(src->s);
    }
    return og_node_add_attr(g, 0, &a); /* copied */
}

/* Build the graph of case n into r (not resolved yet). */
static inline og_status nh_build(const nh_node *n, nh_result *r)
{
    memset(r, 0, sizeof *r);
    r->spec = n;
    r->stage = NH_LOAD;
    og_test_cases++;
    int n_in = nh_n_in(n), n_out = nh_n_out(n);
    const char *dom = nh_domain(n);
    og_status st = OG_ERR_NOMEM;
    og_graph *g = og_graph_new(NULL);
    if (!g) return r->status = og_error(st, "out of memory");
    r->g = g;
    const og_allocator *a = g->alloc;
    g->n_opsets = dom[0] ? 2 : 1;
    g->opsets = og_calloc(a, 2, sizeof *g->opsets);
    g->inputs = og_calloc(a, (size_t)n_in + 1, sizeof *g->inputs);
    g->outputs = og_calloc(a, (size_t)n_out + 1, sizeof *g->outputs);
    if (!g->opsets || !g->inputs || !g->outputs) goto fail;
    g->opsets[0].domain = og_strdup(a, dom);
    g->opsets[0].version = n->opset;
    if (dom[0]) {
        g->opsets[1].domain = og_strdup(a, "");
        g->opsets[1].version = 17;
    }
    if (!og_graph_add_node(g, n->op, dom, n->name ? n->name : "n0", n_in, n_out)) goto fail;
    char name[16];
    for (int i = 0; i < n_in; i++) {
        if (!n->in[i]) continue;
        snprintf(name, sizeof name, "x%d", i);
        int v = og_graph_add_value(g, name);
        if (v < 0) goto fail;
        og_value *val = &g->values[v];
        val->kind = OG_VALUE_INPUT;
        val->is_graph_input = true;
        if ((st = nh_declare(g, val, n->in[i], n->decl[i]))) goto fail;
        g->nodes[0].in[i] = v;
        g->inputs[g->n_inputs++] = v;
    }
    for (int j = 0; j < n_out; j++) {
        r->y[j] = -1;
        if (n->omit_out & (1u << j)) continue;
        snprintf(name, sizeof name, "y%d", j);
        int v = og_graph_add_value(g, name);
        if (v < 0) goto fail;
        g->values[v].is_graph_output = true;
        g->nodes[0].out[j] = v;
        g->outputs[g->n_outputs++] = v;
        r->y[j] = v;
    }
    for (int k = 0; k < NH_MAX_ATTRS && n->attrs[k].name; k++)
        if ((st = nh_attr_add(g, &n->attrs[k]))) goto fail;
    r->node = &g->nodes[0];
    return OG_OK;
fail:
    if (st == OG_ERR_NOMEM) og_error(st, "out of memory building the graph");
    return r->status = st;
}

/* Build the graph of case n and resolve it (parse, static inference), into r: the stage
 * NH_LOAD, which nh_exec continues.  Release r with nh_release. */
static inline og_status nh_load(const nh_node *n, nh_result *r)
{
    og_status st = nh_build(n, r);
    if (!st) st = og_graph_finalize(r->g);
    if (!st) st = og_graph_resolve(r->g, true);
    r->node = r->g ? &r->g->nodes[0] : NULL; /* finalize sorts the node array */
    r->status = st;
    if (!st) r->stage = NH_BIND;
    return st;
}

/* The harness's checks of a run that succeeded (see the top of this file). */
static inline void nh_cross_check(nh_result *r, const og_tensor *const *in, int n_in)
{
    const og_node *node = r->node;
    const og_graph *g = r->g;
    char label[256];
    og_node_label(node, label, sizeof label);
    bool ok = true;
    for (int j = 0; j < node->n_out; j++) {
        const og_tensor *t = r->out[j];
        if (r->y[j] < 0 || !t) continue;
        const og_value *v = &g->values[r->y[j]];
        if (t->kind != OG_KIND_TENSOR || v->type) { /* a container: its nested type fits */
            char why[300] = "";
            if (!v->type || !og_value_fits(t, v->type, why, sizeof why)) {
                fprintf(stderr, "%s: output %d is a %s at run time, static inference said %s%s\n",
                        label, j, og_kind_name(t->kind), v->type ? "another type: " : "a tensor",
                        why);
                ok = false;
            }
            continue;
        }
        bool same = (v->dtype == OG_UNDEFINED || v->dtype == t->dtype) &&
                    (v->rank < 0 || v->rank == t->rank);
        for (int d = 0; same && v->rank == t->rank && d < t->rank; d++)
            same = v->dims[d] < 0 || v->dims[d] == t->dims[d];
        if (!same) {
            char a[128], b[128];
            fprintf(stderr, "%s: output %d is %s %s at run time, static inference said %s %s\n",
                    label, j, og_dtype_name(t->dtype), og_shape_str(t->rank, t->dims, a, sizeof a),
                    og_dtype_name(v->dtype),
                    og_shape_str(v->rank < 0 ? 0 : v->rank, v->dims, b, sizeof b));
            ok = false;
        }
    }
    og_test_harness++;
    if (!ok) og_test_failures++;

    /* the kernel without a binding, on outputs filled with a pattern (string tensors start
     * empty, values of another kind as empty containers, as the executor gives them) */
    const og_kernel_def *d =
        og_backend_find(&og_cpu_backend, node->domain, node->op_type, node->since_version);
    if (!d) return; /* a view (Reshape, Identity, ...): no kernel of its own */
    og_tensor *out[NH_MAX_IO] = {0};
    og_status st = OG_OK;
    for (int j = 0; j < node->n_out && !st; j++) {
        const og_tensor *t = r->out[j];
        if (node->out[j] < 0 || !t) continue;
        if (t->kind != OG_KIND_TENSOR) {
            st = og_value_new(t->kind, NULL, &out[j]);
            continue;
        }
        st = og_tensor_alloc(t->dtype, t->rank, t->dims, NULL, &out[j]);
        if (st || !out[j]->buf) continue;
        if (t->dtype == OG_STRING)
            og_buffer_hold_strings(out[j]->buf, out[j]->numel);
        else
            memset(out[j]->data, 0xA5, og_tensor_nbytes(out[j]));
    }
    /* the random key of the session's run (its first, seed 0): Dropout draws the same mask */
    og_kernel_ctx k = {.node = node,
                       .params = node->params,
                       .alloc = g->alloc,
                       .threads = r->spec->threads ? r->spec->threads : 1,
                       .rng = og_exec_run_key(0, 0)};
    if (!st) st = d->fn(&k, in, n_in, out, node->n_out);
    ok = st == OG_OK;
    for (int j = 0; j < node->n_out && ok; j++) {
        ok = !out[j] || og_value_equal(out[j], r->out[j]); /* bit for bit, strings by content */
        if (!ok) fprintf(stderr, "%s: output %d of the unbound kernel differs\n", label, j);
    }
    if (st) fprintf(stderr, "%s: the unbound kernel failed: %s\n", label, og_last_error());
    og_test_harness++;
    if (!ok) og_test_failures++;
    nh_free_tensors(out, NH_MAX_IO);
}

/* Continue a case that nh_load resolved: session, run, the harness's checks. */
static inline og_status nh_exec(nh_result *r)
{
    const nh_node *n = r->spec;
    og_session *s = NULL;
    og_tensor *outs[NH_MAX_IO] = {0};
    const og_tensor *ins[NH_MAX_IO];
    const char *names[NH_MAX_IO];
    int n_in = nh_n_in(n), k = 0;
    og_session_options opts = {.threads = n->threads ? n->threads : 1};
    og_status st = r->status;
    if (st) return st;
    r->stage = NH_BIND;
    if ((st = og_exec_create(r->g, NULL, og_default_allocator(), &opts, false, &s))) goto done;
    r->stage = NH_RUN;
    for (int i = 0; i < n_in; i++) /* the graph inputs: the inputs given, in order */
        if (n->in[i]) {
            names[k] = r->g->values[r->node->in[i]].name;
            ins[k++] = n->in[i];
        }
    if ((st = og_session_run(s, names, ins, k, outs))) goto done;
    k = 0;
    for (int j = 0; j < nh_n_out(n); j++)
        if (r->y[j] >= 0) r->out[j] = outs[k++];
    r->stage = NH_DONE;
    nh_cross_check(r, n->in, n_in);
done:
    og_session_free(s);
    return r->status = st;
}

/* Build, resolve, bind and run case n into r (r->stage: where it stopped).  Release r with
 * nh_release, whatever the status. */
static inline og_status nh_run(const nh_node *n, nh_result *r)
{
    og_status st = nh_load(n, r);
    return st ? st : nh_exec(r);
}

static inline void nh_release(nh_result *r)
{
    nh_free_tensors(r->out, NH_MAX_IO);
    og_graph_free(r->g);
    r->g = NULL;
    r->node = NULL;
}

/* Output j of r, handed to the caller (r keeps NULL): to feed it to another case. */
static inline og_tensor *nh_take(nh_result *r, int j)
{
    og_tensor *t = r->out[j];
    r->out[j] = NULL;
    return t;
}

/* Only parse case n's attributes (the node built, its op found, its since-version resolved,
 * no inputs required and no inference): the params in r->node->params for the test to read.
 * For attribute tables: defaults, required attributes, types, limits per version. */
static inline og_status nh_parse(const nh_node *n, nh_result *r)
{
    og_status st = nh_build(n, r);
    if (st) return st;
    og_node *node = r->node;
    const og_op_def *def = og_op_find(node->domain, node->op_type);
    if (!def) return r->status = og_error(OG_ERR_UNSUPPORTED, "no op %s", node->op_type);
    node->op = def;
    node->opset = n->opset;
    node->since_version = og_op_resolve_version(def, n->opset);
    og_op_ctx c = {node, r->g->alloc, NULL, false};
    if (def->parse) {
        st = def->parse(&c, &node->params);
        node->free_params = def->free_params;
    }
    node->parsed = true;
    if (!st) r->stage = NH_DONE;
    return r->status = st;
}

/* The static declaration of output j after nh_load (NULL if omitted). */
static inline const og_value *nh_static_out(const nh_result *r, int j)
{
    return r->g && r->y[j] >= 0 ? &r->g->values[r->y[j]] : NULL;
}

/* ---- checks ---------------------------------------------------------------------- */

static inline const char *nh_stage_name(nh_stage s)
{
    switch (s) {
    case NH_LOAD: return "load";
    case NH_BIND: return "bind";
    case NH_RUN: return "run";
    case NH_DONE: return "done";
    default: return "?";
    }
}

/* One check reported at the caller's file and line (the macros below pass them). */
static inline bool nh_check_at(bool ok, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static inline bool nh_check_at(bool ok, const char *file, int line, const char *fmt, ...)
{
    og_test_checks++;
    if (ok) return true;
    og_test_failures++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: CHECK failed: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return false;
}

/* Run case n and check that it fails with status `want` (one check), at `stage` (unless 0:
 * one check) with a message containing `msg` (unless NULL: one check). */
#define nh_expect_fail(n, stage, want, msg)                                                        \
    nh_expect_fail_at(__FILE__, __LINE__, n, stage, want, msg)
static inline void nh_expect_fail_at(const char *file, int line, const nh_node *n, nh_stage stage,
                                     og_status want, const char *msg)
{
    nh_result r;
    og_status st = nh_run(n, &r);
    nh_check_at(st == want, file, line, "%s: status %s, expected %s (%s)", n->op,
                og_status_name(st), og_status_name(want), og_last_error());
    if (stage)
        nh_check_at(r.stage == stage, file, line, "%s: failed at %s, expected %s", n->op,
                    nh_stage_name(r.stage), nh_stage_name(stage));
    if (msg)
        nh_check_at(strstr(og_last_error(), msg) != NULL, file, line,
                    "%s: the message does not say '%s': %s", n->op, msg, og_last_error());
    nh_release(&r);
}

/* Whether t has n elements, each |t[i] - want[i]| <= atol + rtol * |want[i]| (NaN matches
 * NaN, an infinity the same infinity); the first element off is reported, under `what`.
 * Not a check by itself (nh_expect_close is). */
static inline bool nh_close(const char *what, const og_tensor *t, int64_t n, const double *want,
                            double atol, double rtol)
{
    bool ok = t && t->numel == n;
    if (!ok)
        fprintf(stderr, "%s: expected %lld elements, got %lld\n", what, (long long)n,
                t ? (long long)t->numel : -1LL);
    for (int64_t i = 0; ok && i < n; i++) {
        double v = og_tensor_get_f64(t, i), w = want[i];
        bool same = isnan(w) ? isnan(v) : isinf(w) ? v == w : fabs(v - w) <= atol + rtol * fabs(w);
        if (!same) {
            fprintf(stderr, "%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, v, w);
            ok = false;
        }
    }
    return ok;
}

/* nh_close as one check, reported at the caller's line: nh_expect_close(what, t, n, want,
 * atol, rtol), and nh_expect(what, t, n, want, tol) with atol = rtol = tol, i.e.
 * |t[i] - want[i]| <= tol * (1 + |want[i]|).  (Variadic, so that `want` may be a compound
 * literal with commas.) */
#define nh_expect_close(...) nh_expect_close_at(__FILE__, __LINE__, __VA_ARGS__)
#define nh_expect(...)       nh_expect_at(__FILE__, __LINE__, __VA_ARGS__)
static inline bool nh_expect_close_at(const char *file, int line, const char *what,
                                      const og_tensor *t, int64_t n, const double *want,
                                      double atol, double rtol)
{
    return nh_check_at(nh_close(what, t, n, want, atol, rtol), file, line, "%s: values (above)",
                       what);
}
static inline bool nh_expect_at(const char *file, int line, const char *what, const og_tensor *t,
                                int64_t n, const double *want, double tol)
{
    return nh_expect_close_at(file, line, what, t, n, want, tol, tol);
}

#endif /* OG_NODE_HARNESS_H */
