/*
 * checkpoint.c: trainer checkpoints, written atomically.
 *
 * Layout (little-endian):
 *   "OGCKPT01"  u32 version (2)  u32 optimizer kind  u32 slots per weight  u32 tensor count
 *   i64 step  i64 epoch  i64 total_steps  u64 rng[4]  u64 dropout seed (version 2; a
 *   version-1 file, without it, keeps the trainer's)  u32 running statistics (version 2)
 *   per tensor: u32 name length, name, u32 dtype, u32 rank, i64 dims[rank], u64 bytes, data
 *     (every weight, then its slots named "<weight>/<slot>"; in algorithm mode every bound
 *     initializer, and the optimizer kind is ALGORITHM_KIND), then (version 2) the running
 *     mean and var of each BatchNormalization node in training mode
 *   u64 FNV-1a hash of everything before it
 * Saving writes "<path>.XXXXXX" beside the target, syncs it, renames it over the target and
 * syncs the folder: a crash leaves either the old or the new checkpoint, never a mix.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_io.h"
#include "train/trainer.h"

#define MAGIC          "OGCKPT01"
#define VERSION        2u
#define ALGORITHM_KIND 0x100u /* no og_optimizer_kind: the model's TrainingInfoProto */

typedef struct wbuf {
    const og_allocator *a;
    unsigned char *p;
    size_t n, cap;
    bool failed;
} wbuf;

static void put(wbuf *b, const void *data, size_t n)
{
    if (b->failed) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *p = og_realloc(b->a, b->p, b->n, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u32(wbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(wbuf *b, uint64_t v) { put(b, &v, 8); }

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void put_tensor(wbuf *b, const char *name, const og_tensor *t)
{
    put_u32(b, (uint32_t)strlen(name));
    put(b, name, strlen(name));
    put_u32(b, (uint32_t)t->dtype);
    put_u32(b, (uint32_t)t->rank);
    for (int d = 0; d < t->rank; d++) put_u64(b, (uint64_t)t->dims[d]);
    size_t nbytes = og_tensor_nbytes(t);
    put_u64(b, nbytes);
    if (nbytes) put(b, t->data, nbytes);
}

/* "<weight>/<slot>" */
static void slot_name(const og_trainer *t, int i, int k, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", og_trainer_weight_name(t, i), og_optim_slot_name(&t->opt, k));
}

static uint32_t kind_code(const og_trainer *t)
{
    return t->algo ? ALGORITHM_KIND : (uint32_t)t->opt.kind;
}

static og_status write_atomically(const char *path, const void *data, size_t n,
                                  const og_allocator *a)
{
    size_t len = strlen(path);
    char *tmp = og_malloc(a, len + 8);
    if (!tmp) return og_error(OG_ERR_NOMEM, "out of memory");
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".XXXXXX", 8);
    og_status st = OG_OK;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        st = og_error(OG_ERR_IO, "cannot create a temporary file beside '%s': %s", path,
                      strerror(errno));
        goto done;
    }
    const unsigned char *p = data;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            st = og_error(OG_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (!st && fsync(fd) != 0)
        st = og_error(OG_ERR_IO, "cannot sync '%s': %s", tmp, strerror(errno));
    if (close(fd) != 0 && !st)
        st = og_error(OG_ERR_IO, "cannot close '%s': %s", tmp, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = og_error(OG_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
    if (st) {
        unlink(tmp);
        goto done;
    }
    /* make the rename itself durable */
    const char *slash = strrchr(path, '/');
    if (slash) {
        memcpy(tmp, path, (size_t)(slash - path) + 1);
        tmp[slash - path + 1] = '\0';
    } else {
        strcpy(tmp, ".");
    }
    int dfd = open(tmp, O_RDONLY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
done:
    og_free(a, tmp);
    return st;
}

og_status og_trainer_save_checkpoint(const og_trainer *t, const char *path)
{
    if (!t || !path)
        return og_error(OG_ERR_INVALID_ARG, "og_trainer_save_checkpoint: NULL argument");
    void *bytes = NULL;
    size_t n = 0;
    og_status st = og_trainer_state_bytes(t, &bytes, &n);
    if (!st) st = write_atomically(path, bytes, n, t->a);
    og_free(t->a, bytes);
    return st;
}

og_status og_trainer_state_bytes(const og_trainer *t, void **bytes, size_t *size)
{
    *bytes = NULL;
    *size = 0;
    wbuf b = {t->a, NULL, 0, 0, false};
    put(&b, MAGIC, 8);
    put_u32(&b, VERSION);
    put_u32(&b, kind_code(t));
    put_u32(&b, (uint32_t)t->n_slots);
    put_u32(&b, (uint32_t)(t->n_weights * (1 + t->n_slots)));
    put_u64(&b, (uint64_t)t->step);
    put_u64(&b, (uint64_t)(int64_t)t->epoch);
    put_u64(&b, (uint64_t)t->opt.total_steps);
    for (int i = 0; i < 4; i++) put_u64(&b, t->rng.s[i]);
    put_u64(&b, t->dropout_seed);
    put_u32(&b, (uint32_t)(2 * t->n_bn));
    char name[1024];
    for (int i = 0; i < t->n_weights; i++) {
        put_tensor(&b, og_trainer_weight_name(t, i), t->w[i]);
        for (int k = 0; k < t->n_slots; k++) {
            slot_name(t, i, k, name, sizeof name);
            put_tensor(&b, name, t->slots[i * t->n_slots + k]);
        }
    }
    for (int k = 0; k < t->n_bn; k++) {
        put_tensor(&b, t->bn[k].mean, t->bn[k].tm);
        put_tensor(&b, t->bn[k].var, t->bn[k].tv);
    }
    if (!b.failed) put_u64(&b, fnv1a(b.p, b.n));
    if (b.failed) {
        og_free(t->a, b.p);
        return og_error(OG_ERR_NOMEM, "out of memory writing a checkpoint");
    }
    *bytes = b.p;
    *size = b.n;
    return OG_OK;
}

/* ---- loading ----------------------------------------------------------------------- */

typedef struct rbuf {
    const unsigned char *p;
    size_t n, pos;
    bool bad;
} rbuf;

static const void *take(rbuf *r, size_t n)
{
    if (r->bad || n > r->n - r->pos) {
        r->bad = true;
        return NULL;
    }
    const void *p = r->p + r->pos;
    r->pos += n;
    return p;
}

static uint32_t get_u32(rbuf *r)
{
    uint32_t v = 0;
    const void *p = take(r, 4);
    if (p) memcpy(&v, p, 4);
    return v;
}

static uint64_t get_u64(rbuf *r)
{
    uint64_t v = 0;
    const void *p = take(r, 8);
    if (p) memcpy(&v, p, 8);
    return v;
}

/* Check that the next tensor is `name` with t's dtype and shape; *data gets its bytes. */
static og_status expect_tensor(rbuf *r, const char *path, const char *name, const og_tensor *t,
                               const void **data)
{
    uint32_t len = get_u32(r);
    const char *s = take(r, len);
    uint32_t dtype = get_u32(r), rank = get_u32(r);
    if (r->bad) return og_error(OG_ERR_PARSE, "checkpoint '%s' is truncated", path);
    if (len != strlen(name) || memcmp(s, name, len) != 0)
        return og_error(OG_ERR_INVALID_ARG,
                        "checkpoint '%s' holds '%.*s' where this trainer has '%s': it was saved "
                        "by a trainer of another model or weight selection",
                        path, (int)(len > 200 ? 200 : len), s, name);
    if (dtype != (uint32_t)t->dtype || rank != (uint32_t)t->rank)
        return og_error(OG_ERR_INVALID_ARG, "checkpoint '%s': '%s' has another dtype or rank", path,
                        name);
    for (int d = 0; d < t->rank; d++)
        if (get_u64(r) != (uint64_t)t->dims[d] && !r->bad)
            return og_error(OG_ERR_INVALID_ARG, "checkpoint '%s': '%s' has another shape", path,
                            name);
    uint64_t nbytes = get_u64(r);
    if (!r->bad && nbytes != og_tensor_nbytes(t))
        return og_error(OG_ERR_INVALID_ARG, "checkpoint '%s': '%s' has %llu bytes, not %zu", path,
                        name, (unsigned long long)nbytes, og_tensor_nbytes(t));
    *data = take(r, (size_t)nbytes);
    if (r->bad) return og_error(OG_ERR_PARSE, "checkpoint '%s' is truncated", path);
    return OG_OK;
}

static og_status load_checkpoint(og_trainer *t, const char *path);

og_status og_trainer_load_checkpoint(og_trainer *t, const char *path)
{
    if (!t || !path)
        return og_error(OG_ERR_INVALID_ARG, "og_trainer_load_checkpoint: NULL argument");
    og_status st = og_trainer_enter(t, "og_trainer_load_checkpoint");
    if (st) return st;
    st = load_checkpoint(t, path);
    og_trainer_leave(t);
    return st;
}

static og_status load_checkpoint(og_trainer *t, const char *path)
{
    void *bytes = NULL;
    size_t size = 0;
    /* read no more than twice what this trainer's checkpoint takes (and 1 MiB): a huge file
     * named as a checkpoint is refused before it is read, while a smaller mismatch still
     * gets the message naming the tensor that differs */
    size_t expect = 8 + 4 * 4 + 3 * 8 + 4 * 8 + 8;
    char tname[1024];
    for (int i = 0; i < t->n_weights; i++)
        for (int k = -1; k < t->n_slots; k++) {
            const og_tensor *w = k < 0 ? t->w[i] : t->slots[i * t->n_slots + k];
            if (k < 0)
                snprintf(tname, sizeof tname, "%s", og_trainer_weight_name(t, i));
            else
                slot_name(t, i, k, tname, sizeof tname);
            expect += 4 + strlen(tname) + 4 + 4 + 8 * (size_t)w->rank + 8 + og_tensor_nbytes(w);
        }
    og_status st = og_read_file(path, 2 * expect + ((size_t)1 << 20), t->a, &bytes, &size);
    if (st == OG_ERR_LIMIT) {
        snprintf(tname, sizeof tname, "%s", og_last_error());
        return og_error(OG_ERR_INVALID_ARG,
                        "not a checkpoint of this trainer: %s (its checkpoints take %zu bytes)",
                        tname, expect);
    }
    if (st) return st;
    st = og_trainer_state_load(t, bytes, size, path);
    og_free(t->a, bytes);
    return st;
}

og_status og_trainer_state_load(og_trainer *t, const void *bytes, size_t size, const char *path)
{
    const void **data = NULL;
    og_status st = OG_OK;
    rbuf r = {bytes, size, 0, false};
    int n_tensors = t->n_weights * (1 + t->n_slots);
    if (size < 8 + 8 || memcmp(bytes, MAGIC, 8) != 0) {
        st = og_error(OG_ERR_PARSE, "'%s' is not an onnxgrad checkpoint", path);
        goto done;
    }
    uint64_t stored;
    memcpy(&stored, (const unsigned char *)bytes + size - 8, 8);
    if (fnv1a(bytes, size - 8) != stored) {
        st = og_error(OG_ERR_PARSE, "checkpoint '%s' is damaged (checksum mismatch)", path);
        goto done;
    }
    r.n = size - 8;
    take(&r, 8);
    uint32_t version = get_u32(&r), kind = get_u32(&r), slots = get_u32(&r), count = get_u32(&r);
    int64_t step = (int64_t)get_u64(&r), epoch = (int64_t)get_u64(&r);
    int64_t total = (int64_t)get_u64(&r);
    og_rng rng;
    for (int i = 0; i < 4; i++) rng.s[i] = get_u64(&r);
    uint64_t dropout_seed = version >= 2 ? get_u64(&r) : t->dropout_seed;
    uint32_t n_stats = version >= 2 ? get_u32(&r) : 0;
    if (r.bad || version < 1 || version > VERSION) {
        st = og_error(OG_ERR_PARSE, "checkpoint '%s': unknown version %u", path, version);
        goto done;
    }
    if (kind != kind_code(t) || slots != (uint32_t)t->n_slots || count != (uint32_t)n_tensors) {
        st = og_error(OG_ERR_INVALID_ARG,
                      "checkpoint '%s' was saved with another optimizer or set of weights "
                      "(optimizer %u with %u state tensors per weight, %u tensors; this trainer: "
                      "%d, %d, %d)",
                      path, kind, slots, count, (int)kind_code(t), t->n_slots, n_tensors);
        goto done;
    }
    if (version >= 2 && n_stats != (uint32_t)(2 * t->n_bn)) {
        st = og_error(OG_ERR_INVALID_ARG,
                      "checkpoint '%s' holds %u running statistics, this trainer %d", path, n_stats,
                      2 * t->n_bn);
        goto done;
    }
    if (step < 0 || epoch < 0 || epoch > INT32_MAX || total < 0) {
        st = og_error(OG_ERR_PARSE, "checkpoint '%s' is damaged (step %lld, epoch %lld)", path,
                      (long long)step, (long long)epoch);
        goto done;
    }
    data = og_calloc(t->a, (size_t)n_tensors + n_stats + 1, sizeof *data);
    if (!data) {
        st = og_error(OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    char name[1024];
    for (int i = 0, j = 0; i < t->n_weights && !st; i++) {
        st = expect_tensor(&r, path, og_trainer_weight_name(t, i), t->w[i], &data[j++]);
        for (int k = 0; k < t->n_slots && !st; k++) {
            slot_name(t, i, k, name, sizeof name);
            st = expect_tensor(&r, path, name, t->slots[i * t->n_slots + k], &data[j++]);
        }
    }
    for (int k = 0; k < (int)n_stats / 2 && !st; k++) {
        st = expect_tensor(&r, path, t->bn[k].mean, t->bn[k].tm, &data[n_tensors + 2 * k]);
        if (!st)
            st = expect_tensor(&r, path, t->bn[k].var, t->bn[k].tv, &data[n_tensors + 2 * k + 1]);
    }
    if (st) goto done;
    if (r.pos != r.n) {
        st = og_error(OG_ERR_PARSE, "checkpoint '%s' has %zu unexpected trailing bytes", path,
                      r.n - r.pos);
        goto done;
    }
    /* everything checked: now change the trainer */
    for (int i = 0, j = 0; i < t->n_weights; i++) {
        memcpy(t->w[i]->data, data[j++], og_tensor_nbytes(t->w[i]));
        for (int k = 0; k < t->n_slots; k++) {
            og_tensor *s = t->slots[i * t->n_slots + k];
            memcpy(s->data, data[j++], og_tensor_nbytes(s));
        }
    }
    for (int k = 0; k < (int)n_stats / 2; k++) {
        og_bn_stat *s = &t->bn[k];
        memcpy(s->tm->data, data[n_tensors + 2 * k], og_tensor_nbytes(s->tm));
        memcpy(s->tv->data, data[n_tensors + 2 * k + 1], og_tensor_nbytes(s->tv));
        if (s->em && og_tensor_nbytes(s->em) == og_tensor_nbytes(s->tm))
            memcpy(s->em->data, s->tm->data, og_tensor_nbytes(s->tm));
        if (s->ev && og_tensor_nbytes(s->ev) == og_tensor_nbytes(s->tv))
            memcpy(s->ev->data, s->tv->data, og_tensor_nbytes(s->tv));
    }
    t->step = step;
    t->epoch = (int)epoch;
    t->opt.total_steps = total;
    t->rng = rng;
    t->dropout_seed = dropout_seed;
done:
    og_free(t->a, data);
    return st;
}
