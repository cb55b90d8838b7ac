/*
 * training_info.c: ONNX's TrainingInfoProto and the trainer.
 *
 * Export (og_trainer_export_training_model).  The trainer's training graph (og_grad) already
 * holds the forward nodes, which the loss model also has, and the backward nodes.  A copy
 * of it gets the optimizer step: the gradient seed becomes a Constant, the learning rate
 * (og_train_lr, float64), the step count (og_train_step, int64) and the optimizer states
 * (og_train_<weight>_<slot>) become initializers, and ordinary nodes compute the scheduled
 * learning rate from the step, clip the gradients, and update every weight (Momentum,
 * Adam and Adagrad of ai.onnx.preview.training, or Sub/Mul for plain SGD).  The copy is
 * resolved (so everything it computes is checked), then split: the nodes the loss model
 * has stay in ModelProto.graph, the rest form the algorithm graph, whose outputs are the new
 * values; the new initializers go to the main graph.  Updates map onto PyTorch's:
 *   SGD, momentum mu, Nesterov, weight decay wd:  Momentum(alpha = mu, beta = 1,
 *     norm_coefficient = wd).  At T == 0 ONNX takes beta = 1 and V = alpha V + G, which is
 *     PyTorch's first step (buf = g) since V starts at zero; beta = 1 makes the rule T-free.
 *   Adam:  Adam(alpha = beta1, beta = beta2, norm_coefficient = wd) at T = step + 1, since
 *     ONNX skips the bias correction at T == 0 where PyTorch corrects its first step (k = 1).
 *     ONNX adds epsilon to sqrt(v) before the bias correction of v where PyTorch adds it
 *     after: PyTorch's epsilon acts as eps * sqrt(1 - beta2^k) in ONNX's form, a relative
 *     difference of about eps / sqrt(v) per update (large only for tiny gradients in the
 *     first steps); alpha and beta are float attributes, so the bias corrections use
 *     float-rounded betas (a relative difference up to ~1e-5 at k = 1).
 *   AdamW:  X * (1 - lr wd) with plain ops, then Adam without weight decay.
 *   Adagrad:  Adagrad(decay_factor = lr_decay, epsilon = eps, norm_coefficient = wd) at
 *     T = step.
 *   Plain SGD:  X - lr (G + wd X).
 * Clipping: scale = clip / (norm + 1e-6) where the global norm exceeds clip (in float64).
 * Schedules: every og_lr_schedule, computed in float64 from the step count.
 *
 * Algorithm mode (og_trainer_create without optimizer options).  The model's main graph and
 * its algorithm graph are combined as ONNX defines it, the initializers the bindings name
 * become graph inputs fed from tensors the trainer holds, and each step runs the combined
 * graph for the loss and the bound outputs, then copies the outputs into the held tensors.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_io.h"
#include "train/trainer.h"

#define TRAINING_DOMAIN "ai.onnx.preview.training"

/* ---- shared helpers ----------------------------------------------------------------- */

static og_model *wrap_model(const og_allocator *a, og_graph *g)
{
    og_model *m = og_malloc(a, sizeof *m);
    if (!m) return NULL;
    m->alloc = *a;
    m->user_alloc = a;
    m->graph = g;
    return m;
}

static bool same_shape(const og_tensor *x, const og_tensor *y)
{
    return x->dtype == y->dtype && x->rank == y->rank &&
           memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims) == 0;
}

static bool all_finite(const og_tensor *t)
{
    if (t->dtype == OG_FLOAT) {
        const float *p = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(p[i])) return false;
    } else if (t->dtype == OG_DOUBLE) {
        const double *p = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(p[i])) return false;
    }
    return true;
}

/* "float32 [3, 1]" */
static const char *describe(og_dtype dt, int rank, const int64_t *dims, char *buf, size_t size)
{
    char shape[128];
    snprintf(buf, size, "%s %s", og_dtype_name(dt), og_shape_str(rank, dims, shape, sizeof shape));
    return buf;
}

/* Make value v of g an initializer holding t (taken); v, or -1 when out of memory. */
static int set_initializer(og_graph *g, int v, og_tensor *t)
{
    if (v < 0 || !og_graph_add_initializer(g, v)) {
        og_tensor_free(t);
        return -1;
    }
    og_value *val = &g->values[v];
    val->kind = OG_VALUE_INITIALIZER;
    val->init = t;
    t->readonly = true;
    val->dtype = t->dtype;
    val->rank = t->rank;
    memcpy(val->dims, t->dims, sizeof val->dims);
    return v;
}

/* A new initializer named `name` holding t (taken); its value index, or -1. */
static int add_initializer(og_graph *g, const char *name, og_tensor *t)
{
    return set_initializer(g, og_graph_add_value(g, name), t);
}

/* Import `domain` at `version` unless g does. */
static og_status add_opset(og_graph *g, const char *domain, int64_t version)
{
    if (og_graph_opset(g, domain) >= 0) return OG_OK;
    og_opset *o = og_realloc(g->alloc, g->opsets, (size_t)g->n_opsets * sizeof *o,
                             (size_t)(g->n_opsets + 1) * sizeof *o);
    if (!o) return og_error(OG_ERR_NOMEM, "out of memory");
    g->opsets = o;
    o[g->n_opsets].domain = og_strdup(g->alloc, domain);
    if (!o[g->n_opsets].domain) return og_error(OG_ERR_NOMEM, "out of memory");
    o[g->n_opsets++].version = version;
    return OG_OK;
}

/* ---- export: the optimizer step as nodes ---------------------------------------------- */

typedef struct exporter {
    const og_trainer *t;
    const og_allocator *a;
    og_graph *main;  /* copy of the loss model: ModelProto.graph of the result */
    og_graph *tg;    /* copy of the training graph, getting the optimizer step */
    og_gb *b;        /* emitter over tg */
    int64_t opset;   /* default-domain opset */
    int lr, step;    /* tg values of the initializers og_train_lr, og_train_step */
    int adam_t;      /* tg value of step + 1 (made once), or -1 */
    int *states;     /* tg values of the state initializers, [weight * n_slots + slot] */
    int *grads;      /* tg values of the weights' gradients */
    og_kv *bindings; /* update_binding (names borrowed from tg) */
    int n_bindings;
    bool training_ops; /* an ai.onnx.preview.training op was emitted */
} exporter;

/* A name that neither graph uses: base, else base_1, base_2, ... */
static void fresh_name(const exporter *x, const char *base, char *buf, size_t size)
{
    snprintf(buf, size, "%s", base);
    for (int k = 1; og_graph_find_value(x->tg, buf) >= 0 || og_graph_find_value(x->main, buf) >= 0;
         k++) {
        int len = snprintf(buf, size, "%.*s_%d", (int)(size > 16 ? size - 16 : 0), base, k);
        if (len < 0) buf[0] = '\0';
    }
}

static int scalar_f64(exporter *x, double v) { return og_gb_scalar(x->b, v, OG_DOUBLE); }

static int cast(exporter *x, int v, og_dtype to)
{
    int r = og_gb_op1(x->b, "Cast", v);
    og_gb_attr_int(x->b, og_gb_last(x->b), "to", (int64_t)to);
    return r;
}

static og_status need_opset(const exporter *x, int64_t min, const char *what)
{
    if (x->opset >= min) return OG_OK;
    return og_error(OG_ERR_UNSUPPORTED,
                    "og_trainer_export_training_model: %s needs Where (default-domain opset >= "
                    "%lld); the model imports opset %lld",
                    what, (long long)min, (long long)x->opset);
}

/* The learning rate of the step (float64 scalar) from og_train_lr and og_train_step, as
 * og_optimizer_lr computes it. */
static og_status emit_lr(exporter *x, int *out)
{
    const og_optimizer_options *o = &x->t->opt;
    og_gb *b = x->b;
    int R = x->lr;
    if (o->schedule == OG_LR_CONSTANT) {
        *out = R;
        return OG_OK;
    }
    int td = cast(x, x->step, OG_DOUBLE), lr = -1;
    switch (o->schedule) {
    case OG_LR_INVSCALING: /* lr / (t + 1)^power_t */
        lr = og_gb_op2(b, "Div", R,
                       og_gb_op2(b, "Pow", og_gb_op2(b, "Add", td, scalar_f64(x, 1.0)),
                                 scalar_f64(x, o->power_t)));
        break;
    case OG_LR_STEP: /* lr gamma^floor(t / step_size) */
        lr = og_gb_op2(
            b, "Mul", R,
            og_gb_op2(b, "Pow", scalar_f64(x, o->gamma),
                      og_gb_op1(b, "Floor",
                                og_gb_op2(b, "Div", td, scalar_f64(x, (double)o->step_size)))));
        break;
    case OG_LR_OPTIMAL: { /* 1 / (alpha (t0 + t)), t0 as og_optimizer_lr */
        double typw = sqrt(1.0 / sqrt(o->alpha));
        double t0 = 1.0 / (typw * o->alpha);
        lr = og_gb_op2(b, "Div", scalar_f64(x, 1.0),
                       og_gb_op2(b, "Mul", scalar_f64(x, o->alpha),
                                 og_gb_op2(b, "Add", scalar_f64(x, t0), td)));
        break;
    }
    case OG_LR_LINEAR:
    case OG_LR_COSINE: {
        double warm = (double)o->warmup_steps, total = (double)o->total_steps;
        int after = R;
        if (total > warm) {
            /* p = min((t - warm) / (total - warm), 1) */
            int p = og_gb_op2(b, "Min",
                              og_gb_op2(b, "Div", og_gb_op2(b, "Sub", td, scalar_f64(x, warm)),
                                        scalar_f64(x, total - warm)),
                              scalar_f64(x, 1.0));
            int f =
                o->schedule == OG_LR_LINEAR
                    ? og_gb_op2(b, "Sub", scalar_f64(x, 1.0), p)
                    : og_gb_op2(b, "Mul", scalar_f64(x, 0.5),
                                og_gb_op2(b, "Add", scalar_f64(x, 1.0),
                                          og_gb_op1(b, "Cos",
                                                    og_gb_op2(b, "Mul",
                                                              scalar_f64(x, 3.14159265358979323846),
                                                              p))));
            after =
                og_gb_op2(b, "Add", scalar_f64(x, o->min_lr),
                          og_gb_op2(b, "Mul", og_gb_op2(b, "Sub", R, scalar_f64(x, o->min_lr)), f));
        }
        lr = after;
        if (o->warmup_steps > 0) {
            og_status st = need_opset(x, 9, "a learning-rate warm-up");
            if (st) return st;
            /* t < warm: lr (t + 1) / warm */
            int warm_lr = og_gb_op2(
                b, "Div", og_gb_op2(b, "Mul", R, og_gb_op2(b, "Add", td, scalar_f64(x, 1.0))),
                scalar_f64(x, warm));
            lr = og_gb_op3(b, "Where", og_gb_op2(b, "Less", td, scalar_f64(x, warm)), warm_lr,
                           after);
        }
        break;
    }
    default: break;
    }
    *out = lr;
    return og_gb_status(b);
}

/* Scale the gradients so that their global L2 norm is at most clip_norm (float64 norm, as
 * the trainer): g *= clip / (norm + 1e-6) where norm > clip. */
static og_status emit_clipping(exporter *x)
{
    const og_trainer *t = x->t;
    og_gb *b = x->b;
    og_status st = need_opset(x, 9, "gradient clipping");
    if (st) return st;
    int *sq = og_malloc(x->a, (size_t)t->n_weights * sizeof *sq);
    if (!sq) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < t->n_weights; i++) {
        int g = t->w[i]->dtype == OG_DOUBLE ? x->grads[i] : cast(x, x->grads[i], OG_DOUBLE);
        sq[i] = og_gb_op1(b, "ReduceSumSquare", g);
        og_gb_attr_int(b, og_gb_last(b), "keepdims", 0);
    }
    int total = t->n_weights == 1 ? sq[0] : og_gb_op(b, "Sum", t->n_weights, sq);
    og_free(x->a, sq);
    int norm = og_gb_op1(b, "Sqrt", total);
    int clip = scalar_f64(x, t->opt.clip_norm);
    int scale = og_gb_op3(b, "Where", og_gb_op2(b, "Greater", norm, clip),
                          og_gb_op2(b, "Div", clip, og_gb_op2(b, "Add", norm, scalar_f64(x, 1e-6))),
                          scalar_f64(x, 1.0));
    int scale_f = -1; /* the scale in float32, made once */
    for (int i = 0; i < t->n_weights; i++) {
        int s = scale;
        if (t->w[i]->dtype != OG_DOUBLE) {
            if (scale_f < 0) scale_f = cast(x, scale, t->w[i]->dtype);
            s = scale_f;
        }
        x->grads[i] = og_gb_op2(b, "Mul", x->grads[i], s);
    }
    return og_gb_status(b);
}

/* Record update_binding key -> tg value v. */
static void bind(exporter *x, const char *key, int v)
{
    x->bindings[x->n_bindings].key = (char *)key;
    x->bindings[x->n_bindings++].value = x->tg->values[v].name;
}

/* An ai.onnx.preview.training node of tg: inputs R, T, then `in`; outputs named
 * og_train_<weight>_new and og_train_<weight>_<slot>_new (their tg values into out). */
static og_status emit_training_op(exporter *x, const char *op, int R, int T, const int *in,
                                  int n_in, int w, int *out, int n_out)
{
    og_graph *g = x->tg;
    const og_trainer *t = x->t;
    const char *wname = og_trainer_weight_name(t, w);
    char name[600], base[600];
    snprintf(base, sizeof base, "og_train/%s/%s", wname, op);
    og_node *n = og_graph_add_node(g, op, TRAINING_DOMAIN, base, 2 + n_in, n_out);
    if (!n) return og_error(OG_ERR_NOMEM, "out of memory");
    int node = g->n_nodes - 1;
    n->in[0] = R;
    n->in[1] = T;
    for (int j = 0; j < n_in; j++) n->in[2 + j] = in[j];
    for (int k = 0; k < n_out; k++) {
        if (k == 0)
            snprintf(base, sizeof base, "og_train_%s_new", wname);
        else
            snprintf(base, sizeof base, "og_train_%s_%s_new", wname,
                     og_optim_slot_name(&t->opt, k - 1));
        fresh_name(x, base, name, sizeof name);
        int v = og_graph_add_value(g, name);
        if (v < 0) return og_error(OG_ERR_NOMEM, "out of memory");
        g->nodes[node].out[k] = v;
        out[k] = v;
    }
    x->training_ops = true;
    return OG_OK;
}

static og_status attr_float(og_graph *g, int node, const char *name, double v)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_FLOAT;
    at.f = (float)v;
    return og_node_add_attr(g, node, &at);
}

static og_status attr_string(og_graph *g, int node, const char *name, const char *v)
{
    og_attr at = {0};
    at.name = (char *)name;
    at.type = OG_ATTR_STRING;
    at.s = (char *)v;
    at.s_len = strlen(v);
    return og_node_add_attr(g, node, &at);
}

/* The update of weight i, at learning rate lr (float64 scalar). */
static og_status emit_update(exporter *x, int i, int lr, int *lr_cast)
{
    const og_trainer *t = x->t;
    const og_optimizer_options *o = &t->opt;
    og_gb *b = x->b;
    og_graph *g = x->tg;
    og_dtype dt = t->w[i]->dtype;
    const char *wname = og_trainer_weight_name(t, i);
    int w = og_graph_find_value(g, wname), gr = x->grads[i];
    int out[3] = {-1, -1, -1}, in[4];
    og_status st = OG_OK;
    if (w < 0) return og_error(OG_ERR_INTERNAL, "weight '%s' is not in the training graph", wname);
    int *s = x->states + (size_t)i * (size_t)t->n_slots;
    switch (o->kind) {
    case OG_OPTIMIZER_SGD:
        if (o->momentum > 0) {
            in[0] = w, in[1] = gr, in[2] = s[0];
            if ((st = emit_training_op(x, "Momentum", lr, x->step, in, 3, i, out, 2))) return st;
            int node = g->n_nodes - 1;
            if (!st) st = attr_float(g, node, "alpha", o->momentum);
            if (!st) st = attr_float(g, node, "beta", 1.0);
            if (!st) st = attr_float(g, node, "norm_coefficient", o->weight_decay);
            if (!st) st = attr_string(g, node, "mode", o->nesterov ? "nesterov" : "standard");
        } else {
            /* w - lr (g + wd w), lr in the weight's dtype */
            int r = dt == OG_DOUBLE ? lr : *lr_cast;
            if (r < 0) r = *lr_cast = cast(x, lr, dt);
            int d = gr;
            if (o->weight_decay > 0)
                d = og_gb_op2(b, "Add", gr,
                              og_gb_op2(b, "Mul", og_gb_scalar(b, o->weight_decay, dt), w));
            char name[600], base[600];
            snprintf(base, sizeof base, "og_train_%s_new", wname);
            fresh_name(x, base, name, sizeof name);
            int step[2] = {w, og_gb_op2(b, "Mul", r, d)};
            out[0] = og_gb_op_named(b, "Sub", 2, step, name);
            if ((st = og_gb_status(b))) return st;
        }
        break;
    case OG_OPTIMIZER_ADAM:
    case OG_OPTIMIZER_ADAMW: {
        bool decoupled = o->kind == OG_OPTIMIZER_ADAMW;
        int xin = w;
        if (decoupled && o->weight_decay > 0) /* w (1 - lr wd), the factor rounded once */
            xin = og_gb_op2(b, "Mul", w,
                            cast(x,
                                 og_gb_op2(b, "Sub", scalar_f64(x, 1.0),
                                           og_gb_op2(b, "Mul", lr, scalar_f64(x, o->weight_decay))),
                                 dt));
        if (x->adam_t < 0) /* ONNX corrects the bias for T > 0: T = step + 1 */
            x->adam_t = og_gb_op2(b, "Add", x->step, og_gb_scalar(b, 1, OG_INT64));
        if ((st = og_gb_status(b))) return st;
        in[0] = xin, in[1] = gr, in[2] = s[0], in[3] = s[1];
        if ((st = emit_training_op(x, "Adam", lr, x->adam_t, in, 4, i, out, 3))) return st;
        int node = g->n_nodes - 1;
        if (!st) st = attr_float(g, node, "alpha", o->beta1);
        if (!st) st = attr_float(g, node, "beta", o->beta2);
        if (!st) st = attr_float(g, node, "epsilon", o->eps);
        if (!st) st = attr_float(g, node, "norm_coefficient", decoupled ? 0.0 : o->weight_decay);
        if (!st) st = attr_float(g, node, "norm_coefficient_post", 0.0);
        break;
    }
    case OG_OPTIMIZER_ADAGRAD: {
        in[0] = w, in[1] = gr, in[2] = s[0];
        if ((st = emit_training_op(x, "Adagrad", lr, x->step, in, 3, i, out, 2))) return st;
        int node = g->n_nodes - 1;
        if (!st) st = attr_float(g, node, "decay_factor", o->lr_decay);
        if (!st) st = attr_float(g, node, "epsilon", o->eps);
        if (!st) st = attr_float(g, node, "norm_coefficient", o->weight_decay);
        break;
    }
    }
    if (st) return st;
    /* update_binding: the weight, then its states */
    bind(x, g->values[w].name, out[0]);
    for (int k = 0; k < t->n_slots; k++) bind(x, g->values[s[k]].name, out[1 + k]);
    return OG_OK;
}

/* The seed of the loss's gradient: a graph input of the training graph, now a Constant of
 * ones (the trainer's seed). */
static og_status seed_to_constant(exporter *x)
{
    og_graph *g = x->tg;
    char name[600];
    snprintf(name, sizeof name, "%s_grad", x->t->loss_name);
    int v = og_graph_find_value(g, name);
    if (v < 0 || g->values[v].kind != OG_VALUE_INPUT)
        return og_error(OG_ERR_INTERNAL, "the training graph has no seed input '%s'", name);
    int w = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] != v) g->inputs[w++] = g->inputs[i];
    g->n_inputs = w;
    g->values[v].kind = OG_VALUE_INTERMEDIATE;
    g->values[v].is_graph_input = false;
    og_node *n = og_graph_add_node(g, "Constant", "", "og_train/seed", 0, 1);
    if (!n) return og_error(OG_ERR_NOMEM, "out of memory");
    n->out[0] = v;
    og_attr at = {0};
    at.name = "value";
    at.type = OG_ATTR_TENSOR;
    at.t = x->t->seed;
    return og_node_add_attr(g, g->n_nodes - 1, &at);
}

/* og_train_lr, og_train_step and the states, as initializers of the training graph. */
static og_status add_state(exporter *x)
{
    const og_trainer *t = x->t;
    og_graph *g = x->tg;
    char name[600], base[600];
    og_tensor *lr = NULL, *step = NULL;
    og_status st = og_tensor_create(OG_DOUBLE, 0, NULL, g->alloc, &lr);
    if (!st) st = og_tensor_create(OG_INT64, 0, NULL, g->alloc, &step);
    if (st) {
        og_tensor_free(lr);
        return st;
    }
    *(double *)lr->data = t->opt.lr;
    *(int64_t *)step->data = t->step;
    fresh_name(x, "og_train_lr", name, sizeof name);
    x->lr = add_initializer(g, name, lr);
    fresh_name(x, "og_train_step", name, sizeof name);
    x->step = x->lr < 0 ? -1 : add_initializer(g, name, step);
    if (x->lr < 0 || x->step < 0) {
        if (x->lr < 0) og_tensor_free(step);
        return og_error(OG_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < t->n_weights; i++)
        for (int k = 0; k < t->n_slots; k++) {
            og_tensor *c = NULL;
            if ((st = og_tensor_clone(t->slots[i * t->n_slots + k], g->alloc, &c))) return st;
            snprintf(base, sizeof base, "og_train_%s_%s", og_trainer_weight_name(t, i),
                     og_optim_slot_name(&t->opt, k));
            fresh_name(x, base, name, sizeof name);
            int v = add_initializer(g, name, c);
            if (v < 0) return og_error(OG_ERR_NOMEM, "out of memory");
            x->states[i * t->n_slots + k] = v;
        }
    return OG_OK;
}

/* Is tg node n one of the loss model's (every output it makes is made there too)? */
static bool in_main(const og_graph *main, const og_graph *tg, const og_node *n)
{
    int made = 0, there = 0;
    for (int j = 0; j < n->n_out; j++) {
        if (n->out[j] < 0) continue;
        made++;
        int v = og_graph_find_value(main, tg->values[n->out[j]].name);
        there += v >= 0 && main->values[v].producer >= 0;
    }
    return made > 0 && there == made;
}

/* The algorithm graph: the nodes of tg that the main graph lacks, the initializers they
 * read that the main graph lacks (the optimizer's go to the main graph instead), and the
 * bound new values as outputs. */
static og_status split(exporter *x, og_graph **out)
{
    og_graph *tg = x->tg, *main = x->main;
    const og_allocator *a = x->a;
    og_status st = OG_OK;
    int dup = 0;
    og_graph *alg = og_graph_new(a);
    int *map = og_malloc(a, ((size_t)tg->n_values + 1) * sizeof *map);
    bool *mine = og_calloc(a, (size_t)tg->n_values + 1, sizeof *mine);
    if (!alg || !map || !mine) goto nomem;
    for (int v = 0; v < tg->n_values; v++) map[v] = -1;
    alg->name = og_strdup(a, "og_train_algorithm");
    if (!alg->name) goto nomem;
    /* the optimizer's initializers belong to the main graph */
    mine[x->lr] = mine[x->step] = true;
    for (int i = 0; i < x->t->n_weights * x->t->n_slots; i++) mine[x->states[i]] = true;
#define VALUE(v) (map[v] >= 0 ? map[v] : (map[v] = og_graph_add_value(alg, tg->values[v].name)))
    for (int ni = 0; ni < tg->n_nodes; ni++) {
        const og_node *n = &tg->nodes[ni];
        if (in_main(main, tg, n)) continue;
        og_node *c = og_graph_add_node(alg, n->op_type, n->domain, n->name, n->n_in, n->n_out);
        if (!c) goto nomem;
        int node = alg->n_nodes - 1;
        for (int j = 0; j < n->n_in; j++) {
            int v = n->in[j] < 0 ? -1 : VALUE(n->in[j]);
            if (n->in[j] >= 0 && v < 0) goto nomem;
            alg->nodes[node].in[j] = v;
        }
        for (int j = 0; j < n->n_out; j++) {
            if (n->out[j] < 0) continue;
            const char *name = tg->values[n->out[j]].name;
            int v;
            if (og_graph_find_value(main, name) >= 0) {
                /* a forward node the backward half re-runs for another output: the value
                 * the main graph makes keeps its producer there */
                char fresh[64];
                do snprintf(fresh, sizeof fresh, "og_train_dup_%d", dup++);
                while (og_graph_find_value(tg, fresh) >= 0 ||
                       og_graph_find_value(main, fresh) >= 0);
                v = og_graph_add_value(alg, fresh);
            } else {
                v = VALUE(n->out[j]);
            }
            if (v < 0) goto nomem;
            alg->nodes[node].out[j] = v;
        }
        for (int k = 0; k < n->n_attrs; k++)
            if ((st = og_node_add_attr(alg, node, &n->attrs[k]))) goto fail;
    }
    /* constants the algorithm reads: its own initializers, or the main graph's */
    for (int v = 0; v < tg->n_values; v++) {
        const og_value *tv = &tg->values[v];
        if (map[v] < 0 || og_graph_find_value(main, tv->name) >= 0) continue;
        if (tv->kind == OG_VALUE_INPUT) {
            st = og_error(OG_ERR_INTERNAL, "the algorithm graph reads training-graph input '%s'",
                          tv->name);
            goto fail;
        }
        if (tv->kind != OG_VALUE_INITIALIZER) continue;
        og_tensor *c = NULL;
        if ((st = og_tensor_clone(tv->init, a, &c))) goto fail;
        /* the optimizer's go to the main graph, where the algorithm reads them by name */
        int r = mine[v] ? add_initializer(main, tv->name, c) : set_initializer(alg, map[v], c);
        if (r < 0) goto nomem;
    }
    /* outputs: the new values, declared */
    alg->outputs = og_malloc(a, ((size_t)x->n_bindings + 1) * sizeof *alg->outputs);
    if (!alg->outputs) goto nomem;
    for (int i = 0; i < x->n_bindings; i++) {
        int tv = og_graph_find_value(tg, x->bindings[i].value);
        int v = tv >= 0 ? map[tv] : -1;
        if (v < 0) {
            st = og_error(OG_ERR_INTERNAL, "the update of '%s' is not in the algorithm graph",
                          x->bindings[i].key);
            goto fail;
        }
        og_value *av = &alg->values[v];
        const og_value *src = &tg->values[tv];
        av->is_graph_output = true;
        av->has_value_info = true;
        av->dtype = src->dtype;
        av->rank = src->rank;
        for (int d = 0; d < src->rank; d++)
            av->dims[d] = src->dims[d] >= 0 ? src->dims[d] : OG_DIM_UNKNOWN;
        alg->outputs[alg->n_outputs++] = v;
    }
#undef VALUE
    og_free(a, map);
    og_free(a, mine);
    *out = alg;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory");
fail:
    og_free(a, map);
    og_free(a, mine);
    og_graph_free(alg);
    return st;
}

/* Load TrainingInfoProto 0 of g back and resolve the combined graph: what the export
 * wrote runs. */
static og_status verify(const og_graph *g, const og_allocator *a)
{
    og_training_info *ti = NULL;
    og_status st = og_onnx_parse_training_info(g, 0, a, &ti);
    if (!st) st = og_graph_finalize(ti->algorithm);
    if (!st) st = og_graph_resolve(ti->algorithm, true);
    og_training_info_free(ti);
    if (st && st != OG_ERR_NOMEM)
        return og_error_prefix(OG_ERR_INTERNAL, "the exported algorithm graph is broken");
    return st;
}

/* Algorithm mode: the model with the held values in its initializers. */
static og_status export_algo(const og_trainer *t, og_model **out)
{
    og_model *c = NULL;
    og_status st = og_model_copy_graph(t->model, t->model->user_alloc, &c);
    if (st) return st;
    og_graph *g = c->graph;
    for (int i = 0; i < t->n_weights; i++) {
        int v = og_graph_find_value(g, og_trainer_weight_name(t, i));
        if (v >= 0 && g->values[v].kind == OG_VALUE_INITIALIZER)
            memcpy(g->values[v].init->data, t->w[i]->data, og_tensor_nbytes(t->w[i]));
    }
    /* the rest live in the algorithm or initialization graph */
    const char **names = og_malloc(t->a, ((size_t)t->n_weights + 1) * sizeof *names);
    if (!names) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < t->n_weights; i++) names[i] = og_trainer_weight_name(t, i);
    st = og_onnx_training_info_set_initializers(g, names, (const og_tensor *const *)t->w,
                                                t->n_weights);
    og_free(t->a, names);
    if (!st) st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (st) goto fail;
    *out = c;
    return OG_OK;
fail:
    og_model_free(c);
    return st;
}

og_status og_trainer_export_training_model(const og_trainer *t, og_model **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_trainer_export_training_model: out is NULL");
    *out = NULL;
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_export_training_model: NULL trainer");
    if (t->algo) return export_algo(t, out);
    const og_allocator *a = t->a;
    og_model *c = NULL, *tgm = NULL;
    og_graph *alg = NULL;
    og_blob blob = {NULL, 0};
    exporter x;
    memset(&x, 0, sizeof x);
    x.t = t;
    x.a = a;
    x.adam_t = -1;
    og_status st = og_model_copy_graph(t->model, t->model->user_alloc, &c);
    if (!st) st = og_model_copy_graph(og_grad_training_model(t->grad), a, &tgm);
    if (st) goto fail;
    x.main = c->graph;
    x.tg = tgm->graph;
    og_graph_clear_training_info(x.main);
    og_graph_clear_training_info(x.tg);
    x.opset = og_graph_opset(x.main, "");
    if ((st = og_graph_finalize(x.main)) || (st = og_graph_finalize(x.tg))) goto fail;
    if ((st = og_graph_resolve(x.tg, true))) goto fail;
    if (x.tg->n_outputs != 1 + t->n_weights) {
        st = og_error(OG_ERR_INTERNAL, "the training graph has %d outputs, expected %d",
                      x.tg->n_outputs, 1 + t->n_weights);
        goto fail;
    }
    /* the trained values */
    for (int i = 0; i < t->n_weights; i++) {
        const char *name = og_trainer_weight_name(t, i);
        int v = og_graph_find_value(x.main, name);
        if (v < 0 || x.main->values[v].kind != OG_VALUE_INITIALIZER ||
            !same_shape(x.main->values[v].init, t->w[i])) {
            st = og_error(OG_ERR_INTERNAL, "weight '%s' is no initializer of the loss model", name);
            goto fail;
        }
        memcpy(x.main->values[v].init->data, t->w[i]->data, og_tensor_nbytes(t->w[i]));
    }
    size_t nw = (size_t)t->n_weights;
    x.states = og_malloc(a, (nw * (size_t)t->n_slots + 1) * sizeof *x.states);
    x.grads = og_malloc(a, (nw + 1) * sizeof *x.grads);
    x.bindings = og_calloc(a, nw * (size_t)(1 + t->n_slots) + 2, sizeof *x.bindings);
    if (!x.states || !x.grads || !x.bindings) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < t->n_weights; i++) x.grads[i] = x.tg->outputs[1 + i];
    if ((st = seed_to_constant(&x)) || (st = add_state(&x))) goto fail;
    if ((st = add_opset(x.tg, TRAINING_DOMAIN, 1))) goto fail;
    x.b = og_gb_open(x.tg, "og_train");
    if (!x.b) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int lr = -1, lr_cast = -1;
    st = emit_lr(&x, &lr);
    if (!st && t->opt.clip_norm > 0) st = emit_clipping(&x);
    for (int i = 0; i < t->n_weights && !st; i++) st = emit_update(&x, i, lr, &lr_cast);
    if (!st) {
        /* the step count */
        char name[64];
        fresh_name(&x, "og_train_step_new", name, sizeof name);
        int in[2] = {x.step, og_gb_scalar(x.b, 1, OG_INT64)};
        int v = og_gb_op_named(x.b, "Add", 2, in, name);
        if (v >= 0) bind(&x, x.tg->values[x.step].name, v);
    }
    og_status est = og_gb_close(x.b);
    if (!st) st = est;
    if (st) goto fail;
    /* check and type everything the step computes */
    if ((st = og_graph_finalize(x.tg)) || (st = og_graph_resolve(x.tg, true))) {
        st = og_error_prefix(st, "og_trainer_export_training_model: the optimizer step");
        goto fail;
    }
    if ((st = split(&x, &alg))) goto fail;
    if ((st = og_onnx_serialize_training_info(alg, NULL, x.bindings, x.n_bindings, NULL, 0,
                                              x.main->alloc, &blob)))
        goto fail;
    x.main->training_info = og_malloc(x.main->alloc, sizeof *x.main->training_info);
    if (!x.main->training_info) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    x.main->training_info[0] = blob;
    x.main->n_training_info = 1;
    blob.data = NULL;
    if (x.training_ops && (st = add_opset(x.main, TRAINING_DOMAIN, 1))) goto fail;
    if (x.main->ir_version < 7) x.main->ir_version = 7; /* TrainingInfoProto came with IR 7 */
    /* ops of other domains the step uses (onnxgrad's recurrent training ops) keep their
     * imports and the model-local functions that define them */
    for (int i = 0; i < x.tg->n_opsets && !st; i++)
        st = add_opset(x.main, x.tg->opsets[i].domain, x.tg->opsets[i].version);
    for (int i = 0; i < x.tg->n_functions && !st; i++) {
        const og_function *f = &x.tg->functions[i];
        if (og_graph_find_function(x.main, f->domain, f->name, f->overload) < 0)
            st = og_graph_add_function(x.main, f->domain, f->name, f->overload, f->proto.data,
                                       f->proto.size);
    }
    if (st) goto fail;
    if (x.main->n_functions && x.main->ir_version < 10) x.main->ir_version = 10; /* overloads */
    if ((st = og_graph_set_metadata(x.main, "onnxgrad.training_step", x.tg->values[x.step].name)))
        goto fail;
    if ((st = og_graph_finalize(x.main)) || (st = og_graph_resolve(x.main, true))) goto fail;
    if ((st = verify(x.main, a))) goto fail;
    *out = c;
    c = NULL;
fail:
    og_free(x.main ? x.main->alloc : a, blob.data);
    og_graph_free(alg);
    og_free(a, x.states);
    og_free(a, x.grads);
    og_free(a, x.bindings);
    og_model_free(tgm);
    og_model_free(c);
    return st;
}

/* ---- algorithm mode -------------------------------------------------------------------- */

struct og_algo {
    og_model *model; /* main + algorithm graph; the held initializers are inputs */
    og_model *eval;  /* the main graph likewise, when it computes the loss; else NULL */
    og_session *run; /* runs model */
    char **names;    /* held initializers, t->n_weights of them */
    bool *in_eval;   /* held initializer i is an input of the eval graph */
    int n_update;
    const char **want;       /* the loss, then the update_binding values */
    int *target;             /* want[1 + j] updates held initializer target[j] */
    og_tensor **outs;        /* scratch: 1 + n_update */
    const char **bind_names; /* scratch for binding inputs */
    const og_tensor **bind_values;
    int bind_cap;
};

/* What algorithm mode owns, the bound initializers' tensors (t->w[i]) among them. */
static void algo_free(og_trainer *t)
{
    og_algo *al = t->algo;
    const og_allocator *a = t->a;
    for (int i = 0; t->w && i < t->n_weights; i++) og_tensor_free(t->w[i]);
    og_free(a, t->w);
    t->w = NULL;
    if (!al) return;
    for (int i = 0; al->names && i < t->n_weights; i++) og_free(a, al->names[i]);
    og_session_free(t->eval); /* it runs one of the models freed here */
    t->eval = NULL;
    og_session_free(al->run);
    og_model_free(al->model);
    og_model_free(al->eval);
    og_free(a, al->names);
    og_free(a, al->in_eval);
    og_free(a, al->want);
    og_free(a, al->target);
    og_free(a, al->outs);
    og_free(a, al->bind_names);
    og_free(a, al->bind_values);
    og_free(a, al);
    t->algo = NULL;
}

static int held_index(const og_trainer *t, const char *name)
{
    for (int i = 0; name && i < t->n_weights; i++)
        if (strcmp(t->algo->names[i], name) == 0) return i;
    return -1;
}

/* Turn the held initializers of g into graph inputs (their values come with each run). */
static og_status held_to_inputs(const og_trainer *t, og_graph *g, bool *present)
{
    int *inputs = og_realloc(g->alloc, g->inputs, (size_t)g->n_inputs * sizeof *inputs,
                             (size_t)(g->n_inputs + t->n_weights + 1) * sizeof *inputs);
    if (!inputs) return og_error(OG_ERR_NOMEM, "out of memory");
    g->inputs = inputs;
    for (int i = 0; i < t->n_weights; i++) {
        int v = og_graph_find_value(g, t->algo->names[i]);
        if (present) present[i] = v >= 0;
        if (v < 0 || g->values[v].kind != OG_VALUE_INITIALIZER) continue;
        og_value *val = &g->values[v];
        og_tensor_free(val->init);
        val->init = NULL;
        val->known = NULL;
        val->kind = OG_VALUE_INPUT;
        val->has_value_info = true;
        if (!val->is_graph_input) g->inputs[g->n_inputs++] = v;
        val->is_graph_input = true;
        int w = 0;
        for (int k = 0; k < g->n_inits; k++)
            if (g->inits[k] != v) g->inits[w++] = g->inits[k];
        g->n_inits = w;
    }
    return OG_OK;
}

/* finalize, expand Gradient ops, resolve. */
static og_status prepare(og_graph *g)
{
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, false);
    if (!st) st = og_grad_expand_gradient_ops(g);
    if (!st) st = og_graph_resolve(g, true);
    return st;
}

static bool is_float_scalar(const og_value *v)
{
    if (v->dtype != OG_FLOAT && v->dtype != OG_DOUBLE) return false;
    if (v->rank < 0) return false;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] != 1) return false;
    return true;
}

/* The loss: opts->loss, the "onnxgrad.loss" metadata, else the first float scalar output of
 * the algorithm graph that no update binding names. */
static og_status pick_loss(og_trainer *t, const og_training_info *ti, const og_trainer_options *o)
{
    const og_graph *g = t->algo->model->graph;
    const char *want = o && o->loss ? o->loss : og_graph_metadata(t->model->graph, "onnxgrad.loss");
    int v = -1;
    if (want) {
        v = og_graph_find_value(g, want);
        if (v < 0)
            return og_error(OG_ERR_INVALID_ARG,
                            "the loss '%s' is no value of the main or algorithm graph", want);
    } else {
        for (int i = ti->n_main_outputs; i < g->n_outputs && v < 0; i++) {
            const og_value *val = &g->values[g->outputs[i]];
            bool bound = false;
            for (int j = 0; j < ti->n_update && !bound; j++)
                bound = strcmp(ti->update[j].value, val->name) == 0;
            if (!bound && is_float_scalar(val)) v = g->outputs[i];
        }
        if (v < 0)
            return og_error(OG_ERR_INVALID_ARG,
                            "cannot tell which value is the loss: the model has no onnxgrad.loss "
                            "metadata and its algorithm graph no float scalar output outside the "
                            "update bindings; name it in og_trainer_options.loss");
    }
    const og_value *val = &g->values[v];
    if (!is_float_scalar(val))
        return og_error(OG_ERR_SHAPE,
                        "the loss '%s' must be a float or double scalar (or of shape [1]); it is "
                        "%s of rank %d",
                        val->name, og_dtype_name(val->dtype), val->rank);
    t->loss_name = og_strdup(t->a, val->name);
    return t->loss_name ? OG_OK : og_error(OG_ERR_NOMEM, "out of memory");
}

/* The held initializers: update_binding keys, then initialization_binding keys that are not
 * among them; each must be an initializer of the combined graph. */
static og_status collect_held(og_trainer *t, const og_training_info *ti)
{
    og_algo *al = t->algo;
    const og_graph *g = ti->algorithm;
    int n = ti->n_update + ti->n_init;
    al->names = og_calloc(t->a, (size_t)n + 1, sizeof *al->names);
    t->w = og_calloc(t->a, (size_t)n + 1, sizeof *t->w);
    if (!al->names || !t->w) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        bool update = i < ti->n_update;
        const og_kv *kv = update ? &ti->update[i] : &ti->init[i - ti->n_update];
        const char *what = update ? "update_binding" : "initialization_binding";
        int prev = held_index(t, kv->key);
        if (prev >= 0 && update)
            return og_error(OG_ERR_MODEL, "update_binding names '%s' twice", kv->key);
        if (prev >= 0) continue;
        int v = og_graph_find_value(g, kv->key);
        if (v < 0 || g->values[v].kind != OG_VALUE_INITIALIZER)
            return og_error(OG_ERR_MODEL,
                            "%s '%s' -> '%s': '%s' is %s, not an initializer of the main graph or "
                            "of the algorithm graph",
                            what, kv->key, kv->value, kv->key,
                            v < 0                                 ? "no value of the model"
                            : g->values[v].kind == OG_VALUE_INPUT ? "a graph input"
                                                                  : "a computed value");
        og_status st = og_tensor_clone(g->values[v].init, t->a, &t->w[t->n_weights]);
        if (st) return st;
        al->names[t->n_weights] = og_strdup(t->a, kv->key);
        if (!al->names[t->n_weights++]) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    /* the update values: outputs of the algorithm graph (or of the main graph) */
    al->n_update = ti->n_update;
    al->want = og_calloc(t->a, (size_t)ti->n_update + 2, sizeof *al->want);
    al->target = og_calloc(t->a, (size_t)ti->n_update + 1, sizeof *al->target);
    al->outs = og_calloc(t->a, (size_t)ti->n_update + 2, sizeof *al->outs);
    if (!al->want || !al->target || !al->outs) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int j = 0; j < ti->n_update; j++) {
        const og_kv *kv = &ti->update[j];
        int v = og_graph_find_value(g, kv->value);
        if (v < 0 || !g->values[v].is_graph_output)
            return og_error(OG_ERR_MODEL,
                            "update_binding '%s' -> '%s': the algorithm graph has no output '%s'%s",
                            kv->key, kv->value, kv->value,
                            v < 0 ? "" : " (the value exists but is not a graph output)");
        al->target[j] = held_index(t, kv->key);
    }
    return OG_OK;
}

/* Run the initialization graph once and copy its outputs into the held initializers. */
static og_status run_initialization(og_trainer *t, og_training_info *ti,
                                    const og_session_options *so)
{
    og_status st = OG_OK;
    if (ti->n_init == 0) return OG_OK;
    if (!ti->initialization)
        return og_error(OG_ERR_MODEL,
                        "initialization_binding '%s' -> '%s': the initialization graph is empty",
                        ti->init[0].key, ti->init[0].value);
    og_graph *g = ti->initialization;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->values[g->inputs[i]].kind == OG_VALUE_INPUT)
            return og_error(OG_ERR_MODEL,
                            "the initialization graph has input '%s'; ONNX's initialization "
                            "graphs take none",
                            g->values[g->inputs[i]].name);
    for (int j = 0; j < ti->n_init; j++) {
        int v = og_graph_find_value(g, ti->init[j].value);
        if (v < 0 || !g->values[v].is_graph_output)
            return og_error(OG_ERR_MODEL,
                            "initialization_binding '%s' -> '%s': the initialization graph has no "
                            "output '%s'",
                            ti->init[j].key, ti->init[j].value, ti->init[j].value);
    }
    if ((st = prepare(g))) return og_error_prefix(st, "the initialization graph");
    og_model *m = wrap_model(t->a, g);
    if (!m) return og_error(OG_ERR_NOMEM, "out of memory");
    ti->initialization = NULL; /* m owns it now */
    og_session *s = NULL;
    const char **want = og_calloc(t->a, (size_t)ti->n_init, sizeof *want);
    og_tensor **outs = og_calloc(t->a, (size_t)ti->n_init, sizeof *outs);
    if (!want || !outs) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < ti->n_init; j++) want[j] = ti->init[j].value;
    if ((st = og_session_create(m, so, &s))) goto done;
    if ((st = og_session_run_named(s, NULL, NULL, 0, want, ti->n_init, outs))) goto done;
    for (int j = 0; j < ti->n_init && !st; j++) {
        og_tensor *h = t->w[held_index(t, ti->init[j].key)];
        char d1[160], d2[160];
        if (!same_shape(outs[j], h))
            st = og_error(OG_ERR_SHAPE,
                          "initialization_binding '%s' -> '%s': the value is %s, the "
                          "initializer %s",
                          ti->init[j].key, ti->init[j].value,
                          describe(outs[j]->dtype, outs[j]->rank, outs[j]->dims, d1, sizeof d1),
                          describe(h->dtype, h->rank, h->dims, d2, sizeof d2));
    }
    for (int j = 0; j < ti->n_init && !st; j++)
        memcpy(t->w[held_index(t, ti->init[j].key)]->data, outs[j]->data,
               og_tensor_nbytes(outs[j]));
done:
    for (int j = 0; outs && j < ti->n_init; j++) og_tensor_free(outs[j]);
    og_free(t->a, outs);
    og_free(t->a, want);
    og_session_free(s);
    og_model_free(m);
    return st;
}

static const og_trainer_mode algorithm_mode;

og_status og_algo_create(const og_model *m, const og_trainer_options *opts, og_trainer **out)
{
    const og_graph *mg = m->graph;
    if (mg->n_training_info == 0)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_trainer_create: no optimizer options, and the model carries no "
                        "TrainingInfoProto to train with");
    if (mg->n_training_info > 1)
        return og_error(OG_ERR_UNSUPPORTED,
                        "og_trainer_create: the model carries %d TrainingInfoProtos; onnxgrad "
                        "runs models with one",
                        mg->n_training_info);
    og_training_info *ti = NULL;
    og_trainer *t = og_trainer_new(m, opts, &algorithm_mode);
    if (!t) return OG_ERR_NOMEM;
    const og_allocator *a = t->a;
    og_status st = OG_OK;
    og_algo *al = t->algo = og_calloc(a, 1, sizeof *al);
    if (!al) goto nomem;
    if ((st = og_onnx_parse_training_info(mg, 0, a, &ti))) goto fail;
    if (ti->n_update == 0) {
        st = og_error(OG_ERR_MODEL,
                      "the model's TrainingInfoProto has no update_binding: its algorithm "
                      "changes nothing");
        goto fail;
    }
    if ((st = collect_held(t, ti))) goto fail;
    /* the combined graph, the held initializers as inputs */
    if ((st = held_to_inputs(t, ti->algorithm, NULL))) goto fail;
    if ((st = prepare(ti->algorithm))) {
        st = og_error_prefix(st, "the main and algorithm graphs combined");
        goto fail;
    }
    if (!(al->model = wrap_model(a, ti->algorithm))) goto nomem;
    ti->algorithm = NULL;
    t->step_model = al->model;
    if ((st = pick_loss(t, ti, opts))) goto fail;
    /* names owned by the combined graph, which lives as long as the trainer */
    const og_graph *cg = al->model->graph;
    al->want[0] = cg->values[og_graph_find_value(cg, t->loss_name)].name;
    for (int j = 0; j < ti->n_update; j++)
        al->want[1 + j] = cg->values[og_graph_find_value(cg, ti->update[j].value)].name;
    /* evaluation runs the main graph alone when it computes the loss */
    al->in_eval = og_calloc(a, (size_t)t->n_weights + 1, sizeof *al->in_eval);
    if (!al->in_eval) goto nomem;
    if (og_graph_find_value(mg, t->loss_name) >= 0) {
        if ((st = og_model_copy_graph(m, a, &al->eval))) goto fail;
        og_graph_clear_training_info(al->eval->graph);
        if ((st = held_to_inputs(t, al->eval->graph, al->in_eval)) ||
            (st = prepare(al->eval->graph)))
            goto fail;
    } else {
        for (int i = 0; i < t->n_weights; i++) al->in_eval[i] = true;
    }
    og_session_options so = {0};
    so.threads = t->threads;
    so.allocator = a;
    so.log = t->log;
    so.log_user = t->log_user;
    so.max_memory = t->max_memory;
    if ((st = og_session_create(al->model, &so, &al->run))) goto fail;
    if ((st = run_initialization(t, ti, &so))) goto fail;
    /* an export of onnxgrad's says which initializer counts the steps */
    int sv = held_index(t, og_graph_metadata(mg, "onnxgrad.training_step"));
    if (sv >= 0 && t->w[sv]->dtype == OG_INT64 && t->w[sv]->numel == 1)
        t->step = *(const int64_t *)t->w[sv]->data;
    og_training_info_free(ti);
    *out = t;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory");
fail:
    og_training_info_free(ti);
    og_trainer_free(t);
    return st;
}

/* Bind the caller's inputs, then every held initializer the graph takes that the caller
 * did not give; n_bound receives the count. */
static og_status bind_inputs(og_trainer *t, const char *const *names, const og_tensor *const *in,
                             int n, const bool *wanted, int *n_bound)
{
    og_algo *al = t->algo;
    int need = n + t->n_weights + 1;
    if (need > al->bind_cap) {
        og_free(t->a, al->bind_names);
        og_free(t->a, al->bind_values);
        al->bind_names = og_calloc(t->a, (size_t)need, sizeof *al->bind_names);
        al->bind_values = og_calloc(t->a, (size_t)need, sizeof *al->bind_values);
        al->bind_cap = al->bind_names && al->bind_values ? need : 0;
        if (!al->bind_cap) return og_error(OG_ERR_NOMEM, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        al->bind_names[k] = names[i];
        al->bind_values[k++] = in[i];
    }
    for (int i = 0; i < t->n_weights; i++) {
        bool given = false;
        for (int j = 0; j < n && !given; j++) given = strcmp(names[j], al->names[i]) == 0;
        if (given || (wanted && !wanted[i])) continue;
        al->bind_names[k] = al->names[i];
        al->bind_values[k++] = t->w[i];
    }
    *n_bound = k;
    return OG_OK;
}

static og_status algo_step(og_trainer *t, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs, double *loss)
{
    og_algo *al = t->algo;
    int k = 0, n_out = 1 + al->n_update;
    og_status st = bind_inputs(t, input_names, inputs, n_inputs, NULL, &k);
    if (st) return st;
    st = og_session_run_named(al->run, al->bind_names, al->bind_values, k, al->want, n_out,
                              al->outs);
    if (st) return st;
    double value = og_trainer_scalar(al->outs[0]);
    if (loss) *loss = value;
    if ((st = og_trainer_check_loss(t, value, "initializers"))) goto done;
    for (int j = 0; j < al->n_update && !st; j++) {
        const og_tensor *o = al->outs[1 + j], *h = t->w[al->target[j]];
        char d1[160], d2[160];
        if (!same_shape(o, h))
            st = og_error(OG_ERR_SHAPE,
                          "step %lld: update_binding '%s' -> '%s': the new value is %s, the "
                          "initializer %s; nothing was updated",
                          (long long)t->step + 1, al->names[al->target[j]], al->want[1 + j],
                          describe(o->dtype, o->rank, o->dims, d1, sizeof d1),
                          describe(h->dtype, h->rank, h->dims, d2, sizeof d2));
        else if (!all_finite(o))
            st = og_error(OG_ERR_RUNTIME,
                          "step %lld: the new value of '%s' ('%s') holds NaN or Inf (loss %g); "
                          "nothing was updated",
                          (long long)t->step + 1, al->names[al->target[j]], al->want[1 + j], value);
    }
    if (st) goto done;
    for (int j = 0; j < al->n_update; j++)
        memcpy(t->w[al->target[j]]->data, al->outs[1 + j]->data, og_tensor_nbytes(al->outs[1 + j]));
    t->step++;
done:
    for (int j = 0; j < n_out; j++) {
        og_tensor_free(al->outs[j]);
        al->outs[j] = NULL;
    }
    return st;
}

static const og_model *algo_eval_model(const og_trainer *t)
{
    return t->algo->eval ? t->algo->eval : t->algo->model;
}

static og_status algo_bind_eval(og_trainer *t, const char *const *input_names,
                                const og_tensor *const *inputs, int n_inputs,
                                const char *const **names, const og_tensor *const **values,
                                int *n_bound)
{
    og_status st = bind_inputs(t, input_names, inputs, n_inputs, t->algo->in_eval, n_bound);
    if (st) return st;
    *names = t->algo->bind_names;
    *values = t->algo->bind_values;
    return OG_OK;
}

static const char *algo_weight_name(const og_trainer *t, int i) { return t->algo->names[i]; }

static og_status unknown_weight(const og_trainer *t, const char *fn, const char *name)
{
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < t->n_weights && used < sizeof list - 1; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "",
                                 t->algo->names[i]);
    return og_error(OG_ERR_INVALID_ARG,
                    "%s: '%s' is not an initializer the model's TrainingInfoProto binds (%s)", fn,
                    name ? name : "(null)", list);
}

static og_status algo_get_weight(const og_trainer *t, const char *name, const og_tensor **value)
{
    int i = held_index(t, name);
    if (!value) return og_error(OG_ERR_INVALID_ARG, "og_trainer_get_weight: value is NULL");
    if (i < 0) return unknown_weight(t, "og_trainer_get_weight", name);
    *value = t->w[i];
    return OG_OK;
}

static og_status algo_set_weight(og_trainer *t, const char *name, const og_tensor *value)
{
    int i = held_index(t, name);
    if (!value) return og_error(OG_ERR_INVALID_ARG, "og_trainer_set_weight: value is NULL");
    if (i < 0) return unknown_weight(t, "og_trainer_set_weight", name);
    if (!same_shape(value, t->w[i])) {
        char d1[160], d2[160];
        return og_error(value->dtype != t->w[i]->dtype ? OG_ERR_TYPE : OG_ERR_SHAPE,
                        "og_trainer_set_weight: '%s' is %s, the value %s", name,
                        describe(t->w[i]->dtype, t->w[i]->rank, t->w[i]->dims, d1, sizeof d1),
                        describe(value->dtype, value->rank, value->dims, d2, sizeof d2));
    }
    memcpy(t->w[i]->data, value->data, og_tensor_nbytes(value));
    return OG_OK;
}

static const og_trainer_mode algorithm_mode = {algo_step,        algo_eval_model, algo_bind_eval,
                                               algo_weight_name, algo_get_weight, algo_set_weight,
                                               algo_free};
