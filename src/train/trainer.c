/* trainer.c: og_trainer_create, and the gradient mode of a trainer: a gradient object of a
 * loss, an optimizer and its state (the mode's table is at the end). */
#include <math.h>
#include <string.h>

#include "train/trainer.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Threads for the optimizer's updates: the trainer's count, 0 meaning every core. */
static int update_threads(const og_trainer *t)
{
    if (t->threads > 0) return t->threads;
#ifdef _OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

/* The loss output's name: opts, metadata, else output 0; it must be a float scalar. */
static og_status pick_loss(const og_model *m, const og_trainer_options *opts, const char **name,
                           og_dtype *dtype)
{
    const og_graph *g = m->graph;
    const char *want = opts && opts->loss ? opts->loss : og_graph_metadata(g, "onnxgrad.loss");
    int v = -1;
    if (g->n_outputs == 0) return og_error(OG_ERR_INVALID_ARG, "the loss model has no output");
    if (!want) v = g->outputs[0];
    for (int i = 0; want && i < g->n_outputs && v < 0; i++)
        if (strcmp(g->values[g->outputs[i]].name, want) == 0) v = g->outputs[i];
    if (v < 0) return og_error(OG_ERR_INVALID_ARG, "the loss model has no output '%s'", want);
    const og_value *val = &g->values[v];
    if (val->dtype != OG_FLOAT && val->dtype != OG_DOUBLE)
        return og_error(OG_ERR_TYPE, "the loss '%s' is %s; it must be float or double", val->name,
                        og_dtype_name(val->dtype));
    bool scalar = val->rank >= 0;
    for (int d = 0; scalar && d < val->rank; d++) scalar = val->dims[d] == 1;
    if (!scalar)
        return og_error(OG_ERR_SHAPE,
                        "the loss '%s' must be a scalar (or of shape [1]); its shape is %s",
                        val->name, val->rank < 0 ? "unknown" : "not all ones");
    *name = val->name;
    *dtype = val->dtype;
    return OG_OK;
}

static og_status make_seed(og_trainer *t, og_dtype dtype)
{
    const og_graph *g = t->model->graph;
    const og_value *v = &g->values[og_graph_find_value(g, t->loss_name)];
    int64_t dims[OG_MAX_RANK];
    for (int d = 0; d < v->rank; d++) dims[d] = 1;
    og_status st = og_tensor_create(dtype, v->rank, dims, t->a, &t->seed);
    if (st) return st;
    if (dtype == OG_FLOAT)
        *(float *)t->seed->data = 1.0f;
    else
        *(double *)t->seed->data = 1.0;
    return OG_OK;
}

static const og_trainer_mode gradient_mode;

/* Find the BatchNormalization nodes (opset >= 14, training_mode 1, outputs running_mean and
 * running_var present) whose mean and var are initializers that are not trained. */
static og_status find_bn_stats(og_trainer *t)
{
    const og_graph *g = t->model->graph;
    const og_allocator *a = t->a;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += strcmp(g->nodes[i].op_type, "BatchNormalization") == 0;
    if (!cap) return OG_OK;
    t->bn = og_calloc(a, (size_t)cap, sizeof *t->bn);
    t->bn_extra = og_calloc(a, 3 * (size_t)cap, sizeof *t->bn_extra);
    t->bn_vals = og_calloc(a, 3 * (size_t)cap, sizeof *t->bn_vals);
    if (!t->bn || !t->bn_extra || !t->bn_vals) return og_error(OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        const og_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "BatchNormalization") != 0 || n->domain[0] || n->n_in < 5 ||
            n->n_out < 3 || n->out[1] < 0 || n->out[2] < 0 || n->in[3] < 0 || n->in[4] < 0)
            continue;
        const og_attr *tm = og_node_attr(n, "training_mode");
        if (!tm || tm->i == 0) continue;
        const og_value *mv = &g->values[n->in[3]], *vv = &g->values[n->in[4]];
        if (mv->kind != OG_VALUE_INITIALIZER || vv->kind != OG_VALUE_INITIALIZER) continue;
        bool trained = false;
        for (int w = 0; w < t->n_weights && !trained; w++)
            trained = strcmp(og_grad_weight_name(t->grad, w), mv->name) == 0 ||
                      strcmp(og_grad_weight_name(t->grad, w), vv->name) == 0;
        if (trained) continue; /* named as weights: the optimizer owns them */
        og_bn_stat *s = &t->bn[t->n_bn];
        const og_attr *mom = og_node_attr(n, "momentum");
        s->mean = mv->name;
        s->var = vv->name;
        s->momentum = mom ? mom->f : 0.9;
        s->tm = og_grad_state_tensor(t->grad, mv->name, false);
        s->tv = og_grad_state_tensor(t->grad, vv->name, false);
        s->em = og_grad_state_tensor(t->grad, mv->name, true);
        s->ev = og_grad_state_tensor(t->grad, vv->name, true);
        if (!s->tm || !s->tv) continue;
        t->bn_extra[3 * t->n_bn] = g->values[n->out[1]].name;
        t->bn_extra[3 * t->n_bn + 1] = g->values[n->out[2]].name;
        t->bn_extra[3 * t->n_bn + 2] = g->values[n->in[0]].name;
        t->n_bn++;
    }
    return OG_OK;
}

static void set_f64(og_tensor *t, int64_t i, double v)
{
    if (t->dtype == OG_FLOAT)
        ((float *)t->data)[i] = (float)v;
    else if (t->dtype == OG_DOUBLE)
        ((double *)t->data)[i] = v;
}

/* After a step: the running statistics as PyTorch updates them.  The node's outputs hold
 *   mean' = mean·m + μ_B·(1 − m),   var'_onnx = var·m + σ²_B·(1 − m)
 * with ONNX's biased batch variance σ²_B; PyTorch's running var takes the unbiased one,
 *   var' = var·m + σ²_B·n / (n − 1)·(1 − m),   n = the elements per channel (X's size / C),
 * so σ²_B = (var'_onnx − var·m) / (1 − m) is recovered and rescaled. */
static void update_bn_stats(og_trainer *t)
{
    for (int k = 0; k < t->n_bn; k++) {
        og_bn_stat *s = &t->bn[k];
        og_tensor *om = t->bn_vals[3 * k], *ov = t->bn_vals[3 * k + 1], *x = t->bn_vals[3 * k + 2];
        if (!om || !ov || !x || om->numel != s->tm->numel || ov->numel != s->tv->numel) continue;
        int64_t c = s->tm->numel;
        double n = c > 0 ? (double)x->numel / (double)c : 0, m = s->momentum;
        for (int64_t i = 0; i < c; i++) {
            double mean = og_tensor_get_f64(om, i), v_onnx = og_tensor_get_f64(ov, i);
            double v_old = og_tensor_get_f64(s->tv, i), v = v_onnx;
            if (m < 1 && n > 1) {
                double batch = (v_onnx - v_old * m) / (1 - m);
                v = v_old * m + batch * n / (n - 1) * (1 - m);
            }
            set_f64(s->tm, i, mean);
            set_f64(s->tv, i, v);
            if (s->em && s->em->numel == c) set_f64(s->em, i, mean);
            if (s->ev && s->ev->numel == c) set_f64(s->ev, i, v);
        }
    }
}

og_status og_trainer_create(const og_model *loss_model, const og_optimizer_options *optim,
                            const og_trainer_options *opts, og_trainer **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_trainer_create: out is NULL");
    *out = NULL;
    if (!loss_model) return og_error(OG_ERR_INVALID_ARG, "og_trainer_create: model is NULL");
    if (!optim) return og_algo_create(loss_model, opts, out);
    og_status st = og_optim_check(optim);
    if (st) return st;
    const char *loss = NULL;
    og_dtype ldt = OG_UNDEFINED;
    if ((st = pick_loss(loss_model, opts, &loss, &ldt))) return st;
    og_trainer *t = og_trainer_new(loss_model, opts, &gradient_mode);
    if (!t) return OG_ERR_NOMEM;
    const og_allocator *a = t->a;
    t->opt = *optim;
    t->loss_name = og_strdup(a, loss);
    if (!t->loss_name) goto nomem;
    static const char *const no_inputs[1] = {NULL};
    og_grad_options go = {0};
    go.weights = opts ? opts->weights : NULL;
    go.n_weights = opts ? opts->n_weights : 0;
    go.inputs = no_inputs;
    go.n_inputs = 0;
    go.outputs = (const char *const *)&t->loss_name;
    go.n_outputs = 1;
    go.threads = t->threads;
    go.allocator = a;
    go.log = t->log;
    go.log_user = t->log_user;
    go.max_memory = t->max_memory;
    if ((st = og_grad_create(loss_model, &go, &t->grad))) goto fail;
    t->n_weights = og_grad_weight_count(t->grad);
    if (t->n_weights == 0) {
        st = og_error(OG_ERR_INVALID_ARG, "the loss model has no weight to train");
        goto fail;
    }
    t->n_slots = og_optim_slot_count(&t->opt);
    t->w = og_calloc(a, (size_t)t->n_weights, sizeof *t->w);
    t->grads = og_calloc(a, (size_t)t->n_weights, sizeof *t->grads);
    t->gptr = og_calloc(a, (size_t)t->n_weights, sizeof *t->gptr);
    t->slots = og_calloc(a, (size_t)t->n_weights * (size_t)t->n_slots + 1, sizeof *t->slots);
    if (!t->w || !t->grads || !t->gptr || !t->slots) goto nomem;
    for (int i = 0; i < t->n_weights; i++) {
        const og_tensor *w = NULL;
        if ((st = og_grad_get_weight(t->grad, og_grad_weight_name(t->grad, i), &w))) goto fail;
        if (w->dtype != OG_FLOAT && w->dtype != OG_DOUBLE) {
            st = og_error(OG_ERR_UNSUPPORTED,
                          "weight '%s' is %s: the optimizers update float "
                          "and double weights",
                          og_grad_weight_name(t->grad, i), og_dtype_name(w->dtype));
            goto fail;
        }
        t->w[i] = (og_tensor *)w;
        for (int k = 0; k < t->n_slots; k++) {
            og_tensor **s = &t->slots[i * t->n_slots + k];
            if ((st = og_tensor_create(w->dtype, w->rank, w->dims, a, s))) goto fail;
            double init = og_optim_slot_init(&t->opt, k);
            for (int64_t j = 0; init != 0 && j < w->numel; j++) {
                if (w->dtype == OG_FLOAT)
                    ((float *)(*s)->data)[j] = (float)init;
                else
                    ((double *)(*s)->data)[j] = init;
            }
        }
    }
    if ((st = make_seed(t, ldt))) goto fail;
    if ((st = find_bn_stats(t))) goto fail;
    *out = t;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory");
fail:
    og_trainer_free(t);
    return st;
}

/* What gradient mode owns (the eval session and scratch are the core's). */
static void grad_free(og_trainer *t)
{
    const og_allocator *a = t->a;
    for (int i = 0; t->slots && i < t->n_weights * t->n_slots; i++) og_tensor_free(t->slots[i]);
    og_free(a, t->slots);
    og_free(a, t->w);
    og_free(a, t->grads);
    og_free(a, t->gptr);
    for (int k = 0; t->bn_vals && k < 3 * t->n_bn; k++) og_tensor_free(t->bn_vals[k]);
    og_free(a, t->bn);
    og_free(a, t->bn_extra);
    og_free(a, t->bn_vals);
    og_tensor_free(t->seed);
    og_session_free(t->eval); /* it runs the gradient object's eval model */
    t->eval = NULL;
    og_grad_free(t->grad);
}

/* Gradient clipping's factor for gradients whose squares sum to sumsq (1 without clipping). */
double og_trainer_gscale(const og_trainer *t, double sumsq)
{
    if (!(t->opt.clip_norm > 0)) return 1.0;
    double norm = sqrt(sumsq);
    return norm > t->opt.clip_norm ? t->opt.clip_norm / (norm + 1e-6) : 1.0;
}

void og_trainer_end_update(og_trainer *t)
{
    update_bn_stats(t); /* from the last run's bn_vals (trainer.h) */
    t->step++;
}

og_status og_trainer_update(og_trainer *t, void *const *grads, double loss)
{
    double sumsq = 0;
    int bad = -1;
    const bool clip = t->opt.clip_norm > 0;
    for (int i = 0; i < t->n_weights && bad < 0; i++) {
        const og_tensor *w = t->w[i];
        /* the norm only when clipping needs it; else the (cheaper) finite test alone */
        if (clip) {
            double s = og_optim_sumsq(w->dtype, grads[i], w->numel, update_threads(t),
                                      og_exec_workers(t->grad->session));
            if (!isfinite(s)) bad = i;
            sumsq += s;
        } else if (!og_optim_finite(w->dtype, grads[i], w->numel)) {
            bad = i;
        }
    }
    if (bad >= 0)
        return og_error(OG_ERR_RUNTIME,
                        "step %lld: the gradient of weight '%s' holds NaN or Inf (loss %g); the "
                        "weights were not updated",
                        (long long)t->step + 1, og_grad_weight_name(t->grad, bad), loss);
    double gscale = og_trainer_gscale(t, sumsq);
    double lr = og_optimizer_lr(&t->opt, t->step);
    for (int i = 0; i < t->n_weights; i++) {
        void *slots[2] = {NULL, NULL};
        for (int k = 0; k < t->n_slots; k++) slots[k] = t->slots[i * t->n_slots + k]->data;
        og_optim_update(&t->opt, t->step, lr, gscale, t->w[i]->dtype, t->w[i]->data, grads[i],
                        slots, t->w[i]->numel, update_threads(t),
                        og_exec_workers(t->grad->session));
    }
    og_trainer_end_update(t);
    return OG_OK;
}

int og_trainer_update_threads(const og_trainer *t) { return update_threads(t); }

static og_status grad_step(og_trainer *t, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs, double *loss)
{
    og_tensor *out = NULL;
    const og_tensor *seeds[1] = {t->seed};
    og_status st = og_session_set_rng(t->grad->session, t->dropout_seed, (uint64_t)t->step);
    for (int k = 0; k < 3 * t->n_bn; k++) og_tensor_free(t->bn_vals[k]), t->bn_vals[k] = NULL;
    if (!st)
        st = og_grad_run_with(t->grad, input_names, inputs, n_inputs, seeds, &out, t->grads,
                              t->bn_extra, 3 * t->n_bn, t->bn_vals);
    if (st) return st;
    double value = og_trainer_scalar(out);
    if (loss) *loss = value;
    if (!(st = og_trainer_check_loss(t, value, "weights"))) {
        for (int i = 0; i < t->n_weights; i++) t->gptr[i] = t->grads[i]->data;
        st = og_trainer_update(t, t->gptr, value);
    }
    for (int k = 0; t->bn_vals && k < 3 * t->n_bn; k++) {
        og_tensor_free(t->bn_vals[k]);
        t->bn_vals[k] = NULL;
    }
    og_tensor_free(out);
    for (int i = 0; i < t->n_weights; i++) {
        og_tensor_free(t->grads[i]);
        t->grads[i] = NULL;
    }
    return st;
}

static const og_model *grad_eval_model(const og_trainer *t) { return og_grad_eval_model(t->grad); }

/* The caller's inputs, then every weight the caller did not give. */
static og_status grad_bind_eval(og_trainer *t, const char *const *input_names,
                                const og_tensor *const *inputs, int n_inputs,
                                const char *const **names, const og_tensor *const **values,
                                int *n_bound)
{
    og_status st = og_trainer_scratch(t, n_inputs + t->n_weights);
    if (st) return st;
    int n = 0;
    for (int i = 0; i < n_inputs; i++) {
        t->names[n] = input_names[i];
        t->values[n++] = inputs[i];
    }
    for (int i = 0; i < t->n_weights; i++) {
        bool given = false;
        for (int j = 0; j < n_inputs && !given; j++)
            given = strcmp(input_names[j], og_grad_weight_name(t->grad, i)) == 0;
        if (given) continue;
        t->names[n] = og_grad_weight_name(t->grad, i);
        t->values[n++] = t->w[i];
    }
    *names = t->names;
    *values = t->values;
    *n_bound = n;
    return OG_OK;
}

static const char *grad_weight_name(const og_trainer *t, int i)
{
    return og_grad_weight_name(t->grad, i);
}

static og_status grad_get_weight(const og_trainer *t, const char *name, const og_tensor **value)
{
    return og_grad_get_weight(t->grad, name, value);
}

static og_status grad_set_weight(og_trainer *t, const char *name, const og_tensor *value)
{
    return og_grad_set_weight(t->grad, name, value);
}

static const og_trainer_mode gradient_mode = {grad_step,        grad_eval_model, grad_bind_eval,
                                              grad_weight_name, grad_get_weight, grad_set_weight,
                                              grad_free};
