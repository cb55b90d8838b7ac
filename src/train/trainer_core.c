/* trainer_core.c: the public og_trainer_* functions, the same for both modes: they check
 * their arguments and call the mode's table (trainer.h). */
#include <math.h>
#include <string.h>

#include "api/api.h"
#include "train/trainer.h"

og_trainer *og_trainer_new(const og_model *m, const og_trainer_options *opts,
                           const og_trainer_mode *mode)
{
    const og_allocator *a =
        og_alloc_or_default(opts && opts->allocator ? opts->allocator : m->user_alloc);
    og_trainer *t = og_calloc(a, 1, sizeof *t);
    if (!t) {
        og_error(OG_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->a = a;
    t->model = m;
    t->step_model = m;
    t->mode = mode;
    t->threads = opts ? opts->threads : 0;
    t->max_memory = opts ? opts->max_memory : 0;
    t->log = opts ? opts->log : NULL;
    t->log_user = opts ? opts->log_user : NULL;
    og_rng_seed(&t->rng, opts ? opts->seed : 0);
    uint64_t x = (opts ? opts->seed : 0) ^ 0x6A09E667F3BCC908ull; /* a stream apart */
    t->dropout_seed = og_splitmix64(&x);
    return t;
}

void og_trainer_free(og_trainer *t)
{
    if (!t) return;
    const og_allocator *a = t->a;
    og_dp_free(t);
    t->mode->free(t);
    og_session_free(t->eval);
    og_free(a, t->loss_name);
    og_free(a, t->names);
    og_free(a, t->values);
    og_free(a, t);
}

og_status og_trainer_enter(og_trainer *t, const char *fn)
{
    uintptr_t me = (uintptr_t)og_last_error(), none = 0;
    if (atomic_compare_exchange_strong(&t->owner, &none, me)) {
        t->depth = 1;
        return OG_OK;
    }
    if (none == me) { /* this thread is inside already */
        t->depth++;
        return OG_OK;
    }
    return og_error(OG_ERR_BUSY,
                    "%s: the trainer is running a call in another thread (one thread at a time "
                    "per trainer)",
                    fn);
}

void og_trainer_leave(og_trainer *t)
{
    if (--t->depth == 0) atomic_store(&t->owner, 0);
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

og_status og_trainer_check_loss(const og_trainer *t, double loss, const char *what)
{
    if (isfinite(loss)) return OG_OK;
    return og_error(OG_ERR_RUNTIME, "step %lld: the loss is %g; the %s were not updated",
                    (long long)t->step + 1, loss, what);
}

og_status og_trainer_scratch(og_trainer *t, int n)
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
    if (t->dp) /* collective: even bad arguments must join the reductions */
        return og_trainer_step_shard(t, input_names, inputs, n_inputs, 1.0 / og_dp_size(t), loss);
    og_status st = check_args("og_trainer_step", input_names, inputs, n_inputs);
    if (st || (st = og_trainer_enter(t, "og_trainer_step"))) return st;
    st = t->mode->step(t, input_names, inputs, n_inputs, loss);
    og_trainer_leave(t);
    return st;
}

og_status og_trainer_run_eval(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, const char *output,
                              og_tensor **out)
{
    og_status st;
    if (!t->eval) {
        og_session_options so = {0};
        so.threads = t->threads;
        so.allocator = t->a;
        so.log = t->log;
        so.log_user = t->log_user;
        so.max_memory = t->max_memory;
        if ((st = og_session_create_mutable(t->mode->eval_model(t), &so, &t->eval))) return st;
    }
    const char *const *names = NULL;
    const og_tensor *const *values = NULL;
    int n = 0;
    if ((st = t->mode->bind_eval(t, input_names, inputs, n_inputs, &names, &values, &n))) return st;
    return og_session_run_named(t->eval, names, values, n, &output, 1, out);
}

og_status og_trainer_evaluate(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, double *loss)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_evaluate: NULL trainer");
    og_status st = check_args("og_trainer_evaluate", input_names, inputs, n_inputs);
    if (st || (st = og_trainer_enter(t, "og_trainer_evaluate"))) return st;
    og_tensor *out = NULL;
    st = og_trainer_run_eval(t, input_names, inputs, n_inputs, t->loss_name, &out);
    og_trainer_leave(t);
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
    /* the value og_model_add_loss compared with the targets, else the first other output */
    if (!output) output = og_graph_metadata(g, "onnxgrad.loss_output");
    if (output && og_graph_find_value(g, output) < 0) output = NULL;
    if (!output) {
        for (int i = 0; i < g->n_outputs && !output; i++)
            if (strcmp(g->values[g->outputs[i]].name, t->loss_name) != 0)
                output = g->values[g->outputs[i]].name;
        if (!output)
            return og_error(OG_ERR_INVALID_ARG, "the model has no output besides the loss");
    }
    if ((st = og_trainer_enter(t, "og_trainer_predict"))) return st;
    st = og_trainer_run_eval(t, input_names, inputs, n_inputs, output, out);
    og_trainer_leave(t);
    return st;
}

const og_model *og_trainer_step_model(const og_trainer *t) { return t->step_model; }

int64_t og_trainer_step_count(const og_trainer *t) { return t ? t->step : 0; }
double og_trainer_lr(const og_trainer *t)
{
    if (!t) return 0;
    return t->algo ? NAN : og_optimizer_lr(&t->opt, t->step);
}
int og_trainer_weight_count(const og_trainer *t) { return t ? t->n_weights : 0; }

const char *og_trainer_weight_name(const og_trainer *t, int i)
{
    if (!t) {
        og_error(OG_ERR_INVALID_ARG, "og_trainer_weight_name: NULL trainer");
        return NULL;
    }
    if (!og_api_index_ok("og_trainer_weight_name", "weight", i, t->n_weights)) return NULL;
    return t->mode->weight_name(t, i);
}

og_status og_trainer_get_weight(const og_trainer *t, const char *name, const og_tensor **value)
{
    if (value) *value = NULL;
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_get_weight: NULL trainer");
    return t->mode->get_weight(t, name, value);
}

og_status og_trainer_set_weight(og_trainer *t, const char *name, const og_tensor *value)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_set_weight: NULL trainer");
    og_status st = og_trainer_enter(t, "og_trainer_set_weight");
    if (st) return st;
    st = t->mode->set_weight(t, name, value);
    og_trainer_leave(t);
    return st;
}
