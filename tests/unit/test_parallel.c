/* test_parallel.c: data-parallel training over a communicator of threads, without MPI.
 *
 * Each "rank" is a thread with its own trainer; the communicator (below) exchanges data
 * through shared memory with two barriers per collective, and sums in rank order, so every
 * rank gets the same bits, as the og_comm contract asks.  Checked: N ranks x batch B train
 * to the same weights as one process with batches of N x B (1e-6 relative, summation order
 * aside), with sample weights and an uneven last batch; resuming on another N from a
 * checkpoint; a failing rank (a NaN sample in its part) stops every rank with its rank and
 * message; ranks that diverge fail the epoch-end hash check; bucket plans are compared;
 * og_comm_agree; collective og_trainer_step with identical batches equals a plain step bit
 * for bit.  BatchNormalization's running statistics (state, not weights) take rank 0's
 * after every step, as PyTorch's DistributedDataParallel broadcasts buffers: identical on
 * every rank, and those of rank 0's shard; Dropout draws other masks on other ranks (rank 0
 * the masks of one process).
 * The training runs are made twice: with a communicator of allreduce alone (every rank
 * applies the whole update) and with reduce_scatter and allgather too (og_trainer_fit
 * shards the update: each rank updates its part of the weights, then they are gathered). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>

#include "test.h"

#define MLP3     "tests/data/train/mlp3.onnx"
#define MLP3SQRT "tests/data/train/mlp3_sqrt.onnx"
#define BNDROP   "tests/data/train/mlp3_bn_dropout.onnx"
#define CKPT     ckpt_path /* og_test_out, set in main */
static char ckpt_path[512];
#define MAXRANKS 4

/* ---- a communicator of threads --------------------------------------------------- */

typedef struct shared {
    mtx_t m;
    cnd_t c;
    int size, waiting;
    unsigned long gen;
    const void *post[MAXRANKS];
} shared;

typedef struct tcomm {
    shared *sh;
    int rank;
    int corrupt; /* 1: this rank's float sums come out slightly off (to test the hash); 2: the
                  * first element of its reduce-scatter part comes out Inf */
    og_comm table;
    /* shared_alloc / shared_free (with_shared): the last block, its size, the calls */
    void *block;
    size_t block_bytes;
    int allocs, frees;
} tcomm;

static void barrier(shared *s)
{
    mtx_lock(&s->m);
    unsigned long gen = s->gen;
    if (++s->waiting == s->size) {
        s->waiting = 0;
        s->gen++;
        cnd_broadcast(&s->c);
    } else {
        while (gen == s->gen) cnd_wait(&s->c, &s->m);
    }
    mtx_unlock(&s->m);
}

static int t_rank(void *u) { return ((tcomm *)u)->rank; }
static int t_size(void *u) { return ((tcomm *)u)->sh->size; }

static og_status t_allreduce(void *u, void *data, int64_t count, og_dtype dt, og_comm_op op,
                             void **req)
{
    tcomm *c = u;
    shared *s = c->sh;
    size_t es = og_dtype_size(dt);
    void *acc = malloc((size_t)count * es + 1);
    if (!acc) return og_set_error(OG_ERR_NOMEM, "thread comm: out of memory");
    *req = NULL;
    s->post[c->rank] = data;
    barrier(s);
    for (int64_t i = 0; i < count; i++) {
        for (int r = 0; r < s->size; r++) {
            if (dt == OG_FLOAT) {
                float x = ((const float *)s->post[r])[i], *a = (float *)acc + i;
                *a = r == 0              ? x
                     : op == OG_COMM_SUM ? *a + x
                     : op == OG_COMM_MIN ? fminf(*a, x)
                                         : fmaxf(*a, x);
            } else if (dt == OG_DOUBLE) {
                double x = ((const double *)s->post[r])[i], *a = (double *)acc + i;
                *a = r == 0              ? x
                     : op == OG_COMM_SUM ? *a + x
                     : op == OG_COMM_MIN ? fmin(*a, x)
                                         : fmax(*a, x);
            } else {
                int64_t x = ((const int64_t *)s->post[r])[i], *a = (int64_t *)acc + i;
                *a = r == 0              ? x
                     : op == OG_COMM_SUM ? *a + x
                     : op == OG_COMM_MIN ? (x < *a ? x : *a)
                                         : (x > *a ? x : *a);
            }
        }
        if (c->corrupt && dt == OG_FLOAT) ((float *)acc)[i] *= 1.0001f;
    }
    barrier(s); /* everyone has read every post */
    memcpy(data, acc, (size_t)count * es);
    free(acc);
    return OG_OK;
}

static og_status t_wait(void *u, void *req) { return OG_OK; }

/* Rank r sums part r over the ranks, in rank order. */
static og_status t_reduce_scatter(void *u, const void *data, void *part, const int64_t *counts,
                                  og_dtype dt, void **req)
{
    tcomm *c = u;
    shared *s = c->sh;
    *req = NULL;
    int64_t lo = 0;
    for (int r = 0; r < c->rank; r++) lo += counts[r];
    s->post[c->rank] = data;
    barrier(s);
    for (int64_t i = 0; i < counts[c->rank]; i++) {
        if (dt == OG_FLOAT) {
            float a = 0;
            for (int r = 0; r < s->size; r++)
                a = r ? a + ((const float *)s->post[r])[lo + i]
                      : ((const float *)s->post[r])[lo + i];
            ((float *)part)[i] = a;
        } else {
            double a = 0;
            for (int r = 0; r < s->size; r++)
                a = r ? a + ((const double *)s->post[r])[lo + i]
                      : ((const double *)s->post[r])[lo + i];
            ((double *)part)[i] = a;
        }
    }
    if (c->corrupt == 2 && counts[c->rank] > 0) {
        if (dt == OG_FLOAT)
            ((float *)part)[0] = INFINITY;
        else
            ((double *)part)[0] = INFINITY;
    }
    barrier(s);
    return OG_OK;
}

/* Every rank copies the other ranks' parts; a corrupt rank gets float values slightly off. */
static og_status t_allgather(void *u, void *data, const int64_t *counts, og_dtype dt, void **req)
{
    tcomm *c = u;
    shared *s = c->sh;
    size_t es = og_dtype_size(dt);
    *req = NULL;
    s->post[c->rank] = data;
    barrier(s);
    int64_t lo = 0;
    for (int r = 0; r < s->size; r++) {
        if (r != c->rank) {
            memcpy((char *)data + (size_t)lo * es, (const char *)s->post[r] + (size_t)lo * es,
                   (size_t)counts[r] * es);
            for (int64_t i = 0; c->corrupt && dt == OG_FLOAT && i < counts[r]; i++)
                ((float *)data)[lo + i] *= 1.0001f;
        }
        lo += counts[r];
    }
    barrier(s);
    return OG_OK;
}

/* Whether the communicators of the training runs have reduce_scatter and allgather. */
static bool sharded;
static bool with_shared; /* the table has shared_alloc and shared_free (with sharded) */

/* Plain memory stands for shared memory here: t_reduce_scatter and t_allgather work on
 * whatever data they get; the trainer must keep its buckets in the block. */
static void *t_shared_alloc(void *u, size_t nbytes)
{
    tcomm *c = u;
    c->allocs++;
    c->block_bytes = nbytes;
    c->block = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    return c->block;
}

static void t_shared_free(void *u, void *block)
{
    tcomm *c = u;
    CHECK(block == c->block);
    c->frees++;
}

static og_status t_broadcast(void *u, void *data, size_t n, int root)
{
    tcomm *c = u;
    shared *s = c->sh;
    s->post[c->rank] = data;
    barrier(s);
    if (c->rank != root) memcpy(data, s->post[root], n);
    barrier(s);
    return OG_OK;
}

static void tcomm_init(tcomm *c, shared *sh, int rank)
{
    memset(c, 0, sizeof *c);
    c->sh = sh;
    c->rank = rank;
    c->table.user = c;
    c->table.rank = t_rank;
    c->table.size = t_size;
    c->table.allreduce = t_allreduce;
    c->table.wait = t_wait;
    c->table.broadcast = t_broadcast;
    if (sharded) {
        c->table.reduce_scatter = t_reduce_scatter;
        c->table.allgather = t_allgather;
        if (with_shared) {
            c->table.shared_alloc = t_shared_alloc;
            c->table.shared_free = t_shared_free;
        }
    }
}

/* ---- the training runs ------------------------------------------------------------ */

#define NS 70 /* samples: 70 = 5 x 12 + 10, an uneven last batch */
#define NF 4

typedef struct job {
    tcomm comm;
    const og_model *lm;
    const og_dataset *data, *val;
    og_optimizer_kind kind;
    int epochs, resume;
    int64_t batch;
    size_t bucket_bytes;
    const char *checkpoint, *weight_input;
    /* results */
    og_status st;
    char msg[1024];
    float w[4][32]; /* W1 4x8, B1 8, W2 8x3, B2 3 */
    og_comm_stats stats;
    double last_loss;
} job;

static const char *const WNAMES[4] = {"W1", "B1", "W2", "B2"};

static int on_event(void *user, const og_fit_event *e)
{
    job *j = user;
    if (e->epoch_end) j->last_loss = e->train_loss;
    return 0;
}

/* Train one rank (or a plain process when comm.sh is NULL). */
static int run_job(void *arg)
{
    job *j = arg;
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, j->kind);
    oo.lr = 0.05;
    if (j->kind == OG_OPTIMIZER_SGD) { /* with momentum and clipping (the norm is reduced) */
        oo.momentum = 0.9;
        oo.clip_norm = 0.5;
    }
    og_trainer_options to = {0};
    to.threads = 1;
    to.seed = 7;
    og_trainer *t = NULL;
    og_status st = og_trainer_create(j->lm, &oo, &to, &t);
    if (!st && j->comm.sh) st = og_trainer_set_comm(t, &j->comm.table, j->bucket_bytes);
    og_fit_options fo = {0};
    fo.epochs = j->epochs;
    fo.batch_size = j->batch;
    fo.validation = j->val;
    fo.checkpoint = j->checkpoint;
    fo.resume = j->resume;
    fo.weight_input = j->weight_input;
    fo.callback = on_event;
    fo.user = j;
    if (!st) st = og_trainer_fit(t, j->data, &fo);
    j->st = st;
    snprintf(j->msg, sizeof j->msg, "%s", st ? og_last_error() : "");
    for (int i = 0; !st && i < 4; i++) {
        const og_tensor *w = NULL;
        if (og_trainer_get_weight(t, WNAMES[i], &w) == OG_OK)
            memcpy(j->w[i], og_tensor_cdata(w), og_tensor_nbytes(w));
    }
    og_trainer_comm_stats(t, &j->stats);
    /* even ranks leave the communicator first; the others give the block back in
     * og_trainer_free */
    if (j->comm.sh && j->comm.rank % 2 == 0) og_trainer_set_comm(t, NULL, 0);
    og_trainer_free(t);
    return 0;
}

/* Run `n` ranks of `proto` (n == 0: one plain process) into jobs[0..]. */
static void run_ranks(const job *proto, int n, job *jobs, int corrupt_rank)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.size = n;
    mtx_init(&sh.m, mtx_plain);
    cnd_init(&sh.c);
    if (n == 0) {
        jobs[0] = *proto;
        run_job(&jobs[0]);
    } else {
        thrd_t th[MAXRANKS];
        for (int r = 0; r < n; r++) {
            jobs[r] = *proto;
            tcomm_init(&jobs[r].comm, &sh, r);
            jobs[r].comm.corrupt = r == corrupt_rank % 10 ? 1 + corrupt_rank / 10 : 0;
        }
        for (int r = 0; r < n; r++) thrd_create(&th[r], run_job, &jobs[r]);
        for (int r = 0; r < n; r++) thrd_join(th[r], NULL);
        for (int r = 0; r < n; r++) {
            tcomm *c = &jobs[r].comm;
            CHECK(c->allocs <= (sharded && with_shared ? 1 : 0));
            CHECK(c->frees == c->allocs); /* given back: set_comm(NULL) or og_trainer_free */
            free(c->block);
            c->block = NULL;
        }
    }
    cnd_destroy(&sh.c);
    mtx_destroy(&sh.m);
}

/* The largest relative difference of a weight tensor, |a - b| / |b| in L2 norm: float32
 * sums in another order differ by a few units in the last place per element. */
static double max_rel(const job *a, const job *b)
{
    static const int sizes[4] = {32, 8, 24, 3};
    double worst = 0;
    for (int i = 0; i < 4; i++) {
        double d2 = 0, n2 = 0;
        for (int k = 0; k < sizes[i]; k++) {
            double x = a->w[i][k], y = b->w[i][k];
            d2 += (x - y) * (x - y);
            n2 += y * y;
        }
        double r = sqrt(d2) / fmax(1e-30, sqrt(n2));
        if (r > worst) worst = r;
    }
    return worst;
}

/* nan_at >= 0: sample nan_at's first feature is NaN; zero_at >= 0: sample zero_at's
 * features are all 0 */
static og_dataset *make_data_z(int weighted, int nan_at, int zero_at)
{
    float x[NS * NF], w[NS];
    int64_t y[NS];
    for (int i = 0; i < NS; i++) {
        for (int k = 0; k < NF; k++) x[i * NF + k] = sinf((float)(i * 7 + k * 3)) * 1.5f;
        y[i] = (x[i * NF] + x[i * NF + 1] > 0) + (x[i * NF + 2] > 0.5f);
        w[i] = 0.5f + (float)(i % 5) * 0.25f;
    }
    if (nan_at >= 0) x[nan_at * NF] = NAN;
    for (int k = 0; zero_at >= 0 && k < NF; k++) x[zero_at * NF + k] = 0;
    int64_t xd[2] = {NS, NF}, n = NS;
    og_tensor *xt = NULL, *yt = NULL, *wt = NULL;
    og_dataset *d = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, xd, x, sizeof x, NULL, &xt));
    CHECK_OK(og_tensor_from_data(OG_INT64, 1, &n, y, sizeof y, NULL, &yt));
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 1, &n, w, sizeof w, NULL, &wt));
    CHECK_OK(og_dataset_from_tensors(xt, yt, weighted ? wt : NULL, NULL, &d));
    og_tensor_free(xt);
    og_tensor_free(yt);
    og_tensor_free(wt);
    return d;
}

/* reduction 0: mean; 1: sum; 2: sum with an L2 penalty */
static og_dataset *make_data(int weighted, int nan_at) { return make_data_z(weighted, nan_at, -1); }

static og_model *loss_model_r(int weighted, int reduction)
{
    og_model *m = NULL, *lm = NULL;
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_CROSS_ENTROPY);
    if (weighted) lo.sample_weight_name = "sw";
    if (reduction) lo.reduction = OG_REDUCTION_SUM;
    if (reduction == 2) lo.l2 = 0.01;
    CHECK_OK(og_model_load_file(MLP3, NULL, &m));
    CHECK_OK(og_model_add_loss(m, &lo, &lm));
    og_model_free(m);
    return lm;
}

static og_model *loss_model(int weighted) { return loss_model_r(weighted, 0); }

/* N ranks x batch 12/N against one process with batch 12. */
static void test_equal(int weighted, og_optimizer_kind kind)
{
    og_model *lm = loss_model(weighted);
    og_dataset *d = make_data(weighted, -1), *tr = NULL, *va = NULL;
    CHECK_OK(og_dataset_split(d, 0.2, 3, &tr, &va));
    job proto;
    memset(&proto, 0, sizeof proto);
    proto.lm = lm;
    proto.data = tr;
    proto.val = va;
    proto.kind = kind;
    proto.epochs = 4;
    proto.batch = 12;
    proto.weight_input = weighted ? "sw" : NULL;
    job single, ranks[MAXRANKS];
    run_ranks(&proto, 0, &single, -1);
    CHECK_OK(single.st);
    const int counts[3] = {2, 3, 4};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        proto.batch = 12 / n;
        proto.bucket_bytes = c == 1 ? 1 : 0; /* one bucket per weight, or one for all */
        run_ranks(&proto, n, ranks, -1);
        for (int r = 0; r < n; r++) {
            CHECK(ranks[r].st == OG_OK);
            if (ranks[r].st) fprintf(stderr, "rank %d: %s\n", r, ranks[r].msg);
            /* identical on every rank, bit for bit */
            CHECK(memcmp(ranks[r].w, ranks[0].w, sizeof ranks[0].w) == 0);
            CHECK(ranks[r].stats.ranks == n);
            CHECK(ranks[r].stats.buckets == (c == 1 ? 4 : 1));
            CHECK(ranks[r].stats.steps == 4 * 5); /* 56 samples: 5 batches of 12 */
            CHECK(ranks[r].stats.bytes == 4.0 * (32 + 8 + 24 + 3) * 20);
            CHECK(ranks[r].stats.sharded_steps == (sharded ? 20 : 0));
            /* buckets of 32, 8, 24 and 3 floats, each rounded up to 64 bytes, or one of 67 */
            CHECK(ranks[r].stats.shared_memory == (sharded && with_shared));
            CHECK(ranks[r].comm.allocs == (sharded && with_shared));
            if (ranks[r].comm.allocs) CHECK(ranks[r].comm.block_bytes == (c == 1 ? 384u : 320u));
        }
        double d1 = max_rel(&ranks[0], &single);
        printf("%d ranks (%s, %s%s): max relative weight difference %.3g, train loss %.9g / "
               "%.9g\n",
               n, weighted ? "weighted" : "unweighted",
               kind == OG_OPTIMIZER_ADAM      ? "adam"
               : kind == OG_OPTIMIZER_ADAGRAD ? "adagrad"
                                              : "sgd",
               sharded ? ", sharded" : "", d1, ranks[0].last_loss, single.last_loss);
        CHECK(d1 < 1e-6);
        CHECK(fabs(ranks[0].last_loss - single.last_loss) <= 1e-6 * fabs(single.last_loss));
    }
    og_dataset_free(tr);
    og_dataset_free(va);
    og_dataset_free(d);
    og_model_free(lm);
}

/* 2 ranks write a checkpoint after 2 epochs; 3 ranks (and 1 process) resume to 4: the
 * same weights as 4 uninterrupted epochs. */
static void test_resume(void)
{
    og_model *lm = loss_model(0);
    og_dataset *d = make_data(0, -1);
    job proto, single, ranks[MAXRANKS], resumed[MAXRANKS];
    memset(&proto, 0, sizeof proto);
    proto.lm = lm;
    proto.data = d;
    proto.kind = OG_OPTIMIZER_ADAM;
    proto.epochs = 4;
    proto.batch = 12;
    run_ranks(&proto, 0, &single, -1);
    for (int target = 0; target < 2; target++) {
        remove(CKPT);
        proto.checkpoint = CKPT;
        proto.epochs = 2;
        proto.batch = 6;
        run_ranks(&proto, 2, ranks, -1);
        CHECK(ranks[0].st == OG_OK && ranks[1].st == OG_OK);
        proto.resume = 1;
        proto.epochs = 4;
        int n = target ? 3 : 0;
        proto.batch = target ? 4 : 12;
        run_ranks(&proto, n, resumed, -1);
        CHECK(resumed[0].st == OG_OK);
        double dr = max_rel(&resumed[0], &single);
        printf("resumed on %d: max relative weight difference %.3g\n", n ? n : 1, dr);
        CHECK(dr < 1e-6);
        proto.resume = 0;
    }
    remove(CKPT);
    og_dataset_free(d);
    og_model_free(lm);
}

/* 70 samples in global batches of 4 x 17 = 68: the last batch's 2 samples leave two ranks
 * without any (they join the reductions with share 0). */
static void test_empty_parts(void)
{
    og_model *lm = loss_model(0);
    og_dataset *d = make_data(0, -1);
    job proto, single, ranks[MAXRANKS];
    memset(&proto, 0, sizeof proto);
    proto.lm = lm;
    proto.data = d;
    proto.kind = OG_OPTIMIZER_ADAM;
    proto.epochs = 3;
    proto.batch = 68;
    run_ranks(&proto, 0, &single, -1);
    proto.batch = 17;
    run_ranks(&proto, 4, ranks, -1);
    for (int r = 0; r < 4; r++) CHECK(ranks[r].st == OG_OK && ranks[r].stats.steps == 6);
    double dr = max_rel(&ranks[0], &single);
    printf("4 ranks, empty parts in the last batch: max relative weight difference %.3g\n", dr);
    CHECK(dr < 1e-6);
    og_dataset_free(d);
    og_model_free(lm);
}

/* A loss summed over samples: every rank's gradient counts whole (share 1); with a
 * penalty, refused (each rank would add it). */
static void test_sum(void)
{
    og_dataset *d = make_data(0, -1);
    for (int red = 1; red <= 2; red++) {
        og_model *lm = loss_model_r(0, red);
        job proto, single, ranks[MAXRANKS];
        memset(&proto, 0, sizeof proto);
        proto.lm = lm;
        proto.data = d;
        proto.kind = OG_OPTIMIZER_SGD;
        proto.epochs = 2;
        proto.batch = 12;
        run_ranks(&proto, 0, &single, -1);
        proto.batch = 6;
        run_ranks(&proto, 2, ranks, -1);
        if (red == 1) {
            CHECK(single.st == OG_OK && ranks[0].st == OG_OK && ranks[1].st == OG_OK);
            double dr = max_rel(&ranks[0], &single);
            printf("2 ranks, summed loss: max relative weight difference %.3g\n", dr);
            CHECK(dr < 1e-6);
        } else {
            CHECK(single.st == OG_OK);
            for (int r = 0; r < 2; r++) {
                CHECK(ranks[r].st == OG_ERR_UNSUPPORTED);
                CHECK(strstr(ranks[r].msg, "every rank would add the penalty") != NULL);
            }
        }
        og_model_free(lm);
    }
    og_dataset_free(d);
}

/* Two ranks of lm on d, batches of 6 (corrupt: as run_ranks), into ranks[0..1]. */
static void run_pair(og_model *lm, og_dataset *d, og_optimizer_kind kind, int epochs, int corrupt,
                     job *ranks)
{
    job proto;
    memset(&proto, 0, sizeof proto);
    proto.lm = lm;
    proto.data = d;
    proto.kind = kind;
    proto.epochs = epochs;
    proto.batch = 6;
    run_ranks(&proto, 2, ranks, corrupt);
}

/* A NaN sample stops both ranks with the same message, naming the rank whose part held it
 * (the shuffle decides which). */
static void test_failure(void)
{
    og_model *lm = loss_model(0);
    og_dataset *d = make_data(0, 20);
    job ranks[MAXRANKS];
    run_pair(lm, d, OG_OPTIMIZER_SGD, 1, -1, ranks);
    for (int r = 0; r < 2; r++) {
        CHECK(ranks[r].st == OG_ERR_RUNTIME);
        CHECK(strstr(ranks[r].msg, "rank ") != NULL);
        CHECK(strstr(ranks[r].msg, "this rank's batch") != NULL);
        CHECK(strcmp(ranks[r].msg, ranks[0].msg) == 0);
    }
    printf("failure: %s\n", ranks[0].msg);
    og_dataset_free(d);
    og_model_free(lm);
}

/* A gradient that is NaN on one rank's batch while the loss is finite (mlp3_sqrt: a sample
 * of zeros makes S's gradient 0 * Inf): both ranks stop with the same message, naming the
 * rank, the weight and its batch, whether the rank looks before the reduction (replicated)
 * or after it, in its own bucket (sharded: its gradients are computed there and kept). */
static void test_grad_nan(void)
{
    og_model *m = NULL, *lm = NULL;
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_CROSS_ENTROPY);
    CHECK_OK(og_model_load_file(MLP3SQRT, NULL, &m));
    CHECK_OK(og_model_add_loss(m, &lo, &lm));
    og_dataset *d = make_data_z(0, -1, 17);
    job ranks[MAXRANKS];
    run_pair(lm, d, OG_OPTIMIZER_ADAM, 1, -1, ranks);
    for (int r = 0; r < 2; r++) {
        CHECK(ranks[r].st == OG_ERR_RUNTIME);
        CHECK(strstr(ranks[r].msg, "rank ") != NULL);
        CHECK(strstr(ranks[r].msg, "the gradient of weight 'S' holds NaN or Inf on this rank's "
                                   "batch (loss ") != NULL);
        CHECK(strcmp(ranks[r].msg, ranks[0].msg) == 0);
    }
    printf("gradient NaN: %s\n", ranks[0].msg);
    og_dataset_free(d);
    og_model_free(lm);
    og_model_free(m);
}

/* Sharded: a reduced part that is not finite while no rank's own gradients are (two finite
 * values can sum to Inf; here rank 1's communicator makes one) stops both ranks with the
 * message of the rank that found it, naming the weight. */
static void test_part_inf(void)
{
    og_model *lm = loss_model(0);
    og_dataset *d = make_data(0, -1);
    job ranks[MAXRANKS];
    run_pair(lm, d, OG_OPTIMIZER_SGD, 1, 11, ranks); /* rank 1, corrupt mode 2 */
    for (int r = 0; r < 2; r++) {
        CHECK(ranks[r].st == OG_ERR_RUNTIME);
        CHECK(strstr(ranks[r].msg, "rank 1: step 1: the gradient of weight '") != NULL);
        CHECK(strstr(ranks[r].msg, "' holds NaN or Inf (loss ") != NULL);
        CHECK(strstr(ranks[r].msg, "this rank's batch") == NULL);
    }
    printf("reduced part Inf: %s\n", ranks[0].msg);
    og_dataset_free(d);
    og_model_free(lm);
}

/* A communicator whose sums differ on rank 1: the hash check at the first epoch end. */
static void test_diverged(void)
{
    og_model *lm = loss_model(0);
    og_dataset *d = make_data(0, -1);
    job ranks[MAXRANKS];
    run_pair(lm, d, OG_OPTIMIZER_SGD, 2, 1, ranks);
    for (int r = 0; r < 2; r++) {
        CHECK(ranks[r].st == OG_ERR_RUNTIME);
        CHECK(strstr(ranks[r].msg, "rank 1: after epoch 1") != NULL);
        CHECK(strstr(ranks[r].msg, "diverged") != NULL);
    }
    printf("diverged: %s\n", ranks[0].msg);
    og_dataset_free(d);
    og_model_free(lm);
}

/* ---- single collective calls ------------------------------------------------------- */

typedef struct call {
    tcomm comm;
    const og_model *lm;
    int which;
    og_status st;
    char msg[1024];
    float w[4][32];
} call;

static int run_call(void *arg)
{
    call *c = arg;
    const og_comm *comm = &c->comm.table;
    int rank = c->comm.rank;
    if (c->which == 0) { /* agree: rank 1 fails */
        og_status local = rank == 1 ? og_set_error(OG_ERR_IO, "cannot read shard 1") : OG_OK;
        c->st = og_comm_agree(comm, local);
    } else if (c->which == 2) { /* og_comm_allreduce and og_comm_broadcast */
        float f[3] = {0.5f * (float)(rank + 1), -1.0f, (float)rank};
        int64_t i[2] = {rank, -rank};
        double d[1] = {rank == 0 ? 7.25 : 0.0};
        c->st = og_comm_allreduce(comm, f, 3, OG_FLOAT, OG_COMM_SUM);
        if (!c->st) c->st = og_comm_allreduce(comm, i, 2, OG_INT64, OG_COMM_MAX);
        if (!c->st) c->st = og_comm_allreduce(comm, NULL, 0, OG_DOUBLE, OG_COMM_MIN);
        if (!c->st) c->st = og_comm_broadcast(comm, d, sizeof d, 0);
        /* bad arguments fail before communicating: the ranks stay in step */
        if (!c->st &&
            (og_comm_allreduce(comm, f, 1, OG_INT32, OG_COMM_SUM) != OG_ERR_INVALID_ARG ||
             og_comm_allreduce(comm, f, -1, OG_FLOAT, OG_COMM_SUM) != OG_ERR_INVALID_ARG ||
             og_comm_allreduce(comm, NULL, 2, OG_FLOAT, OG_COMM_SUM) != OG_ERR_INVALID_ARG ||
             og_comm_allreduce(comm, f, 1, OG_FLOAT, (og_comm_op)7) != OG_ERR_INVALID_ARG ||
             og_comm_broadcast(comm, d, sizeof d, 2) != OG_ERR_INVALID_ARG ||
             og_comm_broadcast(comm, NULL, 8, 0) != OG_ERR_INVALID_ARG))
            c->st = og_set_error(OG_ERR_INTERNAL, "a bad argument was accepted");
        if (!c->st) c->st = og_comm_allreduce(comm, i, 1, OG_INT64, OG_COMM_SUM);
        memcpy(c->w[0], f, sizeof f);
        c->w[1][0] = (float)i[0];
        c->w[1][1] = (float)i[1];
        c->w[1][2] = (float)d[0];
    } else { /* set_comm with another bucket size on rank 1; then identical steps */
        og_optimizer_options oo;
        og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
        og_trainer_options to = {0};
        to.threads = 1;
        og_trainer *t = NULL;
        c->st = og_trainer_create(c->lm, &oo, &to, &t);
        if (!c->st) c->st = og_trainer_set_comm(t, comm, rank == 1 ? 1 : 0);
        if (c->st == OG_ERR_RUNTIME) { /* expected: now agree on one plan */
            snprintf(c->msg, sizeof c->msg, "%s", og_last_error());
            c->st = og_trainer_set_comm(t, comm, 64);
            float xv[5 * NF];
            int64_t yv[5] = {0, 1, 2, 1, 0}, xd[2] = {5, NF}, n = 5;
            for (int i = 0; i < 5 * NF; i++) xv[i] = cosf((float)i);
            og_tensor *in[2] = {NULL, NULL};
            og_tensor_from_data(OG_FLOAT, 2, xd, xv, sizeof xv, NULL, &in[0]);
            og_tensor_from_data(OG_INT64, 1, &n, yv, sizeof yv, NULL, &in[1]);
            const char *names[2] = {"X", "label"};
            for (int s = 0; !c->st && s < 3; s++)
                c->st = og_trainer_step(t, names, (const og_tensor *const *)in, 2, NULL);
            for (int i = 0; !c->st && i < 4; i++) {
                const og_tensor *w = NULL;
                og_trainer_get_weight(t, WNAMES[i], &w);
                memcpy(c->w[i], og_tensor_cdata(w), og_tensor_nbytes(w));
            }
            if (rank == 0 && !c->st) { /* the same steps without a communicator */
                og_trainer *p = NULL;
                og_trainer_create(c->lm, &oo, &to, &p);
                for (int s = 0; s < 3; s++)
                    og_trainer_step(p, names, (const og_tensor *const *)in, 2, NULL);
                for (int i = 0; i < 4; i++) {
                    const og_tensor *w = NULL;
                    og_trainer_get_weight(p, WNAMES[i], &w);
                    if (memcmp(c->w[i], og_tensor_cdata(w), og_tensor_nbytes(w)) != 0)
                        c->st = og_set_error(OG_ERR_INTERNAL, "collective steps differ");
                }
                og_trainer_free(p);
            }
            og_tensor_free(in[0]);
            og_tensor_free(in[1]);
        } else {
            c->st = og_set_error(OG_ERR_INTERNAL, "mismatched bucket plans were accepted");
        }
        og_trainer_free(t);
        return 0;
    }
    snprintf(c->msg, sizeof c->msg, "%s", og_last_error());
    return 0;
}

static void test_calls(void)
{
    og_model *lm = loss_model(0);
    for (int which = 0; which < 3; which++) {
        shared sh;
        memset(&sh, 0, sizeof sh);
        sh.size = 2;
        mtx_init(&sh.m, mtx_plain);
        cnd_init(&sh.c);
        call calls[2];
        thrd_t th[2];
        for (int r = 0; r < 2; r++) {
            memset(&calls[r], 0, sizeof calls[r]);
            tcomm_init(&calls[r].comm, &sh, r);
            calls[r].lm = lm;
            calls[r].which = which;
            thrd_create(&th[r], run_call, &calls[r]);
        }
        for (int r = 0; r < 2; r++) thrd_join(th[r], NULL);
        for (int r = 0; r < 2; r++) {
            if (which == 0) {
                CHECK(calls[r].st == OG_ERR_IO);
                CHECK(strcmp(calls[r].msg, "rank 1: cannot read shard 1") == 0);
            } else if (which == 2) {
                CHECK_OK(calls[r].st);
                if (calls[r].st) fprintf(stderr, "rank %d: %s\n", r, calls[r].msg);
                /* sums 0.5 + 1, -1 - 1, 0 + 1; max of (0, 1) then the sum 1 + 1; max of
                 * (0, -1); rank 0's 7.25 */
                CHECK(calls[r].w[0][0] == 1.5f && calls[r].w[0][1] == -2.0f &&
                      calls[r].w[0][2] == 1.0f);
                CHECK(calls[r].w[1][0] == 2.0f && calls[r].w[1][1] == 0.0f &&
                      calls[r].w[1][2] == 7.25f);
            } else {
                CHECK_OK(calls[r].st);
                if (calls[r].st) fprintf(stderr, "rank %d: %s\n", r, og_last_error());
                CHECK(strstr(calls[r].msg, "gradient buckets differ from rank 0's") != NULL);
                CHECK(memcmp(calls[r].w, calls[0].w, sizeof calls[0].w) == 0);
            }
        }
        cnd_destroy(&sh.c);
        mtx_destroy(&sh.m);
    }
    og_model_free(lm);
}

/* Arguments: bad tables, algorithm mode. */
static void test_args(void)
{
    og_model *lm = loss_model(0);
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    og_trainer *t = NULL;
    CHECK_OK(og_trainer_create(lm, &oo, NULL, &t));
    og_comm empty = {0};
    CHECK(og_trainer_set_comm(t, &empty, 0) == OG_ERR_INVALID_ARG);
    CHECK(og_trainer_set_comm(NULL, &empty, 0) == OG_ERR_INVALID_ARG);
    CHECK(og_comm_agree(NULL, OG_OK) == OG_ERR_INVALID_ARG);
    float f = 1.0f;
    CHECK(og_comm_allreduce(NULL, &f, 1, OG_FLOAT, OG_COMM_SUM) == OG_ERR_INVALID_ARG);
    CHECK(og_comm_allreduce(&empty, &f, 1, OG_FLOAT, OG_COMM_SUM) == OG_ERR_INVALID_ARG);
    CHECK(og_comm_broadcast(NULL, &f, sizeof f, 0) == OG_ERR_INVALID_ARG);
    CHECK_OK(og_trainer_set_comm(t, NULL, 0)); /* detaching without a communicator */
    og_comm_stats s;
    CHECK_OK(og_trainer_comm_stats(t, &s));
    CHECK(s.ranks == 0 && s.steps == 0);
    CHECK(og_trainer_comm_stats(t, NULL) == OG_ERR_INVALID_ARG);
    /* reduce_scatter without allgather: refused before communicating */
    shared sh1;
    memset(&sh1, 0, sizeof sh1);
    sh1.size = 1;
    tcomm half;
    tcomm_init(&half, &sh1, 0);
    half.table.reduce_scatter = t_reduce_scatter;
    half.table.allgather = NULL;
    CHECK(og_trainer_set_comm(t, &half.table, 0) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "both or neither") != NULL);
    og_trainer_free(t);
    og_model *ti = NULL;
    CHECK_OK(og_model_load_file("tests/data/train/linreg_momentum_ti.onnx", NULL, &ti));
    CHECK_OK(og_trainer_create(ti, NULL, NULL, &t));
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.size = 1;
    tcomm c;
    tcomm_init(&c, &sh, 0);
    CHECK(og_trainer_set_comm(t, &c.table, 0) == OG_ERR_UNSUPPORTED);
    og_trainer_free(t);
    og_model_free(ti);
    og_model_free(lm);
}

/* ---- BatchNormalization statistics and Dropout masks -------------------------------- */

typedef struct bnjob {
    tcomm comm;
    const og_model *m, *lm;
    const og_tensor *x, *y; /* this rank's batch */
    int steps;
    og_status st;
    char msg[512];
    float stats[2][8]; /* bn_mean, bn_var after the steps */
    float w1[32];
    double loss; /* the first step's */
} bnjob;

/* `steps` steps on this rank's batch (collective when comm.sh is set), then the running
 * statistics of the exported model. */
static int run_bn(void *arg)
{
    bnjob *j = arg;
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    oo.lr = 0.05;
    og_trainer_options to = {0};
    to.threads = 1;
    to.seed = 11;
    og_trainer *t = NULL;
    og_model *out = NULL;
    og_status st = og_trainer_create(j->lm, &oo, &to, &t);
    if (!st && j->comm.sh) st = og_trainer_set_comm(t, &j->comm.table, 0);
    const char *names[2] = {"X", "label"};
    const og_tensor *in[2] = {j->x, j->y};
    for (int s = 0; !st && s < j->steps; s++)
        st = og_trainer_step(t, names, in, 2, s == 0 ? &j->loss : NULL);
    if (!st) st = og_trainer_export(t, j->m, &out);
    for (int i = 0; !st && i < og_model_initializer_count(out); i++) {
        const char *n = og_model_initializer_name(out, i);
        int k = strcmp(n, "bn_mean") == 0 ? 0 : strcmp(n, "bn_var") == 0 ? 1 : -1;
        if (k >= 0) memcpy(j->stats[k], og_tensor_cdata(og_model_initializer(out, i)), 32);
    }
    const og_tensor *w = NULL;
    if (!st && !(st = og_trainer_get_weight(t, "W1", &w)))
        memcpy(j->w1, og_tensor_cdata(w), sizeof j->w1);
    j->st = st;
    snprintf(j->msg, sizeof j->msg, "%s", st ? og_last_error() : "");
    og_model_free(out);
    og_trainer_free(t);
    return 0;
}

static void run_bn_ranks(bnjob *jobs, int n)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.size = n;
    mtx_init(&sh.m, mtx_plain);
    cnd_init(&sh.c);
    thrd_t th[MAXRANKS];
    for (int r = 0; r < n; r++) tcomm_init(&jobs[r].comm, &sh, r);
    for (int r = 0; r < n; r++) thrd_create(&th[r], run_bn, &jobs[r]);
    for (int r = 0; r < n; r++) thrd_join(th[r], NULL);
    cnd_destroy(&sh.c);
    mtx_destroy(&sh.m);
}

static og_tensor *rows(const float *x, const int64_t *y, int64_t from, int64_t n, og_tensor **yt)
{
    int64_t xd[2] = {n, NF};
    og_tensor *xt = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, xd, x + from * NF, (size_t)(n * NF) * sizeof *x, NULL,
                                 &xt));
    CHECK_OK(og_tensor_from_data(OG_INT64, 1, &n, y + from, (size_t)n * sizeof *y, NULL, yt));
    return xt;
}

static void test_bn_dropout(void)
{
    og_model *m = NULL, *lm = NULL;
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_CROSS_ENTROPY);
    CHECK_OK(og_model_load_file(BNDROP, NULL, &m));
    CHECK_OK(og_model_add_loss(m, &lo, &lm));
    if (!lm) {
        og_model_free(m);
        return;
    }
    float x[24 * NF];
    int64_t y[24];
    for (int i = 0; i < 24; i++) {
        for (int k = 0; k < NF; k++) x[i * NF + k] = sinf((float)(i * 5 + k * 3)) * 1.5f + 0.3f * k;
        y[i] = i % 3;
    }
    og_tensor *yt[4] = {NULL, NULL, NULL, NULL}, *xt[4];
    xt[0] = rows(x, y, 0, 12, &yt[0]);  /* rank 0's shard */
    xt[1] = rows(x, y, 12, 12, &yt[1]); /* rank 1's shard */
    /* 2 ranks, different shards, 3 steps */
    bnjob r2[2], one;
    memset(r2, 0, sizeof r2);
    for (int r = 0; r < 2; r++) {
        r2[r].m = m;
        r2[r].lm = lm;
        r2[r].x = xt[r];
        r2[r].y = yt[r];
        r2[r].steps = 3;
    }
    run_bn_ranks(r2, 2);
    for (int r = 0; r < 2; r++) {
        CHECK_OK(r2[r].st);
        if (r2[r].st) fprintf(stderr, "rank %d: %s\n", r, r2[r].msg);
    }
    /* the statistics are state: identical on both ranks, and moved from (0, 1) */
    CHECK(memcmp(r2[0].stats, r2[1].stats, sizeof r2[0].stats) == 0);
    CHECK(memcmp(r2[0].w1, r2[1].w1, sizeof r2[0].w1) == 0);
    double moved = 0;
    for (int c = 0; c < 8; c++) moved += fabs(r2[0].stats[0][c]) + fabs(r2[0].stats[1][c] - 1.0f);
    CHECK(isfinite(moved) && moved > 1e-3);
    /* they are rank 0's: after one step (same weights everywhere before it), the statistics
     * of one process on rank 0's shard alone, bit for bit */
    bnjob s1[2];
    memset(s1, 0, sizeof s1);
    for (int r = 0; r < 2; r++) {
        s1[r] = r2[r];
        s1[r].steps = 1;
    }
    run_bn_ranks(s1, 2);
    memset(&one, 0, sizeof one);
    one.m = m;
    one.lm = lm;
    one.x = xt[0];
    one.y = yt[0];
    one.steps = 1;
    run_bn(&one);
    CHECK_OK(one.st);
    CHECK_OK(s1[1].st);
    CHECK(memcmp(s1[1].stats, one.stats, sizeof one.stats) == 0);
    /* Dropout: both ranks given rank 0's batch.  Rank 0 draws the masks of one process (its
     * own loss would be one's), rank 1 others: the global loss (the mean of both) is not
     * one process's, and the weights are not those of one process's step. */
    bnjob same[2];
    memset(same, 0, sizeof same);
    for (int r = 0; r < 2; r++) {
        same[r] = s1[r];
        same[r].x = xt[0];
        same[r].y = yt[0];
    }
    run_bn_ranks(same, 2);
    CHECK_OK(same[0].st);
    CHECK_OK(same[1].st);
    printf("dropout: loss of one process %.9g, of 2 ranks given its batch %.9g\n", one.loss,
           same[0].loss);
    CHECK(same[0].loss == same[1].loss);
    CHECK(fabs(same[0].loss - one.loss) > 1e-6 * fabs(one.loss));
    CHECK(memcmp(same[0].w1, one.w1, sizeof one.w1) != 0);
    for (int r = 0; r < 2; r++) {
        og_tensor_free(xt[r]);
        og_tensor_free(yt[r]);
    }
    og_model_free(lm);
    og_model_free(m);
}

int main(void)
{
    og_test_out(ckpt_path, sizeof ckpt_path, "test_parallel.ckpt");
    test_args();
    test_calls();
    for (int k = 0; k < 3; k++) {
        sharded = k >= 1;
        with_shared = k == 2;
        printf("-- %s update%s\n", sharded ? "sharded" : "replicated",
               with_shared ? ", buckets in the communicator's shared_alloc block" : "");
        test_equal(0, OG_OPTIMIZER_SGD);
        test_equal(1, OG_OPTIMIZER_ADAM);
        test_equal(0, OG_OPTIMIZER_ADAGRAD);
        test_resume();
        test_empty_parts();
        test_sum();
        test_failure();
        test_grad_nan();
        if (sharded) test_part_inf();
        test_diverged();
        test_bn_dropout();
    }
    TEST_DONE();
}
