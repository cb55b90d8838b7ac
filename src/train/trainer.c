/* trainer.c: og_trainer: a gradient object of a loss, an optimizer and its state. */
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

double og_trainer_scalar(const og_tensor *t)
{
    if (!t || t->numel < 1) return NAN;
    switch (t->dtype) {
    case OG_FLOAT: return *(const float *)t->data;
    case OG_DOUBLE: return *(const double *)t->data;
    case OG_FLOAT16: return og_half_to_float(*(const uint16_t *)t->data);
    default: return NAN;
    }
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
    const og_allocator *a =
        og_alloc_or_default(opts && opts->allocator ? opts->allocator : loss_model->user_alloc);
    og_trainer *t = og_calloc(a, 1, sizeof *t);
    if (!t) return og_error(OG_ERR_NOMEM, "out of memory");
    t->a = a;
    t->model = loss_model;
    t->opt = *optim;
    t->threads = opts ? opts->threads : 0;
    t->log = opts ? opts->log : NULL;
    t->log_user = opts ? opts->log_user : NULL;
    og_rng_seed(&t->rng, opts ? opts->seed : 0);
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
    if ((st = og_grad_create(loss_model, &go, &t->grad))) goto fail;
    t->n_weights = og_grad_weight_count(t->grad);
    if (t->n_weights == 0) {
        st = og_error(OG_ERR_INVALID_ARG, "the loss model has no weight to train");
        goto fail;
    }
    t->n_slots = og_optim_slot_count(&t->opt);
    t->w = og_calloc(a, (size_t)t->n_weights, sizeof *t->w);
    t->grads = og_calloc(a, (size_t)t->n_weights, sizeof *t->grads);
    t->slots = og_calloc(a, (size_t)t->n_weights * (size_t)t->n_slots + 1, sizeof *t->slots);
    if (!t->w || !t->grads || !t->slots) goto nomem;
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
    *out = t;
    return OG_OK;
nomem:
    st = og_error(OG_ERR_NOMEM, "out of memory");
fail:
    og_trainer_free(t);
    return st;
}

void og_trainer_free(og_trainer *t)
{
    if (!t) return;
    const og_allocator *a = t->a;
    og_algo_free(t);
    for (int i = 0; t->slots && i < t->n_weights * t->n_slots; i++) og_tensor_free(t->slots[i]);
    og_free(a, t->slots);
    og_free(a, t->w);
    og_free(a, t->grads);
    og_tensor_free(t->seed);
    og_session_free(t->eval);
    og_grad_free(t->grad);
    og_free(a, t->loss_name);
    og_free(a, t->names);
    og_free(a, t->values);
    og_free(a, t);
}

/* The scratch arrays hold n entries. */
static og_status scratch(og_trainer *t, int n)
{
    if (n <= t->scratch_cap) return OG_OK;
    og_free(t->a, t->names);
    og_free(t->a, t->values);
    t->names = og_calloc(t->a, (size_t)n, sizeof *t->names);
    t->values = og_calloc(t->a, (size_t)n, sizeof *t->values);
    t->scratch_cap = t->names && t->values ? n : 0;
    return t->scratch_cap ? OG_OK : og_error(OG_ERR_NOMEM, "out of memory");
}

static og_status check_args(const char *fn, const char *const *names, const og_tensor *const *in,
                            int n)
{
    if (n < 0 || (n > 0 && (!names || !in)))
        return og_error(OG_ERR_INVALID_ARG, "%s: bad input arrays", fn);
    for (int i = 0; i < n; i++)
        if (!names[i] || !in[i]) return og_error(OG_ERR_INVALID_ARG, "%s: input %d is NULL", fn, i);
    return OG_OK;
}

og_status og_trainer_step(og_trainer *t, const char *const *input_names,
                          const og_tensor *const *inputs, int n_inputs, double *loss)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_step: NULL trainer");
    og_status st = check_args("og_trainer_step", input_names, inputs, n_inputs);
    if (st) return st;
    if (t->algo) return og_algo_step(t, input_names, inputs, n_inputs, loss);
    og_tensor *out = NULL;
    const og_tensor *seeds[1] = {t->seed};
    st = og_grad_run(t->grad, input_names, inputs, n_inputs, seeds, &out, t->grads);
    if (st) return st;
    double value = og_trainer_scalar(out);
    if (loss) *loss = value;
    double sumsq = 0;
    int bad = -1;
    if (!isfinite(value)) {
        st = og_error(OG_ERR_RUNTIME, "step %lld: the loss is %g; the weights were not updated",
                      (long long)t->step + 1, value);
        goto done;
    }
    for (int i = 0; i < t->n_weights; i++) {
        double s = og_optim_sumsq(t->grads[i]->dtype, t->grads[i]->data, t->grads[i]->numel,
                                  update_threads(t));
        if (!isfinite(s) && bad < 0) bad = i;
        sumsq += s;
    }
    if (bad >= 0) {
        st = og_error(OG_ERR_RUNTIME,
                      "step %lld: the gradient of weight '%s' holds NaN or Inf (loss %g); the "
                      "weights were not updated",
                      (long long)t->step + 1, og_grad_weight_name(t->grad, bad), value);
        goto done;
    }
    double gscale = 1.0;
    if (t->opt.clip_norm > 0) {
        double norm = sqrt(sumsq);
        if (norm > t->opt.clip_norm) gscale = t->opt.clip_norm / (norm + 1e-6);
    }
    double lr = og_optimizer_lr(&t->opt, t->step);
    for (int i = 0; i < t->n_weights; i++) {
        void *slots[2] = {NULL, NULL};
        for (int k = 0; k < t->n_slots; k++) slots[k] = t->slots[i * t->n_slots + k]->data;
        og_optim_update(&t->opt, t->step, lr, gscale, t->w[i]->dtype, t->w[i]->data,
                        t->grads[i]->data, slots, t->w[i]->numel, update_threads(t));
    }
    t->step++;
done:
    og_tensor_free(out);
    for (int i = 0; i < t->n_weights; i++) {
        og_tensor_free(t->grads[i]);
        t->grads[i] = NULL;
    }
    return st;
}

og_status og_trainer_run_eval(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, const char *output,
                              og_tensor **out)
{
    og_status st;
    if (t->algo) return og_algo_run_eval(t, input_names, inputs, n_inputs, output, out);
    if (!t->eval) {
        og_session_options so = {0};
        so.threads = t->threads;
        so.allocator = t->a;
        so.log = t->log;
        so.log_user = t->log_user;
        if ((st = og_session_create(og_grad_eval_model(t->grad), &so, &t->eval))) return st;
    }
    if ((st = scratch(t, n_inputs + t->n_weights))) return st;
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
    return og_session_run_named(t->eval, t->names, t->values, n, &output, 1, out);
}

og_status og_trainer_evaluate(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, double *loss)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_evaluate: NULL trainer");
    og_status st = check_args("og_trainer_evaluate", input_names, inputs, n_inputs);
    if (st) return st;
    og_tensor *out = NULL;
    st = og_trainer_run_eval(t, input_names, inputs, n_inputs, t->loss_name, &out);
    if (!st && loss) *loss = og_trainer_scalar(out);
    og_tensor_free(out);
    return st;
}

og_status og_trainer_predict(og_trainer *t, const char *const *input_names,
                             const og_tensor *const *inputs, int n_inputs, const char *output,
                             og_tensor **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_trainer_predict: out is NULL");
    *out = NULL;
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_predict: NULL trainer");
    og_status st = check_args("og_trainer_predict", input_names, inputs, n_inputs);
    if (st) return st;
    const og_graph *g = t->model->graph;
    if (!output) {
        for (int i = 0; i < g->n_outputs && !output; i++)
            if (strcmp(g->values[g->outputs[i]].name, t->loss_name) != 0)
                output = g->values[g->outputs[i]].name;
        if (!output)
            return og_error(OG_ERR_INVALID_ARG, "the model has no output besides the loss");
    }
    return og_trainer_run_eval(t, input_names, inputs, n_inputs, output, out);
}

int64_t og_trainer_step_count(const og_trainer *t) { return t ? t->step : 0; }
double og_trainer_lr(const og_trainer *t)
{
    if (!t) return 0;
    return t->algo ? NAN : og_optimizer_lr(&t->opt, t->step);
}
int og_trainer_weight_count(const og_trainer *t) { return t ? t->n_weights : 0; }

const char *og_trainer_weight_name(const og_trainer *t, int i)
{
    if (!t || i < 0 || i >= t->n_weights) return NULL;
    return t->algo ? og_algo_weight_name(t, i) : og_grad_weight_name(t->grad, i);
}

og_status og_trainer_get_weight(const og_trainer *t, const char *name, const og_tensor **value)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_get_weight: NULL trainer");
    if (t->algo) return og_algo_get_weight(t, name, value);
    return og_grad_get_weight(t->grad, name, value);
}

og_status og_trainer_set_weight(og_trainer *t, const char *name, const og_tensor *value)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_set_weight: NULL trainer");
    if (t->algo) return og_algo_set_weight(t, name, value);
    return og_grad_set_weight(t->grad, name, value);
}
