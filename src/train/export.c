/* export.c: the trained model for inference. */
#include <string.h>

#include "train/trainer.h"

static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* Remove the loss output, the inputs the loss added, the nodes and constants only they
 * needed, and the onnxgrad.loss* metadata.  TrainingInfoProtos go too (their algorithm
 * computes the removed loss), with the initializers only they read. */
static og_status strip_loss(og_graph *g)
{
    const char *loss = og_graph_metadata(g, "onnxgrad.loss");
    const char *inputs = og_graph_metadata(g, "onnxgrad.loss_inputs");
    if (!loss)
        return og_error(OG_ERR_INVALID_ARG,
                        "the trainer's model does not say which output is the loss (no "
                        "onnxgrad.loss metadata): pass the inference model to export");
    int w = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        og_value *v = &g->values[g->outputs[i]];
        if (strcmp(v->name, loss) == 0)
            v->is_graph_output = false;
        else
            g->outputs[w++] = g->outputs[i];
    }
    g->n_outputs = w;
    w = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        og_value *v = &g->values[g->inputs[i]];
        if (v->kind == OG_VALUE_INPUT && listed(inputs, v->name))
            v->is_graph_input = false;
        else
            g->inputs[w++] = g->inputs[i];
    }
    g->n_inputs = w;
    og_status st = og_graph_prune(g);
    if (!st) st = og_graph_finalize(g);
    if (st) return st;
    w = 0;
    for (int i = 0; i < g->n_inits; i++) {
        const og_value *v = &g->values[g->inits[i]];
        if (v->n_consumers == 0 && !v->is_graph_output && strncmp(v->name, "og_loss_", 8) == 0)
            continue;
        g->inits[w++] = g->inits[i];
    }
    g->n_inits = w;
    if (g->n_training_info > 0) {
        og_graph_clear_training_info(g);
        w = 0;
        for (int i = 0; i < g->n_inits; i++) {
            const og_value *v = &g->values[g->inits[i]];
            if (v->n_consumers == 0 && !v->is_graph_output && !v->is_graph_input) continue;
            g->inits[w++] = g->inits[i];
        }
        g->n_inits = w;
    }
    w = 0;
    for (int i = 0; i < g->n_metadata; i++) {
        og_kv *kv = &g->metadata[i];
        if (strncmp(kv->key, "onnxgrad.loss", 13) == 0 ||
            strcmp(kv->key, "onnxgrad.training_step") == 0) {
            og_free(g->alloc, kv->key);
            og_free(g->alloc, kv->value);
        } else {
            g->metadata[w++] = *kv;
        }
    }
    g->n_metadata = w;
    return OG_OK;
}

og_status og_trainer_export(const og_trainer *t, const og_model *model, og_model **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_trainer_export: out is NULL");
    *out = NULL;
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_export: NULL trainer");
    const og_model *src = model ? model : t->model;
    og_model *c = NULL;
    og_status st = og_model_copy_graph(src, src->user_alloc, &c);
    if (st) return st;
    og_graph *g = c->graph;
    int found = 0;
    for (int i = 0; i < t->n_weights; i++) {
        const char *name = og_trainer_weight_name(t, i);
        int v = og_graph_find_value(g, name);
        if (v < 0) {
            /* the coefficients of a linear model, trained through its lowering: back into
             * the node's attributes (grad.h) */
            bool hit = false;
            if ((st = og_grad_ml_write_back(g, name, t->w[i], &hit))) goto fail;
            found += hit;
            continue;
        }
        if (g->values[v].kind != OG_VALUE_INITIALIZER) continue;
        og_tensor *init = g->values[v].init;
        const og_tensor *w = t->w[i];
        if (init->dtype != w->dtype || init->rank != w->rank ||
            memcmp(init->dims, w->dims, (size_t)w->rank * sizeof *w->dims) != 0) {
            st = og_error(OG_ERR_SHAPE,
                          "og_trainer_export: initializer '%s' of the model has another dtype "
                          "or shape than the trained weight",
                          name);
            goto fail;
        }
        memcpy(init->data, w->data, og_tensor_nbytes(w));
        found++;
    }
    /* the running statistics the trainer updated (BatchNormalization in training mode) */
    for (int k = 0; k < t->n_bn; k++) {
        const char *nm[2] = {t->bn[k].mean, t->bn[k].var};
        const og_tensor *val[2] = {t->bn[k].tm, t->bn[k].tv};
        for (int q = 0; q < 2; q++) {
            int v = og_graph_find_value(g, nm[q]);
            if (v < 0 || g->values[v].kind != OG_VALUE_INITIALIZER ||
                og_tensor_nbytes(g->values[v].init) != og_tensor_nbytes(val[q]))
                continue;
            memcpy(g->values[v].init->data, val[q]->data, og_tensor_nbytes(val[q]));
        }
    }
    if (found == 0) {
        st = og_error(OG_ERR_INVALID_ARG,
                      "og_trainer_export: the model has none of the trained weights");
        goto fail;
    }
    if (!model && (st = strip_loss(g))) goto fail;
    if (!(st = og_graph_finalize(g))) st = og_graph_resolve(g, false);
    if (st) goto fail;
    *out = c;
    return OG_OK;
fail:
    og_model_free(c);
    return st;
}
