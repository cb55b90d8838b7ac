/* graph.c: building, checking and freeing onnxgrad's graph. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

og_graph *og_graph_new(const og_allocator *a)
{
    a = og_alloc_or_default(a);
    og_graph *g = og_calloc(a, 1, sizeof *g);
    if (g) {
        g->alloc = a;
        g->max_depth = OG_DEFAULT_MAX_DEPTH;
    }
    return g;
}

og_status og_depth_error(int depth, int limit, const char *what)
{
    return og_error(OG_ERR_LIMIT,
                    "%s nests %d levels deep, beyond the limit of %d (og_load_options.max_depth)",
                    what, depth, limit);
}

og_graph *og_graph_new_sub(og_graph *parent)
{
    og_graph *g = og_graph_new(parent->alloc);
    if (g) {
        g->parent = parent;
        g->max_depth = parent->max_depth;
    }
    return g;
}

og_graph *og_graph_root(const og_graph *g)
{
    while (g->parent) g = g->parent;
    return (og_graph *)g;
}

static void attr_free(const og_allocator *a, og_attr *at)
{
    og_free(a, at->name);
    og_free(a, at->doc);
    og_free(a, at->s);
    og_tensor_free(at->t);
    og_free(a, at->floats);
    og_free(a, at->ints);
    if (at->strings)
        for (int i = 0; i < at->n; i++) og_free(a, at->strings[i]);
    og_free(a, at->strings);
    if (at->tensors)
        for (int i = 0; i < at->n; i++) og_tensor_free(at->tensors[i]);
    og_free(a, at->tensors);
    og_free(a, at->raw);
    og_graph_free(at->g);
}

static void node_free(const og_allocator *a, og_node *n)
{
    og_free(a, n->name);
    og_free(a, n->op_type);
    og_free(a, n->domain);
    og_free(a, n->doc);
    og_free(a, n->in);
    og_free(a, n->out);
    for (int j = 0; j < n->n_attrs; j++) attr_free(a, &n->attrs[j]);
    og_free(a, n->attrs);
    og_free(a, n->overload);
    if (n->params) {
        if (n->free_params)
            n->free_params(a, n->params);
        else
            og_free(a, n->params);
    }
}

void og_graph_free(og_graph *g)
{
    if (!g) return;
    const og_allocator *a = g->alloc;
    for (int i = 0; i < g->n_values; i++) {
        og_free(a, g->values[i].name);
        og_free(a, g->values[i].doc);
        og_tensor_free(g->values[i].init);
    }
    og_free(a, g->values);
    for (int i = 0; i < g->n_nodes; i++) node_free(a, &g->nodes[i]);
    og_free(a, g->nodes);
    for (int i = 0; i < g->n_opsets; i++) og_free(a, g->opsets[i].domain);
    og_free(a, g->opsets);
    for (int i = 0; i < g->n_metadata; i++) {
        og_free(a, g->metadata[i].key);
        og_free(a, g->metadata[i].value);
    }
    og_free(a, g->metadata);
    og_graph_clear_training_info(g);
    for (int i = 0; i < g->n_functions; i++) {
        og_free(a, g->functions[i].domain);
        og_free(a, g->functions[i].name);
        og_free(a, g->functions[i].overload);
        og_free(a, g->functions[i].proto.data);
    }
    og_free(a, g->functions);
    for (int i = 0; i < g->n_symbols; i++) og_free(a, g->symbols[i]);
    og_free(a, g->symbols);
    og_free(a, g->symbol_index);
    for (int i = 0; i < g->n_types; i++) og_free(a, g->types[i]);
    og_free(a, g->types);
    og_free(a, g->inputs);
    og_free(a, g->outputs);
    og_free(a, g->inits);
    og_free(a, g->value_index);
    og_free(a, g->producer_name);
    og_free(a, g->producer_version);
    og_free(a, g->model_domain);
    og_free(a, g->model_doc);
    og_free(a, g->name);
    og_free(a, g->doc);
    og_free(a, g);
}

void og_graph_clear_training_info(og_graph *g)
{
    for (int i = 0; i < g->n_training_info; i++) og_free(g->alloc, g->training_info[i].data);
    og_free(g->alloc, g->training_info);
    g->training_info = NULL;
    g->n_training_info = 0;
}

/* ---- the name index ------------------------------------------------------------- */

/* FNV-1a: value names are short and mostly distinct in their last characters. */
static size_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

/* The name indexes (values', symbols'): open addressing with linear probing over a
 * power-of-two table never more than half full, each slot an index + 1 (0: empty). */

/* Put index i, named `name`, into its slot of slots[0..cap-1]. */
static void slots_put(int *slots, size_t cap, const char *name, int i)
{
    size_t j = hash_name(name) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = i + 1;
}

/* A zeroed table for n names (at least *cap slots, 64 at first), its size in *cap; NULL
 * when out of memory. */
static int *slots_new(const og_allocator *a, size_t n, size_t *cap)
{
    size_t c = *cap ? *cap : 64;
    while (c < n * 2) c *= 2;
    int *slots = og_calloc(a, c, sizeof *slots);
    if (slots) *cap = c;
    return slots;
}

static void index_insert(og_graph *g, int v)
{
    slots_put(g->value_index, g->value_index_cap, g->values[v].name, v);
}

/* Make room for `n` values, rehashing values 0..n_values-1 into a new table.  On failure
 * the old table is kept, still valid. */
static bool index_reserve(og_graph *g, size_t n)
{
    if (n * 2 <= g->value_index_cap) return true;
    size_t cap = g->value_index_cap;
    int *slots = slots_new(g->alloc, n, &cap);
    if (!slots) return false;
    og_free(g->alloc, g->value_index);
    g->value_index = slots;
    g->value_index_cap = cap;
    for (int v = 0; v < g->n_values; v++) index_insert(g, v);
    return true;
}

int og_graph_find_value(const og_graph *g, const char *name)
{
    if (!g->value_index_cap) return -1;
    size_t mask = g->value_index_cap - 1;
    /* linear probing meets the first value added under a name before any later one */
    for (size_t j = hash_name(name) & mask; g->value_index[j]; j = (j + 1) & mask) {
        int v = g->value_index[j] - 1;
        if (strcmp(g->values[v].name, name) == 0) return v;
    }
    return -1;
}

og_status og_graph_rename_value(og_graph *g, int v, const char *name)
{
    char *nn = og_strdup(g->alloc, name);
    if (!nn) return og_error(OG_ERR_NOMEM, "out of memory renaming a value");
    char *old = g->values[v].name;
    /* subgraphs that read the value by name read the new one */
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_attrs; k++) {
            og_graph *sub = g->nodes[i].attrs[k].g;
            int w = sub ? og_graph_find_value(sub, old) : -1;
            if (w < 0 || sub->values[w].kind != OG_VALUE_OUTER) continue;
            og_status st = og_graph_rename_value(sub, w, name);
            if (st) {
                og_free(g->alloc, nn);
                return st;
            }
        }
    g->values[v].name = nn;
    og_free(g->alloc, old);
    memset(g->value_index, 0, g->value_index_cap * sizeof *g->value_index);
    for (int w = 0; w < g->n_values; w++) index_insert(g, w);
    return OG_OK;
}

bool og_graph_add_initializer(og_graph *g, int v)
{
    int cap = g->cap_inits > g->n_inits ? g->cap_inits : g->n_inits;
    if (g->n_inits == cap) {
        int want = cap < 16 ? 16 : cap > INT32_MAX / 2 ? INT32_MAX : 2 * cap;
        if (want <= cap) return false;
        int *p = og_realloc(g->alloc, g->inits, (size_t)cap * sizeof *p, (size_t)want * sizeof *p);
        if (!p) return false;
        g->inits = p;
        cap = want;
    }
    g->cap_inits = cap;
    g->inits[g->n_inits++] = v;
    return true;
}

int og_graph_add_value(og_graph *g, const char *name)
{
    if (!index_reserve(g, (size_t)g->n_values + 1)) return -1;
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values ? g->cap_values * 2 : 16;
        og_value *v = og_realloc(g->alloc, g->values, (size_t)g->n_values * sizeof *v,
                                 (size_t)cap * sizeof *v);
        if (!v) return -1;
        g->values = v;
        g->cap_values = cap;
    }
    og_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = og_strdup(g->alloc, name);
    if (!v->name) return -1;
    v->rank = -1;
    for (int i = 0; i < OG_MAX_RANK; i++) v->dims[i] = OG_DIM_UNKNOWN;
    v->producer = -1;
    index_insert(g, g->n_values);
    return g->n_values++;
}

og_node *og_graph_add_node(og_graph *g, const char *op_type, const char *domain, const char *name,
                           int n_in, int n_out)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
        og_node *v =
            og_realloc(g->alloc, g->nodes, (size_t)g->n_nodes * sizeof *v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        g->nodes = v;
        g->cap_nodes = cap;
    }
    og_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    g->n_nodes++; /* counted now so that og_graph_free releases partial nodes */
    n->op_type = og_strdup(g->alloc, op_type);
    n->domain = og_strdup(g->alloc, domain ? domain : "");
    n->name = og_strdup(g->alloc, name ? name : "");
    n->in = og_malloc(g->alloc, (size_t)(n_in ? n_in : 1) * sizeof *n->in);
    n->out = og_malloc(g->alloc, (size_t)(n_out ? n_out : 1) * sizeof *n->out);
    if (!n->op_type || !n->domain || !n->name || !n->in || !n->out) return NULL;
    n->n_in = n_in;
    n->n_out = n_out;
    for (int i = 0; i < n_in; i++) n->in[i] = -1;
    for (int i = 0; i < n_out; i++) n->out[i] = -1;
    return n;
}

/* An index of every symbol of g with room for one more; false when out of memory. */
static bool symbol_index_ready(og_graph *g)
{
    size_t want = (size_t)g->n_symbols + 1;
    if (g->n_indexed == g->n_symbols && want * 2 <= g->symbol_index_cap) return true;
    size_t cap = 0;
    int *slots = slots_new(g->alloc, want, &cap);
    if (!slots) return false;
    og_free(g->alloc, g->symbol_index);
    g->symbol_index = slots;
    g->symbol_index_cap = cap;
    for (int i = 0; i < g->n_symbols; i++) slots_put(slots, cap, g->symbols[i], i);
    g->n_indexed = g->n_symbols;
    return true;
}

int og_graph_symbol(og_graph *g, const char *name)
{
    g = og_graph_root(g);
    if (!symbol_index_ready(g)) return -1;
    size_t mask = g->symbol_index_cap - 1;
    for (size_t j = hash_name(name) & mask; g->symbol_index[j]; j = (j + 1) & mask) {
        int i = g->symbol_index[j] - 1;
        if (strcmp(g->symbols[i], name) == 0) return i;
    }
    int cap = g->cap_symbols ? g->cap_symbols : g->n_symbols;
    if (g->n_symbols == cap) {
        int nc = cap < 8 ? 16 : 2 * cap;
        char **s = og_realloc(g->alloc, g->symbols, (size_t)g->n_symbols * sizeof *s,
                              (size_t)nc * sizeof *s);
        if (!s) return -1;
        g->symbols = s;
        g->cap_symbols = nc;
    }
    g->symbols[g->n_symbols] = og_strdup(g->alloc, name);
    if (!g->symbols[g->n_symbols]) return -1;
    slots_put(g->symbol_index, g->symbol_index_cap, g->symbols[g->n_symbols], g->n_symbols);
    g->n_indexed++;
    return g->n_symbols++;
}

const char *og_graph_dim_name(const og_graph *g, int64_t d)
{
    if (d >= 0 || d == OG_DIM_UNKNOWN) return NULL;
    g = og_graph_root(g);
    int64_t sym = -1 - d;
    return sym < g->n_symbols ? g->symbols[sym] : NULL;
}

int64_t og_graph_opset(const og_graph *g, const char *domain)
{
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    g = og_graph_root(g);
    for (int i = 0; i < g->n_opsets; i++) {
        const char *d = g->opsets[i].domain;
        if (strcmp(d, "ai.onnx") == 0) d = "";
        if (strcmp(d, domain) == 0) return g->opsets[i].version;
    }
    return -1;
}

const og_attr *og_node_attr(const og_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

og_status og_node_verror(const og_node *n, og_status status, const char *fmt, va_list ap)
{
    char label[640], msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return og_error(status, "%s: %s", og_node_label(n, label, sizeof label), msg);
}

const char *og_node_label(const og_node *n, char *buf, size_t size)
{
    const char *dom = n->domain && n->domain[0] ? n->domain : NULL;
    /* nodes the gradient builder made say which forward node they differentiate (their
     * doc_string, kept in saved graphs: OG_GRAD_DOC_PREFIX) */
    const char *of =
        n->doc && strncmp(n->doc, OG_GRAD_DOC_PREFIX, sizeof OG_GRAD_DOC_PREFIX - 1) == 0 ? n->doc
                                                                                          : NULL;
    snprintf(buf, size, "node '%s' (%s%s%s, opset %d%s%s)", n->name, dom ? dom : "", dom ? "." : "",
             n->op_type, n->since_version ? n->since_version : n->opset, of ? "; " : "",
             of ? of : "");
    return buf;
}

/* Kahn's algorithm over value producers; a node left unsorted sits on a cycle. */
/* Node ni's implicit inputs: the outer values its (finalized) subgraphs read, as values of
 * g found by name (added when g lacks the name: finalize then finds it undefined, or an
 * outer value of g itself). */
static og_status set_implicit(og_graph *g, int ni)
{
    const og_allocator *a = g->alloc;
    og_node *n = &g->nodes[ni];
    int own = n->n_in - n->n_implicit, count = 0;
    for (int k = 0; k < n->n_attrs; k++)
        if (n->attrs[k].g) count += n->attrs[k].g->n_values;
    int *in = og_malloc(a, (size_t)(own + count + 1) * sizeof *in);
    if (!in) return og_error(OG_ERR_NOMEM, "out of memory");
    memcpy(in, n->in, (size_t)own * sizeof *in);
    int m = own;
    for (int k = 0; k < g->nodes[ni].n_attrs; k++) {
        const og_graph *sub = g->nodes[ni].attrs[k].g;
        for (int v = 0; sub && v < sub->n_values; v++) {
            if (sub->values[v].kind != OG_VALUE_OUTER) continue;
            int w = og_graph_find_value(g, sub->values[v].name);
            if (w < 0 && (w = og_graph_add_value(g, sub->values[v].name)) < 0) {
                og_free(a, in);
                return og_error(OG_ERR_NOMEM, "out of memory");
            }
            bool seen = false;
            for (int j = own; j < m && !seen; j++) seen = in[j] == w;
            if (!seen) in[m++] = w;
        }
    }
    n = &g->nodes[ni];
    og_free(a, n->in);
    n->in = in;
    n->n_in = m;
    n->n_implicit = m - own;
    return OG_OK;
}

og_status og_graph_finalize(og_graph *g)
{
    const og_allocator *a = g->alloc;
    og_status st = OG_OK;
    int *indeg = NULL, *order = NULL, *queue = NULL;
    og_node *sorted = NULL;
    int nn = g->n_nodes;
    int depth = 0;
    for (const og_graph *p = g->parent; p; p = p->parent) depth++;
    int limit = og_graph_root(g)->max_depth;
    if (depth > limit) return og_depth_error(depth, limit, "a subgraph");
    /* subgraphs first: what they read from here becomes their nodes' implicit inputs */
    for (int i = 0; i < nn; i++)
        for (int k = 0; k < g->nodes[i].n_attrs; k++) {
            og_graph *sub = g->nodes[i].attrs[k].g;
            if (!sub) continue;
            if ((st = og_graph_finalize(sub))) {
                char label[256];
                if (depth >= 4) return st; /* the outer levels name where */
                return og_error_prefix(st, "%s, attribute '%s'",
                                       og_node_label(&g->nodes[i], label, sizeof label),
                                       g->nodes[i].attrs[k].name);
            }
        }
    for (int i = 0; i < nn; i++) {
        bool any = false;
        for (int k = 0; k < g->nodes[i].n_attrs && !any; k++) any = g->nodes[i].attrs[k].g != NULL;
        if (any && (st = set_implicit(g, i))) return st;
    }

    for (int i = 0; i < g->n_values; i++) {
        g->values[i].producer = -1;
        g->values[i].n_consumers = 0;
        if (g->values[i].kind == OG_VALUE_OUTER) g->values[i].kind = OG_VALUE_INTERMEDIATE;
    }
    for (int i = 0; i < nn; i++) {
        og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_out; j++) {
            int v = n->out[j];
            if (v < 0) continue;
            og_value *val = &g->values[v];
            if (val->producer >= 0 || val->kind != OG_VALUE_INTERMEDIATE) {
                st = og_error(OG_ERR_MODEL, "value '%s' is produced twice (by node '%s' and %s)",
                              val->name, n->name,
                              val->producer >= 0 ? g->nodes[val->producer].name
                                                 : "as a graph input or initializer");
                goto done;
            }
            val->producer = i;
        }
    }
    for (int i = 0; i < nn; i++) {
        og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_in; j++) {
            int v = n->in[j];
            if (v < 0) continue;
            og_value *val = &g->values[v];
            val->n_consumers++;
            if (val->producer < 0 && val->kind == OG_VALUE_INTERMEDIATE && g->parent) {
                val->kind = OG_VALUE_OUTER; /* an enclosing graph's, found by name */
            } else if (val->producer < 0 && val->kind == OG_VALUE_INTERMEDIATE) {
                st = og_error(OG_ERR_MODEL,
                              "node '%s' (%s) reads '%s', which is no graph input, initializer "
                              "or node output",
                              n->name, n->op_type, val->name);
                goto done;
            }
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        og_value *val = &g->values[g->outputs[i]];
        if (val->producer < 0 && val->kind == OG_VALUE_INTERMEDIATE && g->parent) {
            val->kind = OG_VALUE_OUTER;
        } else if (val->producer < 0 && val->kind == OG_VALUE_INTERMEDIATE) {
            st = og_error(OG_ERR_MODEL, "graph output '%s' is not produced by any node", val->name);
            goto done;
        }
    }

    indeg = og_calloc(a, (size_t)nn + 1, sizeof *indeg);
    order = og_calloc(a, (size_t)nn + 1, sizeof *order);
    queue = og_calloc(a, (size_t)nn + 1, sizeof *queue);
    sorted = og_calloc(a, (size_t)nn + 1, sizeof *sorted);
    if (!indeg || !order || !queue || !sorted) {
        st = og_error(OG_ERR_NOMEM, "out of memory sorting the graph");
        goto done;
    }
    for (int i = 0; i < nn; i++) {
        og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0 && g->values[n->in[j]].producer >= 0) indeg[i]++;
    }
    /* consumers of each node's outputs: scan all nodes (O(N*E) avoided with per-value
     * consumer counts; graphs here are small enough for the simple scan per pop). */
    int head = 0, tail = 0, count = 0;
    for (int i = 0; i < nn; i++)
        if (indeg[i] == 0) queue[tail++] = i;
    /* build consumer adjacency lists to keep this linear */
    int *cstart = og_calloc(a, (size_t)g->n_values + 1, sizeof *cstart);
    int total = 0;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++)
            if (g->nodes[i].in[j] >= 0) total++;
    int *clist = og_calloc(a, (size_t)total + 1, sizeof *clist);
    int *cfill = og_calloc(a, (size_t)g->n_values + 1, sizeof *cfill);
    if (!cstart || !clist || !cfill) {
        og_free(a, cstart);
        og_free(a, clist);
        og_free(a, cfill);
        st = og_error(OG_ERR_NOMEM, "out of memory sorting the graph");
        goto done;
    }
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++)
            if (g->nodes[i].in[j] >= 0) cstart[g->nodes[i].in[j] + 1]++;
    for (int v = 0; v < g->n_values; v++) cstart[v + 1] += cstart[v];
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].n_in; j++) {
            int v = g->nodes[i].in[j];
            if (v >= 0) clist[cstart[v] + cfill[v]++] = i;
        }
    while (head < tail) {
        int i = queue[head++];
        order[count++] = i;
        og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_out; j++) {
            int v = n->out[j];
            if (v < 0) continue;
            for (int c = cstart[v]; c < cstart[v + 1]; c++)
                if (--indeg[clist[c]] == 0) queue[tail++] = clist[c];
        }
    }
    og_free(a, cstart);
    og_free(a, clist);
    og_free(a, cfill);
    if (count < nn) {
        for (int i = 0; i < nn; i++)
            if (indeg[i] > 0) {
                st = og_error(OG_ERR_MODEL, "the graph has a cycle through node '%s' (%s)",
                              g->nodes[i].name, g->nodes[i].op_type);
                goto done;
            }
    }
    for (int i = 0; i < nn; i++) sorted[i] = g->nodes[order[i]];
    og_free(a, g->nodes);
    g->nodes = sorted;
    g->cap_nodes = nn + 1;
    sorted = NULL;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].n_out; j++)
            if (g->nodes[i].out[j] >= 0) g->values[g->nodes[i].out[j]].producer = i;
done:
    og_free(a, indeg);
    og_free(a, order);
    og_free(a, queue);
    og_free(a, sorted);
    return st;
}

/* ---- copies ----------------------------------------------------------------------- */

static void *dup_bytes(const og_allocator *a, const void *p, size_t n)
{
    void *d = og_malloc(a, n);
    if (d && n) memcpy(d, p, n);
    return d;
}

/* A NULL string stays NULL (a value without doc is saved without one); false when out of
 * memory. */
static bool dup_opt(const og_allocator *a, const char *s, char **out)
{
    *out = s ? og_strdup(a, s) : NULL;
    return !s || *out;
}

/* Room for at least one element, as og_graph_add_node gives, so that code growing the
 * array later never copies from an empty block. */
static int *dup_ints(const og_allocator *a, const int *p, int n)
{
    int *d = og_malloc(a, (size_t)(n ? n : 1) * sizeof *d);
    if (d && n) memcpy(d, p, (size_t)n * sizeof *d);
    return d;
}

static og_status dup_tensor(const og_allocator *a, const og_tensor *t, og_tensor **out)
{
    *out = NULL;
    if (!t) return OG_OK;
    og_status st = og_tensor_clone(t, a, out);
    if (!st) (*out)->readonly = t->readonly;
    return st;
}

static og_status sub_clone(const og_graph *src, og_graph *parent, og_graph **out);

/* Deep copy of *at into *d, which is zeroed, for a node of graph dst (a subgraph's copy has
 * dst as its parent); on failure *d holds what was copied, for attr_free. */
static og_status attr_copy(og_graph *dst, og_attr *d, const og_attr *at)
{
    const og_allocator *a = dst->alloc;
    og_status st;
    d->type = at->type;
    d->f = at->f;
    d->i = at->i;
    d->n = at->n;
    d->s_len = at->s_len;
    d->raw_len = at->raw_len;
    if (!(d->name = og_strdup(a, at->name)) || !dup_opt(a, at->doc, &d->doc)) goto nomem;
    if (at->s && !(d->s = dup_bytes(a, at->s, at->s_len + 1))) goto nomem;
    if (at->ints && !(d->ints = dup_bytes(a, at->ints, (size_t)at->n * sizeof *d->ints)))
        goto nomem;
    if (at->floats && !(d->floats = dup_bytes(a, at->floats, (size_t)at->n * sizeof *d->floats)))
        goto nomem;
    if (at->raw && !(d->raw = dup_bytes(a, at->raw, at->raw_len))) goto nomem;
    if (at->strings) {
        if (!(d->strings = og_calloc(a, (size_t)at->n + 1, sizeof *d->strings))) goto nomem;
        for (int k = 0; k < at->n; k++)
            if (!(d->strings[k] = og_strdup(a, at->strings[k]))) goto nomem;
    }
    if (at->tensors) {
        if (!(d->tensors = og_calloc(a, (size_t)at->n + 1, sizeof *d->tensors))) goto nomem;
        for (int k = 0; k < at->n; k++)
            if ((st = dup_tensor(a, at->tensors[k], &d->tensors[k]))) return st;
    }
    if (at->g && (st = sub_clone(at->g, dst, &d->g))) return st;
    return dup_tensor(a, at->t, &d->t);
nomem:
    return og_error(OG_ERR_NOMEM, "out of memory copying attribute '%s'", at->name ? at->name : "");
}

og_status og_node_add_attr(og_graph *g, int node, const og_attr *at)
{
    const og_allocator *a = g->alloc;
    og_node *n = &g->nodes[node];
    og_attr *attrs = og_realloc(a, n->attrs, (size_t)n->n_attrs * sizeof *attrs,
                                (size_t)(n->n_attrs + 1) * sizeof *attrs);
    if (!attrs) return og_error(OG_ERR_NOMEM, "out of memory adding an attribute");
    n->attrs = attrs;
    og_attr *d = &attrs[n->n_attrs];
    memset(d, 0, sizeof *d);
    n->n_attrs++; /* counted now: og_graph_free releases what was copied so far */
    return attr_copy(g, d, at);
}

bool og_node_remove_attr(og_graph *g, int node, const char *name)
{
    og_node *n = &g->nodes[node];
    for (int j = 0; j < n->n_attrs; j++) {
        if (strcmp(n->attrs[j].name, name) != 0) continue;
        attr_free(g->alloc, &n->attrs[j]);
        memmove(&n->attrs[j], &n->attrs[j + 1], (size_t)(n->n_attrs - j - 1) * sizeof *n->attrs);
        n->n_attrs--;
        return true;
    }
    return false;
}

/* *n into the zeroed *d of g: what the node says, not how it was resolved. */
static og_status node_copy(og_graph *g, const og_node *n, og_node *d)
{
    const og_allocator *a = g->alloc;
    d->n_in = n->n_in;
    d->n_out = n->n_out;
    d->n_implicit = n->n_implicit;
    if (!(d->name = og_strdup(a, n->name)) || !(d->op_type = og_strdup(a, n->op_type)) ||
        !(d->domain = og_strdup(a, n->domain)) || !dup_opt(a, n->doc, &d->doc) ||
        !(d->in = dup_ints(a, n->in, n->n_in)) || !(d->out = dup_ints(a, n->out, n->n_out)) ||
        !dup_opt(a, n->overload, &d->overload) ||
        !(d->attrs = og_calloc(a, (size_t)n->n_attrs + 1, sizeof *d->attrs)))
        return og_error(OG_ERR_NOMEM, "out of memory copying the graph");
    for (int j = 0; j < n->n_attrs; j++) {
        d->n_attrs++; /* counted first: og_graph_free releases a partial copy */
        og_status st = attr_copy(g, &d->attrs[j], &n->attrs[j]);
        if (st) return st;
    }
    return OG_OK;
}

/* Type t (of any graph) interned in g's root, its element types first; NULL when out of
 * memory. */
static const og_type *map_type(og_graph *g, const og_type *t)
{
    og_type c = *t;
    if (t->elem && !(c.elem = map_type(g, t->elem))) return NULL;
    return og_graph_type(g, &c);
}

/* *s into the zeroed *d of g. */
static og_status value_copy(og_graph *g, const og_value *s, og_value *d)
{
    d->kind = s->kind;
    d->type = s->type ? map_type(g, s->type) : NULL;
    if (s->type && !d->type) return og_error(OG_ERR_NOMEM, "out of memory copying the graph");
    d->is_graph_input = s->is_graph_input;
    d->is_graph_output = s->is_graph_output;
    d->dtype = s->dtype;
    d->rank = s->rank;
    memcpy(d->dims, s->dims, sizeof d->dims);
    d->has_value_info = s->has_value_info;
    d->shape_inferred = s->shape_inferred;
    d->producer = s->producer;
    d->n_consumers = s->n_consumers;
    if (!(d->name = og_strdup(g->alloc, s->name)) || !dup_opt(g->alloc, s->doc, &d->doc))
        return og_error(OG_ERR_NOMEM, "out of memory copying the graph");
    og_status st = dup_tensor(g->alloc, s->init, &d->init);
    d->known = d->init; /* other known contents come from resolution */
    return st;
}

/* The graph-level part of src into g: values, nodes (with their subgraphs), the input,
 * output and initializer lists, the name and doc.  Arrays are calloc'ed and counted before
 * they are filled, so that og_graph_free releases a partial copy. */
static og_status clone_body(const og_graph *src, og_graph *g)
{
    const og_allocator *a = g->alloc;
    og_status st;
    if (!dup_opt(a, src->name, &g->name) || !dup_opt(a, src->doc, &g->doc)) goto nomem;
    if (!(g->values = og_calloc(a, (size_t)src->n_values + 1, sizeof *g->values))) goto nomem;
    g->n_values = g->cap_values = src->n_values;
    for (int v = 0; v < src->n_values; v++)
        if ((st = value_copy(g, &src->values[v], &g->values[v]))) return st;
    if (!index_reserve(g, (size_t)g->n_values)) goto nomem;
    if (!(g->nodes = og_calloc(a, (size_t)src->n_nodes + 1, sizeof *g->nodes))) goto nomem;
    g->cap_nodes = src->n_nodes;
    for (int i = 0; i < src->n_nodes; i++) {
        g->n_nodes++;
        if ((st = node_copy(g, &src->nodes[i], &g->nodes[i]))) return st;
    }
    g->n_inputs = src->n_inputs;
    g->n_outputs = src->n_outputs;
    g->n_inits = src->n_inits;
    if (!(g->inputs = dup_ints(a, src->inputs, src->n_inputs)) ||
        !(g->outputs = dup_ints(a, src->outputs, src->n_outputs)) ||
        !(g->inits = dup_ints(a, src->inits, src->n_inits)))
        goto nomem;
    return OG_OK;
nomem:
    return og_error(OG_ERR_NOMEM, "out of memory copying the graph");
}

static og_status sub_clone(const og_graph *src, og_graph *parent, og_graph **out)
{
    og_graph *g = og_graph_new_sub(parent);
    *out = g;
    if (!g) return og_error(OG_ERR_NOMEM, "out of memory copying the graph");
    return clone_body(src, g); /* on failure *out holds the partial copy, for attr_free */
}

/* Every field of og_graph is either copied here or left at og_graph_new's zero (the name
 * index, built at the end). */
og_status og_graph_clone(const og_graph *src, const og_allocator *a, og_graph **out)
{
    og_status st = OG_OK;
    *out = NULL;
    og_graph *g = og_graph_new(a);
    if (!g) return og_error(OG_ERR_NOMEM, "out of memory copying the graph");
    a = g->alloc;
    g->ir_version = src->ir_version;
    g->max_depth = src->max_depth;
    g->model_version = src->model_version;
    if (!dup_opt(a, src->producer_name, &g->producer_name) ||
        !dup_opt(a, src->producer_version, &g->producer_version) ||
        !dup_opt(a, src->model_domain, &g->model_domain) ||
        !dup_opt(a, src->model_doc, &g->model_doc))
        goto nomem;

    if (!(g->opsets = og_calloc(a, (size_t)src->n_opsets + 1, sizeof *g->opsets))) goto nomem;
    g->n_opsets = src->n_opsets;
    for (int i = 0; i < src->n_opsets; i++) {
        g->opsets[i].version = src->opsets[i].version;
        if (!(g->opsets[i].domain = og_strdup(a, src->opsets[i].domain))) goto nomem;
    }
    if (!(g->metadata = og_calloc(a, (size_t)src->n_metadata + 1, sizeof *g->metadata))) goto nomem;
    g->n_metadata = src->n_metadata;
    for (int i = 0; i < src->n_metadata; i++)
        if (!(g->metadata[i].key = og_strdup(a, src->metadata[i].key)) ||
            !(g->metadata[i].value = og_strdup(a, src->metadata[i].value)))
            goto nomem;
    if (src->n_training_info) {
        g->training_info = og_calloc(a, (size_t)src->n_training_info, sizeof *g->training_info);
        if (!g->training_info) goto nomem;
        g->n_training_info = src->n_training_info;
        for (int i = 0; i < src->n_training_info; i++) {
            const og_blob *b = &src->training_info[i];
            if (!(g->training_info[i].data = dup_bytes(a, b->data, b->size))) goto nomem;
            g->training_info[i].size = b->size;
        }
    }
    for (int i = 0; i < src->n_functions; i++) {
        const og_function *f = &src->functions[i];
        if ((st = og_graph_add_function(g, f->domain, f->name, f->overload, f->proto.data,
                                        f->proto.size)))
            goto fail;
    }
    if (!(g->symbols = og_calloc(a, (size_t)src->n_symbols + 1, sizeof *g->symbols))) goto nomem;
    g->n_symbols = src->n_symbols;
    for (int i = 0; i < src->n_symbols; i++)
        if (!(g->symbols[i] = og_strdup(a, src->symbols[i]))) goto nomem;

    /* types, in order: an element type is always interned before its containers */
    if (!(g->types = og_calloc(a, (size_t)src->n_types + 1, sizeof *g->types))) goto nomem;
    g->cap_types = src->n_types + 1;
    for (int i = 0; i < src->n_types; i++) {
        og_type *t = og_malloc(a, sizeof *t);
        if (!t) goto nomem;
        *t = *src->types[i];
        if (t->elem) t->elem = g->types[t->elem->id];
        g->types[g->n_types++] = t;
    }
    if ((st = clone_body(src, g))) goto fail;
    *out = g;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory copying the graph");
fail:
    og_graph_free(g);
    return st;
}

og_status og_graph_copy_into(const og_graph *src, og_graph *dst)
{
    if (dst->n_values || dst->n_nodes)
        return og_error(OG_ERR_INTERNAL, "copying a graph into one that is not empty");
    return clone_body(src, dst);
}

og_status og_graph_extract(const og_graph *sub, og_graph **out)
{
    const og_graph *root = og_graph_root(sub);
    og_status st;
    *out = NULL;
    og_graph *g = og_graph_new(root->alloc);
    if (!g) return og_error(OG_ERR_NOMEM, "out of memory copying a subgraph");
    const og_allocator *a = g->alloc;
    g->ir_version = root->ir_version;
    if (!(g->opsets = og_calloc(a, (size_t)root->n_opsets + 1, sizeof *g->opsets))) goto nomem;
    for (int i = 0; i < root->n_opsets; i++, g->n_opsets++) {
        g->opsets[i].version = root->opsets[i].version;
        if (!(g->opsets[i].domain = og_strdup(a, root->opsets[i].domain))) goto nomem;
    }
    if (!(g->symbols = og_calloc(a, (size_t)root->n_symbols + 1, sizeof *g->symbols))) goto nomem;
    for (int i = 0; i < root->n_symbols; i++, g->n_symbols++)
        if (!(g->symbols[i] = og_strdup(a, root->symbols[i]))) goto nomem;
    if ((st = clone_body(sub, g))) goto fail;
    int n_outer = 0;
    for (int v = 0; v < g->n_values; v++) n_outer += g->values[v].kind == OG_VALUE_OUTER;
    int *inputs = og_realloc(a, g->inputs, (size_t)g->n_inputs * sizeof *inputs,
                             (size_t)(g->n_inputs + n_outer + 1) * sizeof *inputs);
    if (!inputs) goto nomem;
    g->inputs = inputs;
    for (int v = 0; v < g->n_values; v++) {
        og_value *val = &g->values[v];
        if (val->kind != OG_VALUE_OUTER) continue;
        val->kind = OG_VALUE_INPUT;
        val->is_graph_input = true;
        val->has_value_info = true;
        g->inputs[g->n_inputs++] = v;
    }
    *out = g;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory copying a subgraph");
fail:
    og_graph_free(g);
    return st;
}

int og_graph_find_function(const og_graph *g, const char *domain, const char *name,
                           const char *overload)
{
    if (!overload) overload = "";
    for (int i = 0; i < g->n_functions; i++) {
        const og_function *f = &g->functions[i];
        if (strcmp(f->domain, domain) == 0 && strcmp(f->name, name) == 0 &&
            strcmp(f->overload, overload) == 0)
            return i;
    }
    return -1;
}

og_status og_graph_add_function(og_graph *g, const char *domain, const char *name,
                                const char *overload, const void *proto, size_t size)
{
    const og_allocator *a = g->alloc;
    if (og_graph_find_function(g, domain, name, overload) >= 0)
        return og_error(OG_ERR_MODEL, "the model defines function %s.%s%s%s twice", domain, name,
                        overload && overload[0] ? ":" : "", overload ? overload : "");
    og_function *fs = og_realloc(a, g->functions, (size_t)g->n_functions * sizeof *fs,
                                 (size_t)(g->n_functions + 1) * sizeof *fs);
    if (!fs) return og_error(OG_ERR_NOMEM, "out of memory adding a function");
    g->functions = fs;
    og_function *f = &fs[g->n_functions];
    memset(f, 0, sizeof *f);
    f->domain = og_strdup(a, domain);
    f->name = og_strdup(a, name);
    f->overload = og_strdup(a, overload ? overload : "");
    f->proto.data = og_malloc(a, size ? size : 1);
    f->proto.size = size;
    if (!f->domain || !f->name || !f->overload || !f->proto.data) {
        og_free(a, f->domain);
        og_free(a, f->name);
        og_free(a, f->overload);
        og_free(a, f->proto.data);
        return og_error(OG_ERR_NOMEM, "out of memory adding a function");
    }
    if (size) memcpy(f->proto.data, proto, size);
    g->n_functions++;
    return OG_OK;
}

og_status og_graph_prune(og_graph *g)
{
    const og_allocator *a = g->alloc;
    bool *needed = og_calloc(a, (size_t)g->n_values + 1, sizeof *needed);
    bool *keep = og_calloc(a, (size_t)g->n_nodes + 1, sizeof *keep);
    og_status st = OG_OK;
    if (!needed || !keep) {
        st = og_error(OG_ERR_NOMEM, "out of memory pruning the graph");
        goto done;
    }
    for (int i = 0; i < g->n_outputs; i++) needed[g->outputs[i]] = true;
    for (int i = g->n_nodes - 1; i >= 0; i--) { /* nodes are in topological order */
        og_node *n = &g->nodes[i];
        for (int j = 0; j < n->n_out && !keep[i]; j++)
            keep[i] = n->out[j] >= 0 && needed[n->out[j]];
        if (!keep[i]) continue;
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0) needed[n->in[j]] = true;
    }
    int w = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (keep[i]) {
            g->nodes[w++] = g->nodes[i];
            continue;
        }
        node_free(a, &g->nodes[i]);
    }
    g->n_nodes = w;
done:
    og_free(a, needed);
    og_free(a, keep);
    return st;
}

void og_graph_remove_node(og_graph *g, int i)
{
    node_free(g->alloc, &g->nodes[i]);
    memmove(&g->nodes[i], &g->nodes[i + 1], (size_t)(g->n_nodes - i - 1) * sizeof *g->nodes);
    g->n_nodes--;
}

const char *og_graph_metadata(const og_graph *g, const char *key)
{
    for (int i = 0; i < g->n_metadata; i++)
        if (strcmp(g->metadata[i].key, key) == 0) return g->metadata[i].value;
    return NULL;
}

og_status og_graph_set_metadata(og_graph *g, const char *key, const char *value)
{
    char *v = og_strdup(g->alloc, value);
    if (!v) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_metadata; i++) {
        if (strcmp(g->metadata[i].key, key) != 0) continue;
        og_free(g->alloc, g->metadata[i].value);
        g->metadata[i].value = v;
        return OG_OK;
    }
    char *k = og_strdup(g->alloc, key);
    og_kv *kv = k ? og_realloc(g->alloc, g->metadata, (size_t)g->n_metadata * sizeof *kv,
                               (size_t)(g->n_metadata + 1) * sizeof *kv)
                  : NULL;
    if (!kv) {
        og_free(g->alloc, k);
        og_free(g->alloc, v);
        return og_error(OG_ERR_NOMEM, "out of memory");
    }
    g->metadata = kv;
    kv[g->n_metadata].key = k;
    kv[g->n_metadata].value = v;
    g->n_metadata++;
    return OG_OK;
}
