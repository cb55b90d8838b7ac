/* fit.c: og_trainer_fit, epochs of shuffled mini-batches with validation, checkpoints and
 * progress events. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "train/trainer.h"

static double now_s(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Line k (0-based) of a newline-separated list into buf; NULL if there is none. */
static const char *line_of(const char *list, int k, char *buf, size_t size)
{
    for (const char *p = list; p && *p; k--) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (k == 0) {
            if (len >= size) return NULL;
            memcpy(buf, p, len);
            buf[len] = '\0';
            return buf;
        }
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

/* The declared dtype and shape of loss-model input `name`; false if it is not an input. */
static bool input_shape(const og_model *m, const char *name, og_dtype *dt, int *rank, int64_t *dims)
{
    for (int i = 0; i < og_model_input_count(m); i++) {
        if (strcmp(og_model_input_name(m, i), name) != 0) continue;
        return og_model_input_info(m, i, dt, rank, dims, NULL) == OG_OK;
    }
    return false;
}

typedef struct binding {
    const char *name;
    og_dtype dtype; /* declared dtype (OG_UNDEFINED unknown) */
    int rank;       /* declared rank, -1 unknown */
    int64_t dims[OG_MAX_RANK];
} binding;

static og_status bind(const og_trainer *t, const char *name, const char *what, binding *b)
{
    b->name = name;
    const og_model *m = og_trainer_step_model(t);
    if (!input_shape(m, name, &b->dtype, &b->rank, b->dims)) {
        char list[512] = "";
        size_t len = 0;
        for (int i = 0; i < og_model_input_count(m) && len + 64 < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", i ? ", " : "",
                                    og_model_input_name(m, i));
        return og_error(OG_ERR_INVALID_ARG,
                        "the %s go to input '%s', which the model lacks "
                        "(inputs: %s)",
                        what, name, list);
    }
    return OG_OK;
}

/* A batch tensor with the input's declared per-sample shape when only the layout differs
 * ([N, 64] data for a [N, 1, 8, 8] input, [N] targets for an [N, 1] output); *view is the
 * tensor to free (NULL when x is used as it is). */
static og_status shape_for(const binding *b, og_tensor *x, og_tensor **view, const char *what)
{
    *view = NULL;
    if (b->rank < 1) return OG_OK;
    int64_t per = 1, want = 1;
    bool known = true;
    for (int d = 1; d < b->rank; d++) {
        known = known && b->dims[d] >= 0;
        want *= b->dims[d] >= 0 ? b->dims[d] : 1;
    }
    for (int d = 1; d < x->rank; d++) per *= x->dims[d];
    bool same = x->rank == b->rank;
    for (int d = 1; same && d < b->rank; d++) same = b->dims[d] < 0 || b->dims[d] == x->dims[d];
    if (same) return OG_OK;
    if (!known || per != want) {
        char s1[128] = "[N", s2[128] = "[N";
        for (int d = 1; d < x->rank; d++)
            snprintf(s1 + strlen(s1), sizeof s1 - strlen(s1), ", %lld", (long long)x->dims[d]);
        for (int d = 1; d < b->rank; d++)
            snprintf(s2 + strlen(s2), sizeof s2 - strlen(s2), b->dims[d] >= 0 ? ", %lld" : ", ?",
                     (long long)b->dims[d]);
        return og_error(OG_ERR_SHAPE, "the %s have shape %s], but the model's input '%s' is %s]",
                        what, s1, b->name, s2);
    }
    int64_t dims[OG_MAX_RANK];
    dims[0] = x->dims[0];
    for (int d = 1; d < b->rank; d++) dims[d] = b->dims[d];
    return og_tensor_view(x, b->rank, dims, view);
}

typedef struct batch_io {
    binding feat, targ, wt;
    bool model_weights; /* the model has a sample-weight input */
    og_tensor *x, *y, *w, *xv, *yv, *ones;
} batch_io;

static void batch_free(batch_io *io)
{
    og_tensor_free(io->x);
    og_tensor_free(io->y);
    og_tensor_free(io->w);
    og_tensor_free(io->xv);
    og_tensor_free(io->yv);
    og_tensor_free(io->ones);
    io->x = io->y = io->w = io->xv = io->yv = io->ones = NULL;
}

/* Features are float32; a model taking int64, int32 or float64 (categorical codes, say, as
 * scikit-learn's OneHotEncoder pipelines do) gets them converted, integers exactly. */
static og_status convert_features(const og_allocator *a, og_dtype want, og_tensor **x)
{
    og_tensor *s = *x, *c = NULL;
    if (want == OG_UNDEFINED || want == s->dtype) return OG_OK;
    if (want != OG_INT64 && want != OG_INT32 && want != OG_DOUBLE) return OG_OK;
    og_status st = og_tensor_create(want, s->rank, s->dims, a, &c);
    if (st) return st;
    const float *f = s->data;
    for (int64_t i = 0; i < s->numel; i++) {
        if (want == OG_DOUBLE) {
            ((double *)c->data)[i] = f[i];
            continue;
        }
        if (!(fabsf(f[i]) < 2147483648.0f) || f[i] != floorf(f[i])) {
            og_tensor_free(c);
            return og_error(OG_ERR_TYPE,
                            "the model takes %s features, but feature value %g (flat index %lld) "
                            "is not an integer",
                            og_dtype_name(want), f[i], (long long)i);
        }
        if (want == OG_INT64)
            ((int64_t *)c->data)[i] = (int64_t)f[i];
        else
            ((int32_t *)c->data)[i] = (int32_t)f[i];
    }
    og_tensor_free(s);
    *x = c;
    return OG_OK;
}

/* Gather samples idx[0..n-1] and bind them; *weight_sum is their total weight. */
static og_status load_batch(og_trainer *t, const og_dataset *d, batch_io *io, const int64_t *idx,
                            int64_t n, const char **names, const og_tensor **vals, int *count,
                            double *weight_sum)
{
    batch_free(io);
    og_status st = og_dataset_batch(d, idx, n, &io->x, &io->y, &io->w);
    if (!st) st = convert_features(t->a, io->feat.dtype, &io->x);
    if (!st) st = shape_for(&io->feat, io->x, &io->xv, "features");
    if (!st) st = shape_for(&io->targ, io->y, &io->yv, "targets");
    if (st) return st;
    int k = 0;
    names[k] = io->feat.name;
    vals[k++] = io->xv ? io->xv : io->x;
    names[k] = io->targ.name;
    vals[k++] = io->yv ? io->yv : io->y;
    *weight_sum = (double)n;
    if (io->model_weights) {
        og_dtype dt = OG_FLOAT;
        if (!io->w) {
            if ((st = og_tensor_create(dt, 1, &n, t->a, &io->ones))) return st;
            for (int64_t i = 0; i < n; i++) ((float *)io->ones->data)[i] = 1.0f;
        } else {
            double s = 0;
            for (int64_t i = 0; i < n; i++) s += ((const float *)io->w->data)[i];
            *weight_sum = s;
        }
        names[k] = io->wt.name;
        vals[k++] = io->w ? io->w : io->ones;
    }
    *count = k;
    return OG_OK;
}

static og_status validation_loss(og_trainer *t, const og_dataset *val, batch_io *io, int64_t bs,
                                 int64_t *idx, double *out)
{
    int64_t n = og_dataset_size(val);
    double sum = 0, wsum = 0;
    const char *names[3];
    const og_tensor *vals[3];
    og_status st = OG_OK;
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    for (int64_t s = 0; s < n && !st; s += bs) {
        int64_t m = n - s < bs ? n - s : bs;
        int k = 0;
        double ws = 0, loss = NAN;
        st = load_batch(t, val, io, idx + s, m, names, vals, &k, &ws);
        if (!st) st = og_trainer_evaluate(t, names, vals, k, &loss);
        sum += loss * ws;
        wsum += ws;
    }
    if (st) return og_error_prefix(st, "validation");
    *out = wsum > 0 ? sum / wsum : NAN;
    return OG_OK;
}

og_status og_trainer_fit(og_trainer *t, const og_dataset *data, const og_fit_options *o)
{
    if (!t || !data) return og_error(OG_ERR_INVALID_ARG, "og_trainer_fit: NULL argument");
    og_fit_options def = {0};
    if (!o) o = &def;
    if (o->epochs < 0 || o->batch_size < 0)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_trainer_fit: epochs %d and batch size %lld must "
                        "be >= 0",
                        o->epochs, (long long)o->batch_size);
    int epochs = o->epochs > 0 ? o->epochs : 1;
    int64_t bs = o->batch_size > 0 ? o->batch_size : 32;
    int64_t n = og_dataset_size(data);
    if (n <= 0) return og_error(OG_ERR_INVALID_ARG, "og_trainer_fit: the dataset is empty");
    if (bs > n) bs = n;
    int64_t batches = (n + bs - 1) / bs;
    const og_graph *g = t->model->graph;
    const char *loss_inputs = og_graph_metadata(g, "onnxgrad.loss_inputs");
    char tbuf[256], wbuf[256];
    const char *tname = o->target_input ? o->target_input : line_of(loss_inputs, 0, tbuf, 256);
    const char *wname = o->weight_input ? o->weight_input : line_of(loss_inputs, 1, wbuf, 256);
    batch_io io;
    memset(&io, 0, sizeof io);
    og_status st = bind(t, o->feature_input ? o->feature_input : og_model_input_name(t->model, 0),
                        "features", &io.feat);
    if (!st) st = bind(t, tname ? tname : "label", "targets", &io.targ);
    if (st) return st;
    if (wname || o->weight_input) {
        if ((st = bind(t, wname, "sample weights", &io.wt))) return st;
        io.model_weights = true;
    } else if (og_dataset_weights(data)) {
        return og_error(OG_ERR_INVALID_ARG,
                        "the dataset has sample weights but the model has "
                        "no sample-weight input (add the loss with a sample_weight_name)");
    }
    bool resumed = false;
    if (o->resume && o->checkpoint) {
        FILE *f = fopen(o->checkpoint, "rb");
        if (f) {
            fclose(f);
            if ((st = og_trainer_load_checkpoint(t, o->checkpoint))) return st;
            resumed = true;
        }
    }
    int last = resumed ? epochs : t->epoch + epochs;
    if (t->opt.total_steps == 0 &&
        (t->opt.schedule == OG_LR_LINEAR || t->opt.schedule == OG_LR_COSINE))
        t->opt.total_steps = (int64_t)last * batches;
    int64_t vn = o->validation ? og_dataset_size(o->validation) : 0;
    int64_t *idx = og_malloc(t->a, (size_t)(n > vn ? n : vn) * sizeof *idx);
    if (!idx) return og_error(OG_ERR_NOMEM, "out of memory");
    const char *names[3];
    const og_tensor *vals[3];
    double start = now_s();
    int64_t done = 0, total = (int64_t)(last - t->epoch) * n;
    int stop = 0;
    for (int epoch = t->epoch; epoch < last && !st && !stop; epoch++) {
        for (int64_t i = 0; i < n; i++) idx[i] = i;
        if (!o->no_shuffle) og_rng_shuffle(&t->rng, idx, n);
        double sum = 0, wsum = 0;
        og_fit_event e;
        memset(&e, 0, sizeof e);
        e.epoch = epoch;
        e.batches = batches;
        e.train_loss = e.val_loss = NAN;
        for (int64_t b = 0; b < batches && !st && !stop; b++) {
            int64_t m = b == batches - 1 ? n - b * bs : bs;
            int k = 0;
            double ws = 0, loss = NAN;
            st = load_batch(t, data, &io, idx + b * bs, m, names, vals, &k, &ws);
            if (!st) st = og_trainer_step(t, names, vals, k, &loss);
            if (st) {
                og_error_prefix(st, "epoch %d, batch %lld", epoch + 1, (long long)b + 1);
                break;
            }
            sum += loss * ws;
            wsum += ws;
            done += m;
            double el = now_s() - start;
            e.step = t->step;
            e.batch = b + 1;
            e.loss = loss;
            e.samples_per_s = el > 0 ? (double)done / el : 0;
            e.seconds_left = e.samples_per_s > 0 ? (double)(total - done) / e.samples_per_s : 0;
            if (o->callback) stop = o->callback(o->user, &e);
        }
        if (st) break;
        if (stop && e.batch < batches) break; /* an unfinished epoch is neither counted nor saved */
        e.train_loss = wsum > 0 ? sum / wsum : NAN;
        if (o->validation && (st = validation_loss(t, o->validation, &io, bs, idx, &e.val_loss)))
            break;
        t->epoch = epoch + 1;
        if (o->checkpoint && (st = og_trainer_save_checkpoint(t, o->checkpoint))) break;
        e.epoch_end = 1;
        if (o->callback) stop = o->callback(o->user, &e);
    }
    batch_free(&io);
    og_free(t->a, idx);
    return st;
}
