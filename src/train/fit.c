/* fit.c: og_trainer_fit, epochs of shuffled mini-batches with validation, checkpoints and
 * progress events. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
    bool model_weights;          /* the model has a sample-weight input */
    char tname[256], wname[256]; /* the bindings' names, when read from metadata */
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

/* The total sample weight of samples idx[0..n-1] (their count without weights). */
static double weight_of(const og_dataset *d, const batch_io *io, const int64_t *idx, int64_t n)
{
    const og_tensor *w = io->model_weights ? og_dataset_weights(d) : NULL;
    if (!w) return (double)n;
    const float *wv = og_tensor_cdata(w);
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += wv[idx[i]];
    return s;
}

/* Part r of n items split into `size` near-equal contiguous parts: [*lo, *hi). */
static void part_of(int64_t n, int size, int r, int64_t *lo, int64_t *hi)
{
    int64_t base = n / size, rem = n % size;
    *lo = r * base + (r < rem ? r : rem);
    *hi = *lo + base + (r < rem ? 1 : 0);
}

/* The validation loss, summed over samples [lo, hi) in batches of bs: *sum of batch losses
 * times batch weights, and *wsum of the weights. */
static og_status validation_sums(og_trainer *t, const og_dataset *val, batch_io *io, int64_t bs,
                                 int64_t *idx, int64_t lo, int64_t hi, double *sum, double *wsum)
{
    const char *names[3];
    const og_tensor *vals[3];
    og_status st = OG_OK;
    *sum = *wsum = 0;
    for (int64_t i = lo; i < hi; i++) idx[i] = i;
    for (int64_t s = lo; s < hi && !st; s += bs) {
        int64_t m = hi - s < bs ? hi - s : bs;
        int k = 0;
        double ws = 0, loss = NAN;
        st = load_batch(t, val, io, idx + s, m, names, vals, &k, &ws);
        if (!st) st = og_trainer_evaluate(t, names, vals, k, &loss);
        *sum += loss * ws;
        *wsum += ws;
    }
    return st ? og_error_prefix(st, "validation") : OG_OK;
}

/* The validation loss; data-parallel, every rank evaluates its part and the sums are
 * reduced. */
static og_status validation_loss(og_trainer *t, const og_dataset *val, batch_io *io, int64_t bs,
                                 int64_t *idx, double *out)
{
    int64_t lo, hi;
    double v[2];
    part_of(og_dataset_size(val), og_dp_size(t), og_dp_rank(t), &lo, &hi);
    og_status st = validation_sums(t, val, io, bs, idx, lo, hi, &v[0], &v[1]);
    if ((st = og_dp_sum(t, v, 2, st))) return st;
    *out = v[1] > 0 ? v[0] / v[1] : NAN;
    return OG_OK;
}

/* The fit's setup: bindings, and what data-parallel training needs checked. */
static og_status setup(og_trainer *t, const og_dataset *data, const og_fit_options *o, batch_io *io,
                       bool *sum_loss)
{
    const og_graph *g = t->model->graph;
    const char *loss_inputs = og_graph_metadata(g, "onnxgrad.loss_inputs");
    const char *tname =
        o->target_input ? o->target_input : line_of(loss_inputs, 0, io->tname, sizeof io->tname);
    const char *wname =
        o->weight_input ? o->weight_input : line_of(loss_inputs, 1, io->wname, sizeof io->wname);
    if (o->epochs < 0 || o->batch_size < 0)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_trainer_fit: epochs %d and batch size %lld must "
                        "be >= 0",
                        o->epochs, (long long)o->batch_size);
    if (og_dataset_size(data) <= 0)
        return og_error(OG_ERR_INVALID_ARG, "og_trainer_fit: the dataset is empty");
    og_status st = bind(t, o->feature_input ? o->feature_input : og_model_input_name(t->model, 0),
                        "features", &io->feat);
    if (!st) st = bind(t, tname ? tname : "label", "targets", &io->targ);
    if (st) return st;
    if (wname || o->weight_input) {
        if ((st = bind(t, wname, "sample weights", &io->wt))) return st;
        io->model_weights = true;
    } else if (og_dataset_weights(data)) {
        return og_error(OG_ERR_INVALID_ARG,
                        "the dataset has sample weights but the model has "
                        "no sample-weight input (add the loss with a sample_weight_name)");
    }
    const char *red = og_graph_metadata(g, "onnxgrad.loss_reduction");
    *sum_loss = red && strncmp(red, "sum", 3) == 0;
    if (og_dp_size(t) > 1 && red && strcmp(red, "sum+penalty") == 0)
        return og_error(OG_ERR_UNSUPPORTED,
                        "data-parallel training of a loss summed over samples with weight "
                        "penalties: every rank would add the penalty (use the mean reduction)");
    return OG_OK;
}

/* Data-parallel: every rank must hold the same dataset as rank 0 (sizes compared). */
static og_status same_data(og_trainer *t, const og_dataset *data, const og_dataset *val)
{
    int64_t mine[2] = {og_dataset_size(data), val ? og_dataset_size(val) : 0};
    int64_t root[2] = {mine[0], mine[1]};
    og_status st = og_dp_sync_sizes(t, root);
    if (st) return st;
    og_status local = OG_OK;
    if (root[0] != mine[0] || root[1] != mine[1])
        local = og_error(OG_ERR_INVALID_ARG,
                         "its dataset has %lld training and %lld validation samples, rank 0's "
                         "%lld and %lld: every rank must be given the same data",
                         (long long)mine[0], (long long)mine[1], (long long)root[0],
                         (long long)root[1]);
    return og_dp_agree(t, local);
}

static og_status fit(og_trainer *t, const og_dataset *data, const og_fit_options *o);

og_status og_trainer_fit(og_trainer *t, const og_dataset *data, const og_fit_options *o)
{
    if (!t || !data) return og_error(OG_ERR_INVALID_ARG, "og_trainer_fit: NULL argument");
    og_status st = og_trainer_enter(t, "og_trainer_fit");
    if (st) return st;
    og_dp_fit_begin(t);
    st = og_dp_fit_end(t, fit(t, data, o));
    og_trainer_leave(t);
    return st;
}

static og_status fit(og_trainer *t, const og_dataset *data, const og_fit_options *o)
{
    og_fit_options def = {0};
    if (!o) o = &def;
    const int rank = og_dp_rank(t), size = og_dp_size(t);
    const bool dp = t->dp != NULL;
    batch_io io;
    memset(&io, 0, sizeof io);
    bool sum_loss = false;
    og_status st = setup(t, data, o, &io, &sum_loss);
    if (dp && (st = og_dp_agree(t, st))) return st;
    if (dp && (st = same_data(t, data, o->validation))) return st;
    if (st) return st;
    int epochs = o->epochs > 0 ? o->epochs : 1;
    int64_t bs = o->batch_size > 0 ? o->batch_size : 32;
    int64_t n = og_dataset_size(data);
    /* the global batch: size x bs samples, rank r training on part r of it */
    int64_t gbs = bs;
    if (!og_mul_i64(bs, size, &gbs) || gbs > n) gbs = n;
    int64_t batches = (n + gbs - 1) / gbs;
    /* resuming: rank 0 alone reads the checkpoint, then every rank gets its state */
    int64_t resumed = 0;
    if (o->resume && o->checkpoint && rank == 0) {
        /* anything at the path is loaded (a FIFO or a folder is refused there, never
         * opened for reading here, which would block on a FIFO) */
        struct stat sb;
        if (stat(o->checkpoint, &sb) == 0) {
            st = og_trainer_load_checkpoint(t, o->checkpoint);
            resumed = 1;
        }
    }
    if (dp) st = og_dp_agree(t, st);
    if (dp && !st) st = og_dp_sync_state(t, &resumed); /* agreed on every rank */
    if (st) return st;
    int last = resumed ? epochs : t->epoch + epochs;
    if (t->opt.total_steps == 0 &&
        (t->opt.schedule == OG_LR_LINEAR || t->opt.schedule == OG_LR_COSINE))
        t->opt.total_steps = (int64_t)last * batches;
    int64_t vn = o->validation ? og_dataset_size(o->validation) : 0;
    int64_t *idx = og_malloc(t->a, (size_t)(n > vn ? n : vn) * sizeof *idx);
    if (!idx) st = og_error(OG_ERR_NOMEM, "out of memory");
    if (dp && (st = og_dp_agree(t, st))) goto done;
    if (st) return st;
    const char *names[3];
    const og_tensor *vals[3];
    double start = now_s();
    int64_t done = 0, total = (int64_t)(last - t->epoch) * n;
    int64_t stop = 0;
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
            int64_t m = b == batches - 1 ? n - b * gbs : gbs;
            int k = 0;
            double ws = 0, loss = NAN;
            const int64_t *gidx = idx + b * gbs;
            if (!dp) {
                st = load_batch(t, data, &io, gidx, m, names, vals, &k, &ws);
                if (!st) st = og_trainer_step(t, names, vals, k, &loss);
            } else {
                /* this rank's part; its share of the gradient: its part of the batch's
                 * weight for a mean loss (by count when the weights sum to 0), 1 for a sum */
                int64_t lo, hi;
                part_of(m, size, rank, &lo, &hi);
                double w_all = weight_of(data, &io, gidx, m), share = 0, w_mine = 0;
                og_status local = OG_OK;
                if (hi > lo)
                    local = load_batch(t, data, &io, gidx + lo, hi - lo, names, vals, &k, &w_mine);
                if (sum_loss)
                    share = hi > lo ? 1.0 : 0.0;
                else
                    share = w_all != 0 ? w_mine / w_all : (double)(hi - lo) / (double)m;
                st = og_dp_step(t, local ? NULL : names, local ? NULL : vals, local ? 0 : k, share,
                                local, &loss);
                ws = w_all;
            }
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
            if (dp && (st = og_dp_max(t, &stop))) break; /* every rank stops together */
        }
        if (st) break;
        if (stop && e.batch < batches) break; /* an unfinished epoch is neither counted nor saved */
        e.train_loss = wsum > 0 ? sum / wsum : NAN;
        if (o->validation && (st = validation_loss(t, o->validation, &io, bs, idx, &e.val_loss)))
            break;
        t->epoch = epoch + 1;
        if (dp) {
            char when[64];
            snprintf(when, sizeof when, "after epoch %d", epoch + 1);
            if ((st = og_dp_check_hash(t, when))) break;
        }
        if (o->checkpoint && rank == 0) st = og_trainer_save_checkpoint(t, o->checkpoint);
        if (dp) st = og_dp_agree(t, st);
        if (st) break;
        e.epoch_end = 1;
        if (o->callback) stop = o->callback(o->user, &e);
        if (dp && (st = og_dp_max(t, &stop))) break;
    }
done:
    batch_free(&io);
    og_free(t->a, idx);
    return st;
}
