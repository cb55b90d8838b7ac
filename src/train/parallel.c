/* parallel.c: data-parallel training over a communicator (og_comm, include/onnxgrad.h).
 *
 * Every rank holds the whole model and runs forward and backward on its own part of the
 * global batch.  The weights' gradients are summed across ranks in buckets: the bucket plan
 * (og_trainer_set_comm) orders the weights by the training-graph node that produces their
 * gradient, and packs them into buckets of about bucket_bytes, one dtype each.  While the
 * backward half runs, each gradient is computed in its bucket (the executor's place hook;
 * the ready hook copies one only when its node cannot write there), already times the rank's
 * share of the global batch (the gradient seed is the share, not 1: the backward pass is
 * linear in it); a bucket whose every gradient has arrived starts its
 * reduction at once (buckets start in plan order, the same on every rank), and the
 * after-node hook lets started reductions progress, so that communication overlaps the rest
 * of the backward pass.  Then one small reduction sums the losses and counts the failing
 * ranks; when one failed, og_comm_agree tells every rank which and why, and nobody updates.
 * Otherwise every rank applies the same update to the same reduced gradients, so the
 * weights stay identical (og_dp_check_hash proves it at epoch ends).
 *
 * Sharded update (inside og_trainer_fit, when the communicator has reduce_scatter and
 * allgather): each bucket is cut into N near-equal contiguous parts, one per rank; its
 * reduction is a reduce-scatter that leaves rank r the sum of part r only, rank r updates
 * the weights' elements of part r (and their optimizer state: the update is element-wise),
 * and an allgather of every bucket's updated parts gives every rank all the new weights, the
 * same bits everywhere (each element computed once).  As much communication as an allreduce,
 * and each rank does 1/N of the update.  Clipping's norm is the sum of the parts' sums of
 * squares, reduced with the losses.  The optimizer state of the other parts goes stale on
 * each rank; og_dp_gather_state gathers it (at epoch ends, before the hash check and the
 * checkpoint, and when fit returns), so that checkpoints and the trainer hold all of it.
 *
 * The math: for a loss that averages over samples, the global batch's gradient is
 * g = sum_r (W_r / W) g_r, with W_r the sample weight of rank r's part and g_r the gradient
 * of its part's mean loss; for a summed loss, g = sum_r g_r.  Either way sum_r share_r g_r.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "train/trainer.h"

#define DEFAULT_BUCKET_BYTES ((size_t)4 << 20)

typedef struct bucket {
    og_dtype dtype;
    int64_t count; /* elements */
    void *data;    /* count elements, 64-byte aligned */
    int n_items;   /* weights in it */
    int arrived;   /* of which this step's gradient is in */
    void *req;     /* the started reduction, NULL once complete */
    int first;     /* its weights: dp->order[first .. first + n_items), by offset */
    /* sharded update: rank r's part is counts[r] elements, after those of ranks < r */
    int64_t *counts;
    int64_t lo; /* this rank's part starts here */
    void *part; /* the reduced gradient of this rank's part */
} bucket;

struct og_dp {
    const og_comm *comm;
    int rank, size;
    int n_buckets;
    bucket *buckets;
    int *bucket_of;     /* per weight */
    int64_t *offset_of; /* per weight: its first element in its bucket */
    int *order;         /* the weights in plan order */
    int first_grad;     /* og_grad_run's result index of weight 0's gradient */
    bool can_shard;     /* the communicator has reduce_scatter and allgather */
    bool in_fit;        /* inside og_trainer_fit: steps shard the update when they can */
    bool stale;         /* optimizer state outside this rank's parts is stale */
    bool shard;         /* this step shards its update */
    void *shared;       /* the communicator's shared block holding the buckets' data, or NULL */
    og_tensor *seed;    /* the loss's gradient seed: the rank's share */
    /* this step */
    double share;
    int next_start; /* first bucket not started */
    int oldest;     /* first bucket not known to be complete */
    int bad_weight; /* first weight whose gradient here is not finite, -1 */
    og_status comm_st;
    og_comm_stats stats;
};

static double now_s(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int og_dp_rank(const og_trainer *t) { return t && t->dp ? t->dp->rank : 0; }
int og_dp_size(const og_trainer *t) { return t && t->dp ? t->dp->size : 1; }

static void dp_destroy(const og_allocator *a, og_dp *dp)
{
    if (!dp) return;
    if (dp->shared) dp->comm->shared_free(dp->comm->user, dp->shared);
    for (int b = 0; dp->buckets && b < dp->n_buckets; b++) {
        if (!dp->shared) og_free_aligned(a, dp->buckets[b].data);
        og_free_aligned(a, dp->buckets[b].part);
        og_free(a, dp->buckets[b].counts);
    }
    og_free(a, dp->buckets);
    og_free(a, dp->order);
    og_free(a, dp->bucket_of);
    og_free(a, dp->offset_of);
    og_tensor_free(dp->seed);
    og_free(a, dp);
}

void og_dp_free(og_trainer *t)
{
    dp_destroy(t->a, t->dp);
    t->dp = NULL;
}

/* ---- communicator calls: a failure leaves the ranks out of step ----------------------- */

/* After a failed communicator call: prefix the message with this rank, ask the
 * communicator to stop every rank, and return the status (abort may not return). */
static og_status comm_failed(const og_comm *c, og_status st, const char *what)
{
    int rank = c->rank(c->user);
    og_error_prefix(st, "rank %d: communicator failed in %s", rank, what);
    if (c->abort) c->abort(c->user, og_last_error());
    return st;
}

/* A blocking reduction: start and wait. */
static og_status reduce_now(const og_comm *c, void *data, int64_t count, og_dtype dtype,
                            og_comm_op op, const char *what)
{
    void *req = NULL;
    og_status st = c->allreduce(c->user, data, count, dtype, op, &req);
    if (!st && req) st = c->wait(c->user, req);
    return st ? comm_failed(c, st, what) : OG_OK;
}

static og_status broadcast(const og_comm *c, void *data, size_t n, int root, const char *what)
{
    og_status st = c->broadcast(c->user, data, n, root);
    return st ? comm_failed(c, st, what) : OG_OK;
}

static og_status check_comm(const og_comm *c, const char *fn)
{
    if (!c || !c->rank || !c->size || !c->allreduce || !c->wait || !c->broadcast)
        return og_error(OG_ERR_INVALID_ARG,
                        "%s: the communicator table lacks rank, size, allreduce, wait or "
                        "broadcast",
                        fn);
    int rank = c->rank(c->user), size = c->size(c->user);
    if (size < 1 || rank < 0 || rank >= size)
        return og_error(OG_ERR_INVALID_ARG, "%s: the communicator says rank %d of %d", fn, rank,
                        size);
    if (!c->shared_alloc != !c->shared_free)
        return og_error(OG_ERR_INVALID_ARG,
                        "%s: the communicator table has %s but not %s (both or neither)", fn,
                        c->shared_alloc ? "shared_alloc" : "shared_free",
                        c->shared_alloc ? "shared_free" : "shared_alloc");
    if (!c->reduce_scatter != !c->allgather)
        return og_error(OG_ERR_INVALID_ARG,
                        "%s: the communicator table has %s but not %s (both or neither)", fn,
                        c->reduce_scatter ? "reduce_scatter" : "allgather",
                        c->reduce_scatter ? "allgather" : "reduce_scatter");
    return OG_OK;
}

/* The status and message that travel from the failing rank to the others. */
typedef struct failure {
    int32_t status;
    char message[1020];
} failure;

og_status og_comm_agree(const og_comm *c, og_status local)
{
    og_status st = check_comm(c, "og_comm_agree");
    if (st) return st;
    failure f;
    memset(&f, 0, sizeof f);
    f.status = (int32_t)local;
    if (local) snprintf(f.message, sizeof f.message, "%s", og_last_error());
    int rank = c->rank(c->user);
    int64_t first = local ? rank : INT64_MAX;
    if ((st = reduce_now(c, &first, 1, OG_INT64, OG_COMM_MIN, "agreeing on a failure"))) return st;
    if (first == INT64_MAX) return OG_OK;
    if ((st = broadcast(c, &f, sizeof f, (int)first, "agreeing on a failure"))) return st;
    f.message[sizeof f.message - 1] = '\0';
    og_status agreed =
        f.status > 0 && f.status <= OG_ERR_INTERNAL ? (og_status)f.status : OG_ERR_RUNTIME;
    return og_error(agreed, "rank %lld: %s", (long long)first, f.message);
}

og_status og_comm_allreduce(const og_comm *c, void *data, int64_t count, og_dtype dtype,
                            og_comm_op op)
{
    og_status st = check_comm(c, "og_comm_allreduce");
    if (st) return st;
    if (count < 0 || (count > 0 && !data))
        return og_error(OG_ERR_INVALID_ARG, "og_comm_allreduce: %lld elements at %p",
                        (long long)count, data);
    if (dtype != OG_FLOAT && dtype != OG_DOUBLE && dtype != OG_INT64)
        return og_error(OG_ERR_INVALID_ARG,
                        "og_comm_allreduce: dtype %s (float, double or int64 only)",
                        og_dtype_name(dtype));
    if (op != OG_COMM_SUM && op != OG_COMM_MIN && op != OG_COMM_MAX)
        return og_error(OG_ERR_INVALID_ARG, "og_comm_allreduce: op %d", (int)op);
    return count ? reduce_now(c, data, count, dtype, op, "og_comm_allreduce") : OG_OK;
}

og_status og_comm_broadcast(const og_comm *c, void *data, size_t nbytes, int root)
{
    og_status st = check_comm(c, "og_comm_broadcast");
    if (st) return st;
    int size = c->size(c->user);
    if (root < 0 || root >= size || (nbytes > 0 && !data))
        return og_error(OG_ERR_INVALID_ARG,
                        "og_comm_broadcast: root %d of %d ranks, %zu bytes at %p", root, size,
                        nbytes, data);
    return nbytes ? broadcast(c, data, nbytes, root, "og_comm_broadcast") : OG_OK;
}

og_status og_dp_sum(og_trainer *t, double *v, int n, og_status local)
{
    if (!t->dp) return local;
    const og_comm *c = t->dp->comm;
    /* one reduction carries the values and the count of failing ranks */
    double buf[8];
    if (n > 7) return og_error(OG_ERR_INTERNAL, "og_dp_sum: %d values", n);
    for (int i = 0; i < n; i++) buf[i] = local ? 0.0 : v[i];
    buf[n] = local ? 1.0 : 0.0;
    og_status st = reduce_now(c, buf, n + 1, OG_DOUBLE, OG_COMM_SUM, "a reduction");
    if (st) return st;
    if (buf[n] > 0) return og_comm_agree(c, local ? local : OG_OK);
    for (int i = 0; i < n; i++) v[i] = buf[i];
    return OG_OK;
}

og_status og_dp_agree(og_trainer *t, og_status local)
{
    return t->dp ? og_comm_agree(t->dp->comm, local) : local;
}

og_status og_dp_sync_sizes(og_trainer *t, int64_t *v)
{
    if (!t->dp) return OG_OK;
    return broadcast(t->dp->comm, v, 2 * sizeof *v, 0, "comparing dataset sizes");
}

og_status og_dp_max(og_trainer *t, int64_t *v)
{
    if (!t->dp) return OG_OK;
    return reduce_now(t->dp->comm, v, 1, OG_INT64, OG_COMM_MAX, "a reduction");
}

/* ---- the bucket plan ------------------------------------------------------------------- */

/* A 64-bit hash of plans and weights: FNV-1a steps over 8-byte words in four independent
 * lanes (32-byte blocks: the multiplications of one lane do not wait for another's), folded
 * together with the tail bytes. */
static uint64_t hash_words(uint64_t h, const void *data, size_t n)
{
    const uint64_t prime = 0x100000001b3ull;
    const unsigned char *p = data;
    uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        for (int k = 0; k < 4; k++) lane[k] = (lane[k] ^ w[k]) * prime;
    }
    for (int k = 0; k < 4; k++) h = (h ^ lane[k]) * prime;
    for (; i < n; i++) h = (h ^ p[i]) * prime;
    return (h ^ (uint64_t)n) * prime;
}

/* Weights in the order the training graph produces their gradients: by producer node,
 * then by index (a gradient nothing produces, a constant, comes first). */
static void plan_order(const og_trainer *t, int *order)
{
    const og_grad *g = t->grad;
    const og_graph *tg = og_grad_training_model(g)->graph;
    int first = g->n_outputs + g->n_inputs;
    for (int i = 0; i < t->n_weights; i++) order[i] = i;
    /* insertion sort: weights are few next to the nodes that made the graph */
    for (int i = 1; i < t->n_weights; i++) {
        int w = order[i], pw = tg->values[g->out_values[first + w]].producer;
        int k = i;
        while (k > 0) {
            int u = order[k - 1], pu = tg->values[g->out_values[first + u]].producer;
            if (pu < pw || (pu == pw && u < w)) break;
            order[k] = u;
            k--;
        }
        order[k] = w;
    }
}

static og_status build_plan(og_trainer *t, const og_comm *c, size_t bucket_bytes, og_dp **out)
{
    const og_allocator *a = t->a;
    int nw = t->n_weights;
    og_dp *dp = og_calloc(a, 1, sizeof *dp);
    int *order = dp ? og_calloc(a, (size_t)nw + 1, sizeof *order) : NULL;
    if (!order) goto nomem;
    dp->order = order;
    dp->comm = c;
    dp->rank = c->rank(c->user);
    dp->size = c->size(c->user);
    dp->first_grad = t->grad->n_outputs + t->grad->n_inputs;
    dp->bucket_of = og_calloc(a, (size_t)nw + 1, sizeof *dp->bucket_of);
    dp->offset_of = og_calloc(a, (size_t)nw + 1, sizeof *dp->offset_of);
    dp->buckets = og_calloc(a, (size_t)nw + 1, sizeof *dp->buckets);
    if (!dp->bucket_of || !dp->offset_of || !dp->buckets) goto nomem;
    plan_order(t, order);
    size_t in_bucket = 0;
    for (int k = 0; k < nw; k++) {
        int i = order[k];
        const og_tensor *w = t->w[i];
        bucket *b = dp->n_buckets ? &dp->buckets[dp->n_buckets - 1] : NULL;
        if (!b || b->dtype != w->dtype || in_bucket >= bucket_bytes) {
            b = &dp->buckets[dp->n_buckets++];
            b->dtype = w->dtype;
            b->first = k;
            in_bucket = 0;
        }
        dp->bucket_of[i] = (int)(b - dp->buckets);
        dp->offset_of[i] = b->count;
        b->count += w->numel;
        b->n_items++;
        in_bucket += og_tensor_nbytes(w);
    }
    /* sharding needs both functions, more than one rank, and parts an MPI count holds */
    dp->can_shard = c->reduce_scatter && c->allgather && dp->size > 1;
    for (int b = 0; b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        size_t es = og_dtype_size(bk->dtype), n = (size_t)bk->count * es;
        bk->data = og_malloc_aligned(a, n ? n : 1);
        if (!bk->data) goto nomem;
        if (bk->count > INT32_MAX) dp->can_shard = false;
    }
    for (int b = 0; dp->can_shard && b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        bk->counts = og_calloc(a, (size_t)dp->size, sizeof *bk->counts);
        if (!bk->counts) goto nomem;
        int64_t per = bk->count / dp->size, extra = bk->count % dp->size, lo = 0;
        for (int r = 0; r < dp->size; r++) {
            bk->counts[r] = per + (r < extra);
            if (r == dp->rank) bk->lo = lo;
            lo += bk->counts[r];
        }
        size_t n = (size_t)bk->counts[dp->rank] * og_dtype_size(bk->dtype);
        bk->part = og_malloc_aligned(a, n ? n : 1);
        if (!bk->part) goto nomem;
    }
    if (og_tensor_clone(t->seed, a, &dp->seed)) goto nomem;
    dp->stats.ranks = dp->size;
    dp->stats.buckets = dp->n_buckets;
    *out = dp;
    return OG_OK;
nomem:
    dp_destroy(a, dp);
    return og_error(OG_ERR_NOMEM, "out of memory planning the gradient buckets");
}

/* A bucket's bytes rounded up to 64, its place in a shared block. */
static size_t padded_bytes(const bucket *b)
{
    return ((size_t)b->count * og_dtype_size(b->dtype) + 63) / 64 * 64;
}

/* Move the buckets' data into one block of the communicator's shared memory (collective),
 * where its reduce_scatter and allgather work in place; they stay where they are when it
 * has none. */
static void use_shared(const og_allocator *a, og_dp *dp)
{
    size_t total = 0;
    for (int b = 0; b < dp->n_buckets; b++) total += padded_bytes(&dp->buckets[b]);
    char *block = dp->comm->shared_alloc(dp->comm->user, total);
    if (!block) return;
    dp->shared = block;
    dp->stats.shared_memory = 1;
    for (int b = 0; b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        og_free_aligned(a, bk->data);
        bk->data = block;
        block += padded_bytes(bk);
    }
}

static uint64_t plan_hash(const og_dp *dp)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int64_t head[3] = {dp->n_buckets, dp->size, dp->can_shard};
    h = hash_words(h, head, sizeof head);
    for (int b = 0; b < dp->n_buckets; b++) {
        int64_t v[3] = {dp->buckets[b].dtype, dp->buckets[b].count, dp->buckets[b].n_items};
        h = hash_words(h, v, sizeof v);
    }
    return h;
}

og_status og_trainer_set_comm(og_trainer *t, const og_comm *comm, size_t bucket_bytes)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_set_comm: NULL trainer");
    if (!comm) {
        og_dp_free(t);
        return OG_OK;
    }
    og_status st = check_comm(comm, "og_trainer_set_comm");
    if (st) return st;
    if (t->algo)
        return og_error(OG_ERR_UNSUPPORTED,
                        "og_trainer_set_comm: this trainer runs the model's TrainingInfoProto, "
                        "whose algorithm updates the weights itself: there is no gradient to "
                        "reduce across ranks (train with a loss and an optimizer instead)");
    og_dp *dp = NULL;
    if ((st = build_plan(t, comm, bucket_bytes ? bucket_bytes : DEFAULT_BUCKET_BYTES, &dp)))
        return st;
    /* every rank must cut the same buckets, or the reductions would not match */
    uint64_t mine = plan_hash(dp), root = mine;
    if ((st = broadcast(comm, &root, sizeof root, 0, "comparing bucket plans"))) goto fail;
    og_status local = OG_OK;
    if (root != mine)
        local = og_error(OG_ERR_RUNTIME,
                         "its gradient buckets differ from rank 0's (%d buckets of %d weights%s): "
                         "every rank must load the same model, weights and bucket size, and "
                         "use the same communicator",
                         dp->n_buckets, t->n_weights, dp->can_shard ? ", sharded update" : "");
    if ((st = og_comm_agree(comm, local))) goto fail;
    if (dp->can_shard && comm->shared_alloc) use_shared(t->a, dp);
    og_dp_free(t);
    t->dp = dp;
    return OG_OK;
fail:
    dp_destroy(t->a, dp);
    return st;
}

og_status og_trainer_comm_stats(const og_trainer *t, og_comm_stats *out)
{
    if (!t || !out) return og_error(OG_ERR_INVALID_ARG, "og_trainer_comm_stats: NULL argument");
    memset(out, 0, sizeof *out);
    if (t->dp) *out = t->dp->stats;
    return OG_OK;
}

/* ---- the step -------------------------------------------------------------------------- */

/* Start, in plan order, every bucket whose gradients have all arrived. */
static og_status start_full(og_dp *dp)
{
    const og_comm *c = dp->comm;
    while (dp->next_start < dp->n_buckets) {
        bucket *b = &dp->buckets[dp->next_start];
        if (b->arrived < b->n_items) break;
        double t0 = now_s();
        og_status st =
            dp->shard ? c->reduce_scatter(c->user, b->data, b->part, b->counts, b->dtype, &b->req)
                      : c->allreduce(c->user, b->data, b->count, b->dtype, OG_COMM_SUM, &b->req);
        dp->stats.comm_s += now_s() - t0;
        if (st) return comm_failed(c, st, "starting a gradient reduction");
        dp->stats.bytes += (double)b->count * (double)og_dtype_size(b->dtype);
        dp->next_start++;
    }
    return OG_OK;
}

/* Where weight j - first_grad's gradient goes in its bucket (NULL: j is the loss). */
static void *grad_slot(og_trainer *t, int j, bucket **b)
{
    og_dp *dp = t->dp;
    int i = j - dp->first_grad;
    if (i < 0 || i >= t->n_weights) return NULL;
    *b = &dp->buckets[dp->bucket_of[i]];
    return (char *)(*b)->data + (size_t)dp->offset_of[i] * og_dtype_size((*b)->dtype);
}

/* The executor's place hook: a weight's gradient is computed in its bucket, when the
 * update is sharded.  A reduce-scatter only reads the bucket, while the backward pass may
 * still read the value placed there (a gradient shared with an input's, or viewed by the
 * weight's); an allreduce sums in place, so without sharding gradients are copied. */
static void *on_place(void *user, int j, og_dtype dtype, int rank, const int64_t *dims)
{
    og_trainer *t = user;
    if (!t->dp->shard) return NULL;
    bucket *b;
    void *dst = grad_slot(t, j, &b);
    int64_t n;
    if (!dst || dtype != b->dtype || !og_shape_numel(rank, dims, &n) ||
        n != t->w[j - t->dp->first_grad]->numel)
        return NULL; /* the ready hook says what is wrong */
    return dst;
}

/* The executor's ready hook: weight i's gradient is in its bucket (copied there unless
 * computed there).  Without a sharded update, a reduction sums in place: a value that is
 * not finite is looked for here, before the sum hides whose it was (sharded, after it:
 * local_bad). */
static og_status on_ready(void *user, int j, const og_tensor *g)
{
    og_trainer *t = user;
    og_dp *dp = t->dp;
    bucket *b;
    void *dst = grad_slot(t, j, &b);
    if (!dst) return OG_OK; /* the loss */
    int i = j - dp->first_grad;
    if (g->dtype != b->dtype || g->numel != t->w[i]->numel)
        return og_error(OG_ERR_INTERNAL,
                        "the gradient of weight '%s' is %s of %lld values, "
                        "the weight %s of %lld",
                        og_grad_weight_name(t->grad, i), og_dtype_name(g->dtype),
                        (long long)g->numel, og_dtype_name(b->dtype), (long long)t->w[i]->numel);
    if (g->data != dst) memcpy(dst, g->data, og_tensor_nbytes(g));
    if (!dp->shard && dp->bad_weight < 0 && !og_optim_finite(b->dtype, dst, g->numel))
        dp->bad_weight = i;
    b->arrived++;
    og_status st = start_full(dp);
    if (st) dp->comm_st = st;
    return st;
}

/* The after-node hook: let the oldest unfinished reduction progress (an MPI engine moves
 * non-blocking collectives forward only inside its calls). */
static og_status on_node(void *user)
{
    og_trainer *t = user;
    og_dp *dp = t->dp;
    const og_comm *c = dp->comm;
    while (dp->oldest < dp->next_start) {
        bucket *b = &dp->buckets[dp->oldest];
        if (b->req) {
            int done = 0;
            double t0 = now_s();
            og_status st = c->test(c->user, b->req, &done);
            dp->stats.comm_s += now_s() - t0;
            if (st) return dp->comm_st = comm_failed(c, st, "testing a gradient reduction");
            if (!done) break;
            b->req = NULL;
        }
        dp->oldest++;
    }
    return OG_OK;
}

/* ---- the sharded update ----------------------------------------------------------------- */

/* Weight i's tensor (k < 0) or its optimizer slot k. */
static og_tensor *state_tensor(const og_trainer *t, int i, int k)
{
    return k < 0 ? t->w[i] : t->slots[i * t->n_slots + k];
}

/* Whether weight dp->order[k] of bucket b overlaps this rank's part; if so its index *i,
 * where the overlap starts in the weight (*off) and in the part (*at), and its length. */
static bool overlap(const og_trainer *t, const og_dp *dp, const bucket *b, int k, int *i,
                    int64_t *off, int64_t *at, int64_t *n)
{
    const int64_t plo = b->lo, phi = plo + b->counts[dp->rank];
    *i = dp->order[k];
    const int64_t wlo = dp->offset_of[*i], whi = wlo + t->w[*i]->numel;
    const int64_t lo = wlo > plo ? wlo : plo, hi = whi < phi ? whi : phi;
    if (lo >= hi) return false;
    *off = lo - wlo;
    *at = lo - plo;
    *n = hi - lo;
    return true;
}

/* Copy this rank's part of tensor k (state_tensor) of bucket b's weights into the bucket. */
static void pack_part(const og_trainer *t, const og_dp *dp, bucket *b, int k)
{
    const size_t es = og_dtype_size(b->dtype);
    char *data = b->data;
    for (int j = b->first; j < b->first + b->n_items; j++) {
        int i;
        int64_t off, at, n;
        if (!overlap(t, dp, b, j, &i, &off, &at, &n)) continue;
        memcpy(data + (size_t)(off + dp->offset_of[i]) * es,
               (const char *)state_tensor(t, i, k)->data + (size_t)off * es, (size_t)n * es);
    }
}

/* Copy the other ranks' parts of the bucket back into tensor k of its weights (this rank's
 * part of them is what it packed). */
static void unpack_all(og_trainer *t, const og_dp *dp, const bucket *b, int k)
{
    const size_t es = og_dtype_size(b->dtype);
    const int64_t plo = b->lo, phi = plo + b->counts[dp->rank];
    for (int j = b->first; j < b->first + b->n_items; j++) {
        int i = dp->order[j];
        og_tensor *x = state_tensor(t, i, k);
        const int64_t wlo = dp->offset_of[i], whi = wlo + x->numel;
        const char *src = (const char *)b->data;
        char *dst = x->data;                        /* bucket element e is dst[e - wlo] */
        int64_t a = wlo, z = whi < plo ? whi : plo; /* before this rank's part */
        if (a < z) memcpy(dst + (size_t)(a - wlo) * es, src + (size_t)a * es, (size_t)(z - a) * es);
        a = wlo > phi ? wlo : phi; /* after it */
        if (a < whi)
            memcpy(dst + (size_t)(a - wlo) * es, src + (size_t)a * es, (size_t)(whi - a) * es);
    }
}

/* Start gathering bucket b's parts on every rank. */
static og_status start_gather(og_dp *dp, bucket *b)
{
    const og_comm *c = dp->comm;
    double t0 = now_s();
    og_status st = c->allgather(c->user, b->data, b->counts, b->dtype, &b->req);
    dp->stats.comm_s += now_s() - t0;
    return st ? comm_failed(c, st, "starting a gather of the updated weights") : OG_OK;
}

/* Complete bucket b's started collective. */
static og_status finish(og_dp *dp, bucket *b, const char *what)
{
    const og_comm *c = dp->comm;
    if (!b->req) return OG_OK;
    double t0 = now_s();
    og_status st = c->wait(c->user, b->req);
    dp->stats.comm_s += now_s() - t0;
    b->req = NULL;
    return st ? comm_failed(c, st, what) : OG_OK;
}

/* This rank's parts of the reduced gradients: the sum of their squares (for clipping) and
 * the first weight with a value that is not finite there (-1 when none). */
static double part_sumsq(const og_trainer *t, const og_dp *dp, int *bad)
{
    double s = 0;
    *bad = -1;
    const bool clip = t->opt.clip_norm > 0;
    for (int b = 0; b < dp->n_buckets; b++) {
        const bucket *bk = &dp->buckets[b];
        const size_t es = og_dtype_size(bk->dtype);
        for (int j = bk->first; j < bk->first + bk->n_items; j++) {
            int i;
            int64_t off, at, n;
            if (!overlap(t, dp, bk, j, &i, &off, &at, &n)) continue;
            const void *g = (const char *)bk->part + (size_t)at * es;
            if (clip) {
                double q = og_optim_sumsq(bk->dtype, g, n, og_trainer_update_threads(t),
                                          og_exec_workers(t->grad->session));
                if (!isfinite(q) && *bad < 0) *bad = i;
                s += q;
            } else if (*bad < 0 && !og_optim_finite(bk->dtype, g, n)) {
                *bad = i;
            }
        }
    }
    return s;
}

/* The first weight whose gradient on this rank's batch (its bucket, which a reduce-scatter
 * leaves as it was) holds a value that is not finite, -1 when none. */
static int local_bad(const og_trainer *t, const og_dp *dp)
{
    for (int k = 0; k < t->n_weights; k++) {
        int i = dp->order[k];
        const bucket *b = &dp->buckets[dp->bucket_of[i]];
        const void *g = (const char *)b->data + (size_t)dp->offset_of[i] * og_dtype_size(b->dtype);
        if (!og_optim_finite(b->dtype, g, t->w[i]->numel)) return i;
    }
    return -1;
}

/* Update this rank's parts of every weight from the reduced parts, then gather each
 * bucket's updated weights on every rank: the next bucket is updated while the gather of
 * the last one runs. */
static og_status shard_update(og_trainer *t, double sumsq)
{
    og_dp *dp = t->dp;
    const og_comm *c = dp->comm;
    const double gscale = og_trainer_gscale(t, sumsq), lr = og_optimizer_lr(&t->opt, t->step);
    const int threads = og_trainer_update_threads(t);
    og_status st = OG_OK;
    for (int b = 0; b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        const size_t es = og_dtype_size(bk->dtype);
        for (int j = bk->first; j < bk->first + bk->n_items; j++) {
            int i;
            int64_t off, at, n;
            if (!overlap(t, dp, bk, j, &i, &off, &at, &n)) continue;
            void *slots[2] = {NULL, NULL};
            for (int q = 0; q < t->n_slots; q++)
                slots[q] = (char *)state_tensor(t, i, q)->data + (size_t)off * es;
            og_optim_update(&t->opt, t->step, lr, gscale, bk->dtype,
                            (char *)t->w[i]->data + (size_t)off * es,
                            (const char *)bk->part + (size_t)at * es, slots, n, threads,
                            og_exec_workers(t->grad->session));
        }
        pack_part(t, dp, bk, -1);
        if ((st = start_gather(dp, bk))) return st;
        if (c->test && b > 0 && dp->buckets[b - 1].req) { /* let the last gather progress */
            int done = 0;
            double t0 = now_s();
            st = c->test(c->user, dp->buckets[b - 1].req, &done);
            dp->stats.comm_s += now_s() - t0;
            if (st) return comm_failed(c, st, "testing a gather of the updated weights");
            if (done) dp->buckets[b - 1].req = NULL;
        }
    }
    for (int b = 0; b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        if ((st = finish(dp, bk, "gathering the updated weights"))) return st;
        unpack_all(t, dp, bk, -1);
    }
    if (t->n_slots) dp->stale = true;
    og_trainer_end_update(t);
    return OG_OK;
}

og_status og_dp_gather_state(og_trainer *t)
{
    og_dp *dp = t->dp;
    if (!dp || !dp->stale) return OG_OK;
    og_status st = OG_OK;
    for (int k = 0; k < t->n_slots && !st; k++) {
        for (int b = 0; b < dp->n_buckets && !st; b++) {
            bucket *bk = &dp->buckets[b];
            pack_part(t, dp, bk, k);
            if (!(st = start_gather(dp, bk)) &&
                !(st = finish(dp, bk, "gathering the optimizer state")))
                unpack_all(t, dp, bk, k);
        }
    }
    if (!st) dp->stale = false;
    return st;
}

void og_dp_fit_begin(og_trainer *t)
{
    if (t->dp) t->dp->in_fit = true;
}

og_status og_dp_fit_end(og_trainer *t, og_status st)
{
    if (!t->dp) return st;
    og_status g = og_dp_gather_state(t);
    t->dp->in_fit = false;
    return st ? st : g;
}

uint64_t og_dp_dropout_seed(uint64_t seed, int rank)
{
    if (rank == 0) return seed; /* one rank draws as one process */
    uint64_t x = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)rank);
    return og_splitmix64(&x);
}

/* Rank 0's running statistics of BatchNormalization go to every rank, after each step (as
 * PyTorch's DistributedDataParallel broadcasts buffers): each rank's own are those of its
 * shard alone, and ranks must hold the same model for the epoch-end hash, evaluation and
 * rank 0's checkpoints.  One broadcast of all of them packed together. */
static og_status sync_bn_stats(og_trainer *t)
{
    og_dp *dp = t->dp;
    size_t n = 0;
    for (int k = 0; k < t->n_bn; k++)
        n += og_tensor_nbytes(t->bn[k].tm) + og_tensor_nbytes(t->bn[k].tv);
    if (!n) return OG_OK;
    char *buf = og_malloc(t->a, n);
    og_status st = og_comm_agree(dp->comm, buf ? OG_OK : og_error(OG_ERR_NOMEM, "out of memory"));
    if (st) goto done;
    size_t o = 0;
    for (int k = 0; k < t->n_bn; k++) {
        og_tensor *two[2] = {t->bn[k].tm, t->bn[k].tv};
        for (int j = 0; j < 2; j++) {
            memcpy(buf + o, two[j]->data, og_tensor_nbytes(two[j]));
            o += og_tensor_nbytes(two[j]);
        }
    }
    if ((st = broadcast(dp->comm, buf, n, 0, "sending rank 0's running statistics"))) goto done;
    o = 0;
    for (int k = 0; k < t->n_bn; k++) {
        og_bn_stat *s = &t->bn[k];
        og_tensor *two[2] = {s->tm, s->tv}, *ev[2] = {s->em, s->ev};
        for (int j = 0; j < 2; j++) {
            size_t b = og_tensor_nbytes(two[j]);
            memcpy(two[j]->data, buf + o, b);
            if (ev[j] && og_tensor_nbytes(ev[j]) == b) memcpy(ev[j]->data, buf + o, b);
            o += b;
        }
    }
done:
    og_free(t->a, buf);
    return st;
}

og_status og_dp_step(og_trainer *t, const char *const *input_names, const og_tensor *const *inputs,
                     int n_inputs, double share, og_status local, double *loss)
{
    og_dp *dp = t->dp;
    const og_comm *c = dp->comm;
    double t0 = now_s();
    og_status st = OG_OK;
    og_tensor *out = NULL;
    double value = 0;
    if (loss) *loss = NAN;
    dp->share = share;
    dp->shard = dp->can_shard && dp->in_fit;
    dp->next_start = dp->oldest = 0;
    dp->bad_weight = -1;
    dp->comm_st = OG_OK;
    for (int b = 0; b < dp->n_buckets; b++) {
        dp->buckets[b].arrived = 0;
        dp->buckets[b].req = NULL;
    }
    if (!local && (!isfinite(share) || share < 0))
        local = og_error(OG_ERR_INVALID_ARG,
                         "og_trainer_step_shard: share %g is not a finite "
                         "number >= 0",
                         share);
    for (int k = 0; k < 3 * t->n_bn; k++) og_tensor_free(t->bn_vals[k]), t->bn_vals[k] = NULL;
    if (!local && (n_inputs > 0 || share > 0)) {
        og_exec_hooks hooks = {t, on_ready, c->test ? on_node : NULL, on_place};
        const og_tensor *seeds[1] = {dp->seed};
        if (dp->seed->dtype == OG_FLOAT)
            *(float *)dp->seed->data = (float)share;
        else
            *(double *)dp->seed->data = share;
        local = og_session_set_rng(t->grad->session, og_dp_dropout_seed(t->dropout_seed, dp->rank),
                                   (uint64_t)t->step);
        if (!local)
            local = og_grad_run_full(t->grad, input_names, inputs, n_inputs, seeds, &out, t->grads,
                                     t->bn_extra, 3 * t->n_bn, t->bn_vals, &hooks);
        if (dp->comm_st) {
            st = dp->comm_st;
            goto done;
        }
        if (!local) {
            value = og_trainer_scalar(out);
            if (!isfinite(value))
                local = og_error(OG_ERR_RUNTIME, "step %lld: the loss of this rank's batch is %g",
                                 (long long)t->step + 1, value);
            else if (dp->bad_weight >= 0)
                local = og_error(OG_ERR_RUNTIME,
                                 "step %lld: the gradient of weight '%s' holds NaN or Inf on "
                                 "this rank's batch (loss %g)",
                                 (long long)t->step + 1,
                                 og_grad_weight_name(t->grad, dp->bad_weight), value);
        }
    }
    /* the backward pass is over: what is left to reduce was not hidden by it.  Buckets
     * this rank did not fill (no samples, or it failed) go as zeros: the others wait. */
    double t1 = now_s(), comm_before = dp->stats.comm_s;
    for (int b = dp->next_start; b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        if (bk->arrived < bk->n_items) {
            memset(bk->data, 0, (size_t)bk->count * og_dtype_size(bk->dtype));
            bk->arrived = bk->n_items;
        }
    }
    if ((st = start_full(dp))) goto done;
    for (int b = dp->oldest; b < dp->n_buckets; b++) {
        bucket *bk = &dp->buckets[b];
        if (!bk->req) continue;
        og_status ws = c->wait(c->user, bk->req);
        bk->req = NULL;
        if (ws) {
            st = comm_failed(c, ws, "waiting for a gradient reduction");
            goto done;
        }
    }
    /* the losses and the failures, in one small reduction; sharded, also the parts' sums
     * of squares and how many ranks found a value that is not finite in theirs */
    double sum[3] = {share * value, 0, 0};
    int bad = -1;
    if (dp->shard && !local) {
        sum[1] = part_sumsq(t, dp, &bad);
        sum[2] = bad >= 0;
    }
    st = og_dp_sum(t, sum, dp->shard ? 3 : 1, local);
    double t2 = now_s();
    dp->stats.comm_s = comm_before + (t2 - t1);
    dp->stats.exposed_s += t2 - t1;
    if (st) goto done;
    if (loss) *loss = sum[0];
    if ((st = og_trainer_check_loss(t, sum[0], "weights"))) goto done;
    if (dp->shard) {
        if (sum[2] > 0) {
            /* the ranks whose own gradients hold one say so (the sum no longer tells whose it
             * was); when none does (two finite values summed to Inf), the ranks that found
             * one in their part say where; the lowest rank wins */
            int own = local_bad(t, dp);
            og_status mine = OG_OK;
            if (own >= 0)
                mine = og_error(OG_ERR_RUNTIME,
                                "step %lld: the gradient of weight '%s' holds NaN or Inf on "
                                "this rank's batch (loss %g); the weights were not updated",
                                (long long)t->step + 1, og_grad_weight_name(t->grad, own), sum[0]);
            if ((st = og_dp_sum(t, NULL, 0, mine))) goto done;
            if (bad >= 0)
                mine = og_error(OG_ERR_RUNTIME,
                                "step %lld: the gradient of weight '%s' holds NaN or Inf (loss "
                                "%g); the weights were not updated",
                                (long long)t->step + 1, og_grad_weight_name(t->grad, bad), sum[0]);
            st = og_dp_agree(t, mine);
            if (!st) st = og_error(OG_ERR_INTERNAL, "a rank found no value it reported");
            goto done;
        }
        /* the gathers' time is not hidden by the backward pass either */
        double before = dp->stats.comm_s;
        st = shard_update(t, sum[1]);
        dp->stats.exposed_s += dp->stats.comm_s - before;
        dp->stats.sharded_steps++;
        if (!st) st = sync_bn_stats(t);
        goto done;
    }
    for (int i = 0; i < t->n_weights; i++) {
        bucket *b = &dp->buckets[dp->bucket_of[i]];
        t->gptr[i] = (char *)b->data + (size_t)dp->offset_of[i] * og_dtype_size(b->dtype);
    }
    /* every rank applies the same update; its BatchNormalization statistics come from its
     * own shard, so they then take rank 0's (sync_bn_stats) */
    if (!(st = og_trainer_update(t, t->gptr, sum[0]))) st = sync_bn_stats(t);
done:
    for (int k = 0; t->bn_vals && k < 3 * t->n_bn; k++) {
        og_tensor_free(t->bn_vals[k]);
        t->bn_vals[k] = NULL;
    }
    dp->stats.steps++;
    dp->stats.step_s += now_s() - t0;
    og_tensor_free(out);
    for (int i = 0; i < t->n_weights; i++) {
        og_tensor_free(t->grads[i]);
        t->grads[i] = NULL;
    }
    return st;
}

og_status og_trainer_step_shard(og_trainer *t, const char *const *input_names,
                                const og_tensor *const *inputs, int n_inputs, double share,
                                double *loss)
{
    if (!t) return og_error(OG_ERR_INVALID_ARG, "og_trainer_step_shard: NULL trainer");
    if (!t->dp) return og_trainer_step(t, input_names, inputs, n_inputs, loss);
    og_status local = OG_OK;
    if (n_inputs < 0 || (n_inputs > 0 && (!input_names || !inputs)))
        local = og_error(OG_ERR_INVALID_ARG, "og_trainer_step_shard: bad input arrays");
    for (int i = 0; !local && i < n_inputs; i++)
        if (!input_names[i] || !inputs[i])
            local = og_error(OG_ERR_INVALID_ARG, "og_trainer_step_shard: input %d is NULL", i);
    return og_dp_step(t, local ? NULL : input_names, local ? NULL : inputs, local ? 0 : n_inputs,
                      share, local, loss);
}

/* ---- what og_trainer_fit needs ---------------------------------------------------------- */

og_status og_dp_sync_state(og_trainer *t, int64_t *flag)
{
    og_dp *dp = t->dp;
    const og_comm *c = dp->comm;
    void *bytes = NULL;
    size_t n = 0;
    og_status local = OG_OK, st;
    if ((st = og_dp_gather_state(t))) return st;
    if (dp->rank == 0) local = og_trainer_state_bytes(t, &bytes, &n);
    if ((st = og_comm_agree(c, local))) goto done;
    uint64_t head[2] = {(uint64_t)n, (uint64_t)*flag};
    if ((st = broadcast(c, head, sizeof head, 0, "sending rank 0's state"))) goto done;
    n = (size_t)head[0];
    *flag = (int64_t)head[1];
    if (dp->rank != 0) {
        bytes = og_malloc(t->a, n ? n : 1);
        local = bytes ? OG_OK : og_error(OG_ERR_NOMEM, "out of memory for rank 0's state");
    }
    if ((st = og_comm_agree(c, local))) goto done;
    if ((st = broadcast(c, bytes, n, 0, "sending rank 0's state"))) goto done;
    if (dp->rank != 0) local = og_trainer_state_load(t, bytes, n, "rank 0's state");
    st = og_comm_agree(c, local);
done:
    og_free(t->a, bytes);
    return st;
}

og_status og_dp_check_hash(og_trainer *t, const char *when)
{
    og_dp *dp = t->dp;
    og_status st = og_dp_gather_state(t); /* the hash covers the whole optimizer state */
    if (st) return st;
    uint64_t h = 0xcbf29ce484222325ull;
    int64_t head[2] = {t->step, t->epoch};
    h = hash_words(h, head, sizeof head);
    for (int i = 0; i < t->n_weights; i++) {
        h = hash_words(h, t->w[i]->data, og_tensor_nbytes(t->w[i]));
        for (int k = 0; k < t->n_slots; k++) {
            const og_tensor *s = t->slots[i * t->n_slots + k];
            h = hash_words(h, s->data, og_tensor_nbytes(s));
        }
    }
    for (int k = 0; k < t->n_bn; k++) {
        h = hash_words(h, t->bn[k].tm->data, og_tensor_nbytes(t->bn[k].tm));
        h = hash_words(h, t->bn[k].tv->data, og_tensor_nbytes(t->bn[k].tv));
    }
    uint64_t root = h;
    st = broadcast(dp->comm, &root, sizeof root, 0, "comparing weight hashes");
    if (st) return st;
    og_status local = OG_OK;
    if (root != h)
        local = og_error(OG_ERR_RUNTIME,
                         "%s, its weights and optimizer state hash to %016llx, rank 0's to "
                         "%016llx: the ranks diverged (a communicator whose reductions differ "
                         "between ranks, or ranks given different data or options)",
                         when, (unsigned long long)h, (unsigned long long)root);
    return og_comm_agree(dp->comm, local);
}
