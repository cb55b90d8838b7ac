/*
 * train.c: `onnxgrad train`: a loss and an optimizer on a dataset, with progress, a CSV of
 * the losses per epoch, an SVG plot of them, checkpoints and the trained model.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "onnxgrad.h"
#ifdef OG_HAVE_MPI
#include "onnxgrad_mpi.h"
#endif

/* in two parts: C compilers need only take string literals of 4,095 characters */
static const char train_usage_1[] =
    "usage: onnxgrad train MODEL --data FILE --loss L [options] -o OUT.onnx\n"
    "\n"
    "Train MODEL's weights on FILE and write the trained inference model to OUT.onnx, the\n"
    "losses per epoch to OUT.csv and their plot to OUT.svg (OUT is OUT.onnx without .onnx).\n"
    "\n"
    "Data:\n"
    "  --data FILE              .csv (header line of column names), .npy (2-D) or .npz\n"
    "  --target COL[,COL]       target column(s) (name, or 0-based index without header;\n"
    "                           .npz: array name); default: the last column (.npz: y)\n"
    "  --features A,B,...       feature columns (.npz: the array); default: the others\n"
    "  --weight-column C        per-sample weights (the loss gets a sample-weight input)\n"
    "  --delimiter C            CSV delimiter (default ',')   --no-header  CSV without header\n"
    "  --val-split F            hold out a fraction F of the samples for validation\n"
    "  --val-data FILE          validation data (same columns) instead of --val-split\n"
    "\n"
    "Loss:\n"
    "  --loss L                 mse | mae | elastic | huber | log (binary, on logits) |\n"
    "                           cross-entropy (softmax, on logits) | nll (on log-probs) |\n"
    "                           proba (-log p, on probabilities: scikit-learn classifiers);\n"
    "                           without --loss, a MODEL carrying an ONNX TrainingInfoProto\n"
    "                           trains with its own algorithm (the optimizer options and\n"
    "                           --weights then do not apply)\n"
    "  --model-output NAME      the output compared with the targets (default: the first\n"
    "                           float tensor; a ZipMap output stands for its probabilities)\n"
    "  --reduction mean|sum     (default mean)      --l1-ratio R  elastic (default 0.5)\n"
    "  --delta D                huber (default 1)   --l1 X, --l2 X  weight penalties\n"
    "\n"
    "Optimizer:\n"
    "  --optimizer O            sgd | momentum | nesterov | adam | adamw | adagrad\n"
    "                           (default sgd; momentum and nesterov: sgd, momentum 0.9)\n"
    "  --lr X                   learning rate (default: 0.01, adam/adamw 0.001)\n"
    "  --momentum M  --beta1 B  --beta2 B  --eps E  --weight-decay W  --lr-decay D\n"
    "  --clip-norm C            clip gradients to a global L2 norm C\n"
    "  --schedule S             constant | optimal | invscaling (scikit-learn's) | linear |\n"
    "                           cosine (after --warmup N steps, down to --min-lr X at the\n"
    "                           end) | step (x --gamma G every --step-size N steps)\n"
    "  --alpha A  --power-t P   optimal / invscaling parameters\n"
    "  --weights A,B            weights to train (default: every float initializer)\n";
static const char train_usage_2[] =
    "\n"
    "Loop:\n"
    "  --epochs N (default 10)  --batch-size B (default 32)  --seed S (default 0)\n"
    "  --no-shuffle             keep the data order\n"
    "  --checkpoint FILE        save weights + optimizer state after every epoch (atomic)\n"
    "  --resume                 continue from --checkpoint when it exists\n"
    "  --threads N              worker threads (default: one per core)\n"
    "  --max-memory SIZE        memory budget of each session and of reading --data (bytes,\n"
    "                           or with K, M, G, T; default 4G per session, 2G for data)\n"
    "  --history FILE.csv  --plot FILE.svg   override the default file names\n"
    "  --export-training FILE   also write the trained model with its training step as an\n"
    "                           ONNX TrainingInfoProto (loss, gradients, optimizer update)\n"
    "  -q, --quiet              no progress output\n"
    "\n"
    "Data-parallel (under mpirun, when onnxgrad was built with MPI):\n"
    "  mpirun -np N onnxgrad train ...  trains on N ranks: each reads the same files, takes\n"
    "                           its part of every global batch of N x --batch-size samples,\n"
    "                           the gradients are summed across ranks, each rank updates\n"
    "                           1/N of the weights and they are gathered; rank 0 alone\n"
    "                           prints and writes the outputs and checkpoints; ranks on\n"
    "                           one machine sum through MPI shared memory\n"
    "                           (ONNXGRAD_MPI_SHM=0: by messages, the same results)\n"
    "  --bucket-mb X            reduce gradients in buckets of about X MiB, each started as\n"
    "                           soon as the backward pass has made it (default 4)\n"
    "  --comm-timeout S         give up (and abort every rank) when a reduction waits more\n"
    "                           than S seconds for the other ranks (default 300)\n"
    "\n"
    "A NaN or infinite loss stops training with the step number (exit 1); the checkpoint\n"
    "of the last finished epoch is kept.\n";

void cli_train_usage(FILE *f)
{
    fputs(train_usage_1, f);
    fputs(train_usage_2, f);
}

#define MAX_LIST   4096
#define MAX_EPOCHS 100000

typedef struct history {
    int n, cap, first; /* first: 0-based epoch of entry 0 */
    double *train, *val, *acc, *secs;
} history;

typedef struct progress {
    bool tty, quiet, classes;
    int rank; /* data-parallel: only rank 0 prints and keeps the history */
    int epochs;
    double start, last_draw;
    history h;
    og_trainer *t;
    const og_dataset *val;
    const char *input;
    og_status st;
} progress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int split_list(char *s, const char **out, int cap)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (n == cap) return -1;
        out[n++] = tok;
    }
    return n;
}

static const char *hms(double s, char *buf, size_t size)
{
    long t = s > 0 && s < 1e8 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

/* Classification accuracy of the current weights on the validation set (argmax over axis
 * 1 of the model output against int64 labels). */
static double accuracy(progress *p)
{
    const og_tensor *x = og_dataset_features(p->val), *y = og_dataset_targets(p->val);
    og_tensor *scores = NULL;
    const char *names[1] = {p->input};
    double acc = NAN;
    if (og_trainer_predict(p->t, names, &x, 1, NULL, &scores) != OG_OK) return NAN;
    const int64_t *dims = og_tensor_dims(scores);
    int64_t n = dims[0], c = og_tensor_rank(scores) == 2 ? dims[1] : 0;
    if (c > 0 && n == og_tensor_numel(y) && og_tensor_dtype(scores) == OG_FLOAT) {
        const float *s = og_tensor_cdata(scores);
        const int64_t *lab = og_tensor_cdata(y);
        int64_t good = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t best = 0;
            for (int64_t k = 1; k < c; k++)
                if (s[i * c + k] > s[i * c + best]) best = k;
            good += best == lab[i];
        }
        acc = (double)good / (double)n;
    }
    og_tensor_free(scores);
    return acc;
}

static bool history_add(history *h, double train, double val, double acc, double secs)
{
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        double *a = realloc(h->train, (size_t)cap * sizeof *a);
        if (a) h->train = a;
        double *b = realloc(h->val, (size_t)cap * sizeof *b);
        if (b) h->val = b;
        double *c = realloc(h->acc, (size_t)cap * sizeof *c);
        if (c) h->acc = c;
        double *d = realloc(h->secs, (size_t)cap * sizeof *d);
        if (d) h->secs = d;
        if (!a || !b || !c || !d) return false;
        h->cap = cap;
    }
    h->train[h->n] = train;
    h->val[h->n] = val;
    h->acc[h->n] = acc;
    h->secs[h->n++] = secs;
    return true;
}

static int on_event(void *user, const og_fit_event *e)
{
    progress *p = user;
    char eta[32];
    double t = now_s();
    if (p->rank != 0) return 0;
    if (!e->epoch_end) {
        if (p->tty && !p->quiet && (t - p->last_draw > 0.1 || e->batch == e->batches)) {
            p->last_draw = t;
            fprintf(stderr,
                    "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.6g  %.0f samples/s  %s left",
                    e->epoch + 1, p->epochs, (long long)e->batch, (long long)e->batches, e->loss,
                    e->samples_per_s, hms(e->seconds_left, eta, sizeof eta));
            fflush(stderr);
        }
        return 0;
    }
    double acc = p->classes && p->val ? accuracy(p) : NAN;
    if (p->h.n == 0) p->h.first = e->epoch;
    if (!history_add(&p->h, e->train_loss, e->val_loss, acc, t - p->start)) {
        p->st = OG_ERR_NOMEM;
        return 1;
    }
    if (p->quiet) return 0;
    if (p->tty) fputs("\r\033[K", stderr);
    printf("epoch %d/%d  train loss %.6g", e->epoch + 1, p->epochs, e->train_loss);
    if (!isnan(e->val_loss)) printf("  val loss %.6g", e->val_loss);
    if (!isnan(acc)) printf("  val accuracy %.4f", acc);
    printf("  %.0f samples/s  %.1f s\n", e->samples_per_s, t - p->start);
    fflush(stdout);
    return 0;
}

static int write_csv(const char *path, const history *h, int first_epoch)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "epoch,train_loss,val_loss,val_accuracy,seconds\n");
    for (int i = 0; i < h->n; i++) {
        fprintf(f, "%d,%.9g,", first_epoch + i + 1, h->train[i]);
        if (!isnan(h->val[i])) fprintf(f, "%.9g", h->val[i]);
        fputc(',', f);
        if (!isnan(h->acc[i])) fprintf(f, "%.6f", h->acc[i]);
        fprintf(f, ",%.6f\n", h->secs[i]);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* A line chart of the train and validation losses per epoch. */
static int write_svg(const char *path, const history *h, int first_epoch, const char *title)
{
    const double W = 640, H = 400, L = 70, R = 20, T = 40, B = 50;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < h->n; i++) {
        double v[2] = {h->train[i], h->val[i]};
        for (int k = 0; k < 2; k++)
            if (isfinite(v[k])) {
                lo = fmin(lo, v[k]);
                hi = fmax(hi, v[k]);
            }
    }
    if (!isfinite(lo)) lo = 0, hi = 1;
    if (hi - lo < 1e-12 * fmax(1.0, fabs(hi))) hi = lo + fmax(1e-6, fabs(lo) * 0.1);
    double pad = (hi - lo) * 0.05;
    lo -= pad;
    hi += pad;
    int e0 = first_epoch + 1, e1 = first_epoch + (h->n > 1 ? h->n : 2);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"24\" font-size=\"14\">",
            W, H, L);
    for (const char *c = title; *c; c++) {
        if (*c == '<')
            fputs("&lt;", f);
        else if (*c == '&')
            fputs("&amp;", f);
        else if (*c == '>')
            fputs("&gt;", f);
        else
            fputc(*c, f);
    }
    fprintf(f, "</text>\n");
#define PX(e) (L + ((e)-e0) * (W - L - R) / (double)(e1 - e0))
#define PY(v) (H - B - ((v)-lo) * (H - T - B) / (hi - lo))
    fprintf(f, "<g stroke=\"#ccc\">\n");
    for (int k = 0; k <= 5; k++) {
        double v = lo + (hi - lo) * k / 5.0;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", L, PY(v), W - R,
                PY(v));
    }
    fprintf(f, "</g>\n<g>\n");
    for (int k = 0; k <= 5; k++) {
        double v = lo + (hi - lo) * k / 5.0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", L - 6,
                PY(v) + 4, v);
    }
    int step = (e1 - e0) / 10 + 1;
    for (int e = e0; e <= e1; e += step)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", PX(e),
                H - B + 18, e);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">epoch</text>\n"
            "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
            "text-anchor=\"middle\">loss</text>\n</g>\n",
            (L + W - R) / 2, H - 12, (T + H - B) / 2, (T + H - B) / 2);
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#444\"/>\n",
            L, T, W - L - R, H - T - B);
    const char *color[2] = {"#1f77b4", "#ff7f0e"}, *label[2] = {"train", "validation"};
    for (int k = 0; k < 2; k++) {
        const double *v = k ? h->val : h->train;
        int shown = 0;
        for (int i = 0; i < h->n; i++) shown += isfinite(v[i]);
        if (!shown) continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color[k]);
        for (int i = 0; i < h->n; i++)
            if (isfinite(v[i])) fprintf(f, "%.1f,%.1f ", PX(e0 + i), PY(v[i]));
        fprintf(f, "\"/>\n");
        for (int i = 0; i < h->n; i++)
            if (isfinite(v[i]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", PX(e0 + i),
                        PY(v[i]), color[k]);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                W - R - 130, T + 16 + 18.0 * k, W - R - 105, T + 16 + 18.0 * k, color[k],
                W - R - 98, T + 20 + 18.0 * k, label[k]);
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? 0 : -1;
}

typedef struct args {
    const char *model, *data, *val_data, *out, *loss, *optimizer, *schedule, *model_output;
    const char *checkpoint, *history, *plot, *weight_column, *reduction, *export_training;
    const char *targets[MAX_LIST], *features[MAX_LIST], *weights[MAX_LIST];
    int n_targets, n_features, n_weights, epochs, threads;
    int64_t batch_size, warmup, step_size, max_memory;
    double val_split, lr, momentum, beta1, beta2, eps, weight_decay, lr_decay, clip_norm, alpha,
        power_t, gamma, min_lr, l1, l2, l1_ratio, delta, bucket_mb, comm_timeout;
    bool nesterov, resume, quiet, no_shuffle, no_header;
    char delimiter;
    uint64_t seed;
} args;

static bool parse_double(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return *s && !*end && isfinite(*v);
}

static bool parse_i64(const char *s, int64_t *v)
{
    char *end;
    long long x = strtoll(s, &end, 10);
    *v = x;
    return *s && !*end && x >= 0;
}

static int parse_args(args *a, int argc, char **argv)
{
    static char msg[512];
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        bool has = i + 1 < argc;
        const char *v = has ? argv[i + 1] : NULL;
        double *dp = NULL;
        int64_t *ip = NULL;
        const char **sp = NULL;
        if (strcmp(o, "--nesterov") == 0) {
            a->nesterov = true;
            continue;
        }
        if (strcmp(o, "--resume") == 0) {
            a->resume = true;
            continue;
        }
        if (strcmp(o, "-q") == 0 || strcmp(o, "--quiet") == 0) {
            a->quiet = true;
            continue;
        }
        if (strcmp(o, "--no-shuffle") == 0) {
            a->no_shuffle = true;
            continue;
        }
        if (strcmp(o, "--no-header") == 0) {
            a->no_header = true;
            continue;
        }
        if (o[0] != '-') {
            if (a->model) {
                snprintf(msg, sizeof msg, "train: unexpected argument '%s'", o);
                return cli_bad_usage(msg);
            }
            a->model = o;
            continue;
        }
        if (!has) {
            snprintf(msg, sizeof msg, "train: %s needs a value", o);
            return cli_bad_usage(msg);
        }
        i++;
        if (strcmp(o, "--data") == 0)
            sp = &a->data;
        else if (strcmp(o, "--val-data") == 0)
            sp = &a->val_data;
        else if (strcmp(o, "-o") == 0 || strcmp(o, "--output") == 0)
            sp = &a->out;
        else if (strcmp(o, "--loss") == 0)
            sp = &a->loss;
        else if (strcmp(o, "--optimizer") == 0)
            sp = &a->optimizer;
        else if (strcmp(o, "--schedule") == 0)
            sp = &a->schedule;
        else if (strcmp(o, "--model-output") == 0)
            sp = &a->model_output;
        else if (strcmp(o, "--checkpoint") == 0)
            sp = &a->checkpoint;
        else if (strcmp(o, "--history") == 0)
            sp = &a->history;
        else if (strcmp(o, "--plot") == 0)
            sp = &a->plot;
        else if (strcmp(o, "--export-training") == 0)
            sp = &a->export_training;
        else if (strcmp(o, "--weight-column") == 0)
            sp = &a->weight_column;
        else if (strcmp(o, "--reduction") == 0)
            sp = &a->reduction;
        else if (strcmp(o, "--val-split") == 0)
            dp = &a->val_split;
        else if (strcmp(o, "--lr") == 0)
            dp = &a->lr;
        else if (strcmp(o, "--momentum") == 0)
            dp = &a->momentum;
        else if (strcmp(o, "--beta1") == 0)
            dp = &a->beta1;
        else if (strcmp(o, "--beta2") == 0)
            dp = &a->beta2;
        else if (strcmp(o, "--eps") == 0)
            dp = &a->eps;
        else if (strcmp(o, "--weight-decay") == 0)
            dp = &a->weight_decay;
        else if (strcmp(o, "--lr-decay") == 0)
            dp = &a->lr_decay;
        else if (strcmp(o, "--clip-norm") == 0)
            dp = &a->clip_norm;
        else if (strcmp(o, "--alpha") == 0)
            dp = &a->alpha;
        else if (strcmp(o, "--power-t") == 0)
            dp = &a->power_t;
        else if (strcmp(o, "--gamma") == 0)
            dp = &a->gamma;
        else if (strcmp(o, "--min-lr") == 0)
            dp = &a->min_lr;
        else if (strcmp(o, "--l1") == 0)
            dp = &a->l1;
        else if (strcmp(o, "--l2") == 0)
            dp = &a->l2;
        else if (strcmp(o, "--l1-ratio") == 0)
            dp = &a->l1_ratio;
        else if (strcmp(o, "--delta") == 0)
            dp = &a->delta;
        else if (strcmp(o, "--bucket-mb") == 0)
            dp = &a->bucket_mb;
        else if (strcmp(o, "--comm-timeout") == 0)
            dp = &a->comm_timeout;
        else if (strcmp(o, "--batch-size") == 0)
            ip = &a->batch_size;
        else if (strcmp(o, "--warmup") == 0)
            ip = &a->warmup;
        else if (strcmp(o, "--step-size") == 0)
            ip = &a->step_size;
        if (sp) {
            *sp = v;
            continue;
        }
        if (dp || ip) {
            if (dp ? !parse_double(v, dp) : !parse_i64(v, ip)) {
                snprintf(msg, sizeof msg, "train: %s needs a %s, not '%s'", o,
                         dp ? "number" : "non-negative integer", v);
                return cli_bad_usage(msg);
            }
            /* mark the option as given: NaN means "not set" for doubles */
            continue;
        }
        int64_t n;
        if (strcmp(o, "--max-memory") == 0) {
            if (!cli_parse_bytes(v, &a->max_memory)) {
                snprintf(msg, sizeof msg,
                         "train: --max-memory needs a size (bytes, or with K, M, G, T), not '%s'",
                         v);
                return cli_bad_usage(msg);
            }
            continue;
        }
        if (strcmp(o, "--epochs") == 0 || strcmp(o, "--threads") == 0 || strcmp(o, "--seed") == 0) {
            if (!parse_i64(v, &n) || n > (strcmp(o, "--seed") == 0 ? INT64_MAX : 1000000)) {
                snprintf(msg, sizeof msg, "train: %s needs a non-negative integer, not '%s'", o, v);
                return cli_bad_usage(msg);
            }
            if (o[2] == 'e')
                a->epochs = (int)n;
            else if (o[2] == 't')
                a->threads = (int)n;
            else
                a->seed = (uint64_t)n;
            continue;
        }
        char *copy = argv[i]; /* strtok writes into argv, which is ours */
        if (strcmp(o, "--target") == 0)
            a->n_targets = split_list(copy, a->targets, MAX_LIST);
        else if (strcmp(o, "--features") == 0)
            a->n_features = split_list(copy, a->features, MAX_LIST);
        else if (strcmp(o, "--weights") == 0)
            a->n_weights = split_list(copy, a->weights, MAX_LIST);
        else if (strcmp(o, "--delimiter") == 0) {
            if (strlen(v) != 1 && strcmp(v, "\\t") != 0)
                return cli_bad_usage("train: --delimiter needs one character (or \\t)");
            a->delimiter = strcmp(v, "\\t") == 0 ? '\t' : v[0];
        } else {
            snprintf(msg, sizeof msg, "train: unknown option '%s'", o);
            return cli_bad_usage(msg);
        }
    }
    if (a->n_targets < 0 || a->n_features < 0 || a->n_weights < 0)
        return cli_bad_usage("train: --target, --features and --weights take at most 4096 "
                             "names each");
    if (!a->model) return cli_bad_usage("train: no MODEL given");
    if (!a->data) return cli_bad_usage("train: --data FILE is required");
    if (!a->out) return cli_bad_usage("train: -o OUT.onnx is required");
    if (a->val_data && a->val_split > 0)
        return cli_bad_usage("train: give --val-split or --val-data, not both");
    if (a->epochs > MAX_EPOCHS) return cli_bad_usage("train: --epochs is too large");
    if (!isnan(a->bucket_mb) && !(a->bucket_mb > 0 && a->bucket_mb < 1e6))
        return cli_bad_usage("train: --bucket-mb must be a number of MiB > 0");
    if (!isnan(a->comm_timeout) && !(a->comm_timeout > 0))
        return cli_bad_usage("train: --comm-timeout must be a number of seconds > 0");
    return 0;
}

static int pick(const char *v, const char *const *names, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) return i;
    char msg[512];
    size_t len = (size_t)snprintf(msg, sizeof msg, "train: unknown %s '%s' (one of", what, v);
    for (int i = 0; i < n && len < sizeof msg - 40; i++)
        len += (size_t)snprintf(msg + len, sizeof msg - len, " %s", names[i]);
    snprintf(msg + len, sizeof msg - len, ")");
    cli_bad_usage(msg);
    return -1;
}

/* Algorithm mode: class labels when the model's target input ("label", or the one its
 * onnxgrad.loss_inputs metadata names: an export's) is int64. */
static bool target_is_int64(const og_model *m)
{
    for (int i = 0; i < og_model_input_count(m); i++) {
        og_dtype dt;
        int rank;
        int64_t dims[OG_MAX_RANK];
        if (strcmp(og_model_input_name(m, i), "label") == 0 &&
            og_model_input_info(m, i, &dt, &rank, dims, NULL) == OG_OK)
            return dt == OG_INT64;
    }
    return false;
}

/* OUT.onnx -> OUT<ext> */
static void sibling(const char *out, const char *ext, char *buf, size_t size)
{
    size_t n = strlen(out);
    if (n > 5 && strcmp(out + n - 5, ".onnx") == 0) n -= 5;
    snprintf(buf, size, "%.*s%s", (int)n, out, ext);
}

/* Can `path` be written?  A file is created and removed in its folder (what a read-only
 * folder, a full disk or missing permissions refuse), and path must not be a folder.
 * Checked for every file a run writes before it trains, so that it fails at once instead
 * of after its last epoch.  Exit status 1 with a message, or 0. */
static int check_writable(const char *path, const char *what)
{
    char probe[4096];
    struct stat sb;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 0;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "onnxgrad: %s '%s' is a folder\n", what, path);
        return 1;
    }
    if (snprintf(probe, sizeof probe, "%.*s%s.onnxgrad-probe-XXXXXX", dir_len, slash ? path : "",
                 slash ? "/" : "") >= (int)sizeof probe) {
        fprintf(stderr, "onnxgrad: %s '%s': path too long\n", what, path);
        return 1;
    }
    int fd = mkstemp(probe);
    if (fd < 0) {
        fprintf(stderr, "onnxgrad: cannot write %s '%s': %s (checked before training)\n", what,
                path, strerror(errno));
        return 1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* Parse and check the options into loss and optimizer settings; exit status or 0. */
static int configure(args *a, og_loss_options *lo, og_optimizer_options *oo)
{
    static const char *const losses[] = {"mse", "mae",           "elastic", "huber",
                                         "log", "cross-entropy", "nll",     "proba"};
    static const char *const optims[] = {"sgd", "momentum", "nesterov", "adam", "adamw", "adagrad"};
    static const char *const scheds[] = {"constant", "optimal", "invscaling",
                                         "linear",   "cosine",  "step"};
    int lk = a->loss ? pick(a->loss, losses, 8, "loss") : 0;
    int ok = pick(a->optimizer ? a->optimizer : "sgd", optims, 6, "optimizer");
    int sk = a->schedule ? pick(a->schedule, scheds, 6, "schedule") : 0;
    if (lk < 0 || ok < 0 || sk < 0) return 2;
    og_loss_options_init(lo, (og_loss_kind)lk);
    lo->output = a->model_output;
    lo->sample_weight_name = a->weight_column ? "sample_weight" : NULL;
    if (a->reduction) {
        static const char *const reds[] = {"mean", "sum"};
        int r = pick(a->reduction, reds, 2, "reduction");
        if (r < 0) return 2;
        lo->reduction = (og_reduction)r;
    }
    if (!isnan(a->l1_ratio)) lo->l1_ratio = a->l1_ratio;
    if (!isnan(a->delta)) lo->delta = a->delta;
    lo->l1 = isnan(a->l1) ? 0 : a->l1;
    lo->l2 = isnan(a->l2) ? 0 : a->l2;
    static const og_optimizer_kind kinds[] = {OG_OPTIMIZER_SGD,   OG_OPTIMIZER_SGD,
                                              OG_OPTIMIZER_SGD,   OG_OPTIMIZER_ADAM,
                                              OG_OPTIMIZER_ADAMW, OG_OPTIMIZER_ADAGRAD};
    og_optimizer_options_init(oo, kinds[ok]);
    if (ok == 1 || ok == 2) oo->momentum = 0.9;
    oo->nesterov = ok == 2 || a->nesterov;
#define SET(field)                                                                                 \
    if (!isnan(a->field)) oo->field = a->field
    SET(lr);
    SET(momentum);
    SET(beta1);
    SET(beta2);
    SET(eps);
    SET(weight_decay);
    SET(lr_decay);
    SET(clip_norm);
    SET(alpha);
    SET(power_t);
    SET(gamma);
    SET(min_lr);
#undef SET
    oo->schedule = (og_lr_schedule)sk;
    if (a->warmup >= 0) oo->warmup_steps = a->warmup;
    if (a->step_size > 0) oo->step_size = a->step_size;
    return 0;
}

/* Data-parallel: the communicator when an MPI launcher started this process with more
 * than one rank (NULL otherwise, and then everything runs as one process). */
static int open_comm(const args *a, og_comm **comm)
{
    *comm = NULL;
#ifdef OG_HAVE_MPI
    if (!og_mpi_launched()) return 0;
    og_mpi_options mo;
    memset(&mo, 0, sizeof mo);
    mo.timeout_s = isnan(a->comm_timeout) ? 0 : a->comm_timeout;
    if (og_mpi_comm_create(&mo, comm) != OG_OK) return cli_fail();
    if ((*comm)->size((*comm)->user) == 1) {
        og_mpi_comm_free(*comm); /* mpirun -np 1: a plain run */
        og_mpi_finalize();
        *comm = NULL;
    }
#else
    (void)a;
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK")) {
        const char *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (n && strcmp(n, "1") != 0) {
            fprintf(stderr, "onnxgrad: started by an MPI launcher, but this onnxgrad was built "
                            "without MPI: every rank would train alone (rebuild with "
                            "libopenmpi-dev installed)\n");
            return 2;
        }
    }
#endif
    return 0;
}

static void close_comm(og_comm *comm)
{
#ifdef OG_HAVE_MPI
    if (comm) {
        og_mpi_comm_free(comm);
        og_mpi_finalize();
    }
#else
    (void)comm;
#endif
}

/* The communicator's time per step, on rank 0 (stdout). */
static void print_comm(og_trainer *t, const args *a)
{
    og_comm_stats cs;
    if (og_trainer_comm_stats(t, &cs) != OG_OK || cs.ranks < 2 || cs.steps == 0) return;
    double per = 1e3 / (double)cs.steps, kb = cs.bytes / (double)cs.steps / 1e3;
    printf("data-parallel: %d ranks x batch %lld; %d gradient bucket%s, %.*f %s per step; "
           "communication %.2f ms per step, %.2f ms of it not hidden by the backward pass "
           "(step %.2f ms)%s%s\n",
           cs.ranks, (long long)a->batch_size, cs.buckets, cs.buckets == 1 ? "" : "s",
           kb < 1e3 ? 1 : 2, kb < 1e3 ? kb : kb / 1e3, kb < 1e3 ? "kB" : "MB", cs.comm_s * per,
           cs.exposed_s * per, cs.step_s * per,
           cs.sharded_steps == cs.steps ? "; sharded update (each rank updates 1/N)" : "",
           cs.shared_memory ? ", in shared memory" : "");
}

/* --loss nll takes log-probabilities: warn when the model's output on the first samples
 * is not (a positive value, or rows along axis 1 that sum to 1: probabilities).  Nothing is
 * said when the model cannot run on the features alone. */
static void warn_not_log_probs(const og_model *m, const char *output, const og_dataset *d)
{
    int64_t n = og_dataset_size(d) < 16 ? og_dataset_size(d) : 16, idx[16];
    og_session *s = NULL;
    og_tensor *x = NULL, *y = NULL, *yt = NULL;
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    const char *in = og_model_input_name(m, 0);
    const char *out = output ? output : og_model_output_name(m, 0);
    if (!in || !out || og_dataset_batch(d, idx, n, &x, &yt, NULL) ||
        og_session_create(m, NULL, &s) ||
        og_session_run_named(s, &in, (const og_tensor *const *)&x, 1, &out, 1, &y) ||
        og_tensor_rank(y) < 2 || og_tensor_dtype(y) != OG_FLOAT) {
        og_session_free(s);
        og_tensor_free(x);
        og_tensor_free(yt);
        og_tensor_free(y);
        return;
    }
    const float *v = og_tensor_cdata(y);
    const int64_t *dims = og_tensor_dims(y);
    int64_t rows = dims[0], c = dims[1], rc = rows * c;
    int64_t inner = rc > 0 ? og_tensor_numel(y) / rc : 0;
    bool positive = false, sums_to_one = rows * inner > 0;
    for (int64_t i = 0; i < og_tensor_numel(y); i++) positive = positive || v[i] > 0;
    for (int64_t r = 0; r < rows && sums_to_one; r++)
        for (int64_t k = 0; k < inner && sums_to_one; k++) {
            double sum = 0;
            for (int64_t j = 0; j < c; j++) sum += v[(r * c + j) * inner + k];
            sums_to_one = fabs(sum - 1) < 1e-3;
        }
    if (positive || sums_to_one)
        fprintf(stderr,
                "onnxgrad: warning: --loss nll takes log-probabilities, but output '%s' %s on "
                "the first samples: apply LogSoftmax in the model, or use --loss "
                "cross-entropy on logits\n",
                out,
                sums_to_one ? "sums to 1 along axis 1 (probabilities)" : "has positive values");
    og_session_free(s);
    og_tensor_free(x);
    og_tensor_free(yt);
    og_tensor_free(y);
}

int cli_train(int argc, char **argv)
{
    args a;
    memset(&a, 0, sizeof a);
    a.val_split = 0;
    a.lr = a.momentum = a.beta1 = a.beta2 = a.eps = a.weight_decay = a.lr_decay = NAN;
    a.clip_norm = a.alpha = a.power_t = a.gamma = a.min_lr = a.l1 = a.l2 = NAN;
    a.l1_ratio = a.delta = a.bucket_mb = a.comm_timeout = NAN;
    a.warmup = -1;
    a.epochs = 10;
    a.batch_size = 32;
    a.threads = 0;
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc;
    if (a.val_split < 0 || a.val_split >= 1)
        return cli_bad_usage("train: --val-split must be in [0, 1)");
    og_loss_options lo;
    og_optimizer_options oo;
    if ((rc = configure(&a, &lo, &oo))) return rc;
    bool algorithm = a.loss == NULL; /* the model's own TrainingInfoProto */
    bool classes = !algorithm && (lo.kind == OG_LOSS_CROSS_ENTROPY || lo.kind == OG_LOSS_NLL ||
                                  lo.kind == OG_LOSS_PROBA);
    og_comm *comm = NULL;
    if ((rc = open_comm(&a, &comm))) return rc;
    int rank = comm ? comm->rank(comm->user) : 0;

    og_model *m = NULL, *lm = NULL, *trained = NULL, *with_step = NULL;
    og_dataset *all = NULL, *train = NULL, *val = NULL, *val_owned = NULL;
    og_trainer *t = NULL;
    progress p;
    memset(&p, 0, sizeof p);
    rc = 1;
    og_data_options dopt;
    memset(&dopt, 0, sizeof dopt);
    dopt.delimiter = a.delimiter;
    dopt.no_header = a.no_header;
    dopt.targets = a.n_targets ? a.targets : NULL;
    dopt.n_targets = a.n_targets;
    dopt.features = a.n_features ? a.features : NULL;
    dopt.n_features = a.n_features;
    dopt.weight = a.weight_column;
    dopt.max_memory = a.max_memory;
    /* every file the run writes, checked before anything runs (rank 0 writes them; every
     * rank stops with it, below, through og_comm_agree) */
    og_status st = OG_OK;
    if (rank == 0) {
        char csv0[4096], svg0[4096];
        sibling(a.out, ".csv", csv0, sizeof csv0);
        sibling(a.out, ".svg", svg0, sizeof svg0);
        if (check_writable(a.out, "the output model") ||
            check_writable(a.history ? a.history : csv0, "the history") ||
            check_writable(a.plot ? a.plot : svg0, "the plot") ||
            (a.checkpoint && check_writable(a.checkpoint, "the checkpoint")) ||
            (a.export_training && check_writable(a.export_training, "the training model")))
            st = og_set_error(OG_ERR_IO, "train: an output cannot be written (nothing was run)");
    }
    /* Every rank reads the same files; what fails on one rank stops all of them together
     * (og_comm_agree), with that rank's message, printed once by rank 0. */
    bool usage = false;
    if (!st) st = og_model_load_file(a.model, NULL, &m);
    if (!st && algorithm) {
        if ((usage = og_model_training_info_count(m) == 0))
            st =
                og_set_error(OG_ERR_INVALID_ARG,
                             "train: --loss is required (mse, mae, elastic, huber, log, "
                             "cross-entropy, nll, proba) unless MODEL carries a TrainingInfoProto");
        classes = target_is_int64(m);
    }
    dopt.target_dtype = classes ? OG_INT64 : OG_FLOAT;
    if (!st) st = og_dataset_load(a.data, &dopt, NULL, &all);
    if (!st && a.val_data) {
        if (!(st = og_dataset_load(a.val_data, &dopt, NULL, &val_owned))) {
            val = val_owned;
            train = all;
        }
    } else if (!st && a.val_split > 0) {
        if (!(st = og_dataset_split(all, a.val_split, a.seed, &train, &val_owned))) val = val_owned;
    } else {
        train = all;
    }
    if (!st && !algorithm && lo.kind == OG_LOSS_NLL && rank == 0)
        warn_not_log_probs(m, lo.output, train);
    if (!st && !algorithm) st = og_model_add_loss(m, &lo, &lm);
    og_trainer_options to;
    memset(&to, 0, sizeof to);
    to.weights = a.n_weights ? a.weights : NULL;
    to.n_weights = a.n_weights;
    to.threads = a.threads;
    to.seed = a.seed;
    to.max_memory = a.max_memory;
    if (!st) st = og_trainer_create(algorithm ? m : lm, algorithm ? NULL : &oo, &to, &t);
    if (comm && (st = og_comm_agree(comm, st)) == OG_OK) {
        size_t bucket = isnan(a.bucket_mb) ? 0 : (size_t)fmax(1.0, a.bucket_mb * 1048576.0);
        st = og_trainer_set_comm(t, comm, bucket);
    }
    if (st && usage) {
        rc = rank == 0 ? cli_bad_usage(og_last_error()) : 2;
        goto cleanup;
    }
    if (st) goto done;
    og_fit_options fo;
    memset(&fo, 0, sizeof fo);
    fo.epochs = a.epochs;
    fo.batch_size = a.batch_size;
    fo.no_shuffle = a.no_shuffle;
    fo.validation = val;
    fo.checkpoint = a.checkpoint;
    fo.resume = a.resume;
    fo.callback = on_event;
    fo.user = &p;
    p.rank = rank;
    p.tty = rank == 0 && isatty(2);
    p.quiet = a.quiet || rank != 0;
    p.classes = classes;
    p.epochs = a.epochs;
    p.start = now_s();
    p.t = t;
    p.val = val;
    p.input = og_model_input_name(m, 0);
    st = og_trainer_fit(t, train, &fo);
    if (p.tty && !p.quiet) fputs("\r\033[K", stderr);
    if (rank != 0) { /* rank 0 reports and writes; the others only train */
        rc = st ? 1 : 0;
        goto cleanup;
    }
    if (p.st && !st) {
        fprintf(stderr, "onnxgrad: out of memory keeping the loss history\n");
        rc = 1;
        goto cleanup;
    }
    char csv[4096], svg[4096], title[512];
    sibling(a.out, ".csv", csv, sizeof csv);
    sibling(a.out, ".svg", svg, sizeof svg);
    int base = p.h.first;
    bool unwritten = false; /* a history or plot that could not be written: exit 1 at the end */
    if (algorithm)
        snprintf(title, sizeof title, "%s: its TrainingInfoProto", a.model);
    else
        snprintf(title, sizeof title, "%s: %s loss, %s", a.model, a.loss,
                 a.optimizer ? a.optimizer : "sgd");
    if (p.h.n > 0) {
        if (write_csv(a.history ? a.history : csv, &p.h, base) != 0) {
            fprintf(stderr, "onnxgrad: cannot write '%s': %s\n", a.history ? a.history : csv,
                    strerror(errno));
            unwritten = true;
        }
        if (write_svg(a.plot ? a.plot : svg, &p.h, base, title) != 0) {
            fprintf(stderr, "onnxgrad: cannot write '%s': %s\n", a.plot ? a.plot : svg,
                    strerror(errno));
            unwritten = true;
        }
    }
    if (st) {
        cli_fail();
        if (a.checkpoint && p.h.n > 0)
            fprintf(stderr, "onnxgrad: the checkpoint '%s' holds the last finished epoch\n",
                    a.checkpoint);
        rc = 1;
        goto cleanup;
    }
    if (og_trainer_export(t, algorithm ? m : NULL, &trained) || og_model_save_file(trained, a.out))
        goto done;
    if (a.export_training && (og_trainer_export_training_model(t, &with_step) ||
                              og_model_save_file(with_step, a.export_training)))
        goto done;
    if (unwritten) {
        rc = 1;
        goto cleanup;
    }
    if (!a.quiet) {
        printf("wrote %s (%lld steps), %s, %s\n", a.out, (long long)og_trainer_step_count(t),
               a.history ? a.history : csv, a.plot ? a.plot : svg);
        print_comm(t, &a);
    }
    rc = 0;
    goto cleanup;
done:
    rc = rc == 1 ? (rank == 0 ? cli_fail() : 1) : rc;
cleanup:
    free(p.h.train);
    free(p.h.val);
    free(p.h.acc);
    free(p.h.secs);
    og_model_free(trained);
    og_model_free(with_step);
    og_trainer_free(t);
    og_model_free(lm);
    og_model_free(m);
    if (train != all) og_dataset_free(train);
    og_dataset_free(all);
    og_dataset_free(val_owned);
    close_comm(comm);
    return rc;
}
