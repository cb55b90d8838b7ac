/* The limits of og_load_options, each at its value (the model loads) and one past it
 * (OG_ERR_LIMIT naming the option), on models written here byte by byte: a chain of
 * Identity nodes with attributes, opset imports, a long name, and If subgraphs nested to a
 * chosen depth (3,000 of them crashed the loader with a stack overflow). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* ---- a protobuf writer --------------------------------------------------------------- */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_varint(buf *b, uint64_t v)
{
    unsigned char c[10];
    size_t n = 0;
    do {
        c[n] = (unsigned char)(v & 0x7F);
        v >>= 7;
        if (v) c[n] |= 0x80;
        n++;
    } while (v);
    put(b, c, n);
}

static void field_varint(buf *b, unsigned num, uint64_t v)
{
    put_varint(b, (uint64_t)num << 3);
    put_varint(b, v);
}

static void field_bytes(buf *b, unsigned num, const void *data, size_t n)
{
    put_varint(b, ((uint64_t)num << 3) | 2);
    put_varint(b, n);
    put(b, data, n);
}

static void field_str(buf *b, unsigned num, const char *s) { field_bytes(b, num, s, strlen(s)); }

/* field_msg takes m's bytes and frees them */
static void field_msg(buf *b, unsigned num, buf *m)
{
    field_bytes(b, num, m->p, m->n);
    free(m->p);
    *m = (buf){0};
}

/* ValueInfoProto name: float32 [2] */
static void value_info(buf *b, unsigned num, const char *name)
{
    buf dim = {0}, shape = {0}, tensor = {0}, type = {0}, vi = {0};
    field_varint(&dim, 1, 2);
    field_msg(&shape, 1, &dim);
    field_varint(&tensor, 1, 1);
    field_msg(&tensor, 2, &shape);
    field_msg(&type, 1, &tensor);
    field_str(&vi, 1, name);
    field_msg(&vi, 2, &type);
    field_msg(b, num, &vi);
}

static void opsets(buf *model, int n)
{
    for (int i = 0; i < n; i++) {
        buf o = {0};
        char domain[32];
        snprintf(domain, sizeof domain, "d%d", i);
        field_str(&o, 1, i ? domain : "");
        field_varint(&o, 2, i ? 1 : 17);
        field_msg(model, 8, &o);
    }
}

/* x -> Identity x n -> y, each node with n_attrs int attributes; the first node's name has
 * name_len characters.  Values: x, y (value infos) and n node outputs.  Deepest message:
 * Graph > ValueInfo > Type > Tensor > Shape > Dimension, depth 6. */
static buf chain(int n, int n_attrs, int n_opsets, size_t name_len)
{
    buf model = {0}, g = {0};
    field_varint(&model, 1, 8);
    opsets(&model, n_opsets);
    for (int i = 0; i < n; i++) {
        buf node = {0};
        char in[32], out[32];
        snprintf(in, sizeof in, i ? "v%d" : "x", i);
        snprintf(out, sizeof out, i == n - 1 ? "y" : "v%d", i + 1);
        field_str(&node, 1, in);
        field_str(&node, 2, out);
        if (i == 0 && name_len) {
            char *name = malloc(name_len + 1);
            memset(name, 'n', name_len);
            name[name_len] = 0;
            field_str(&node, 3, name);
            free(name);
        }
        field_str(&node, 4, "Identity");
        for (int k = 0; k < n_attrs; k++) {
            buf at = {0};
            char an[32];
            snprintf(an, sizeof an, "a%d", k);
            field_str(&at, 1, an);
            field_varint(&at, 3, (uint64_t)k);
            field_varint(&at, 20, 2);
            field_msg(&node, 5, &at);
        }
        field_msg(&g, 1, &node);
    }
    field_str(&g, 2, "chain");
    value_info(&g, 11, "x");
    value_info(&g, 12, "y");
    field_msg(&model, 7, &g);
    return model;
}

/* If nodes nested `levels` deep (then_branch inside then_branch); the deepest message is
 * at depth 4 + 3 * levels (the innermost graph's output type). */
static buf nested_if(int levels)
{
    buf g = {0};
    {
        buf node = {0};
        field_str(&node, 2, "y");
        field_str(&node, 4, "Constant");
        field_msg(&g, 1, &node);
        field_str(&g, 2, "leaf");
        buf vi = {0}, type = {0}, tensor = {0};
        field_varint(&tensor, 1, 1);
        field_msg(&type, 1, &tensor);
        field_str(&vi, 1, "y");
        field_msg(&vi, 2, &type);
        field_msg(&g, 12, &vi);
    }
    for (int i = 0; i < levels; i++) {
        buf at = {0}, node = {0}, outer = {0};
        field_str(&at, 1, "then_branch");
        field_msg(&at, 6, &g);
        field_varint(&at, 20, 5);
        field_str(&node, 1, "c");
        field_str(&node, 2, "y");
        field_str(&node, 4, "If");
        field_msg(&node, 5, &at);
        field_msg(&outer, 1, &node);
        field_str(&outer, 2, "g");
        g = outer;
    }
    buf model = {0};
    field_varint(&model, 1, 8);
    opsets(&model, 1);
    field_msg(&model, 7, &g);
    return model;
}

/* y = ConstantOfShape(s) with s = [n] an initializer: one float32 output of n elements */
static buf constant_of_shape(int64_t n)
{
    buf m = {0}, g = {0}, node = {0}, t = {0}, vi = {0}, type = {0}, tensor = {0};
    field_varint(&m, 1, 8);
    opsets(&m, 1);
    field_str(&node, 1, "s");
    field_str(&node, 2, "y");
    field_str(&node, 4, "ConstantOfShape");
    field_msg(&g, 1, &node);
    field_str(&g, 2, "g");
    field_varint(&t, 1, 1);
    field_varint(&t, 2, 7);
    field_varint(&t, 7, (uint64_t)n);
    field_str(&t, 8, "s");
    field_msg(&g, 5, &t);
    field_varint(&tensor, 1, 1);
    field_msg(&type, 1, &tensor);
    field_str(&vi, 1, "y");
    field_msg(&vi, 2, &type);
    field_msg(&g, 12, &vi);
    field_msg(&m, 7, &g);
    return m;
}

/* One run of m under a session budget of `budget` bytes (two runs: the second reuses the
 * first one's block). */
static og_status run_with_budget(const og_model *m, int64_t budget)
{
    og_session_options so = {0};
    so.threads = 1;
    so.max_memory = budget;
    og_session *s = NULL;
    og_status st = og_session_create(m, &so, &s);
    for (int r = 0; !st && r < 2; r++) {
        og_tensor *y = NULL;
        st = og_session_run(s, NULL, NULL, 0, &y);
        og_tensor_free(y);
    }
    og_session_free(s);
    return st;
}

static og_status load(const buf *b, const og_load_options *o)
{
    og_model *m = NULL;
    og_status st = og_model_load_buffer(b->p, b->n, o, &m);
    og_model_free(m);
    return st;
}

/* loads with the option at `at`, fails with OG_ERR_LIMIT naming the option one below */
#define AT_AND_BEYOND(b, field, at)                                                                \
    do {                                                                                           \
        og_load_options o = {0};                                                                   \
        o.field = (at);                                                                            \
        CHECK_OK(load(&(b), &o));                                                                  \
        o.field = (at)-1;                                                                          \
        CHECK(load(&(b), &o) == OG_ERR_LIMIT);                                                     \
        CHECK(strstr(og_last_error(), "og_load_options." #field) != NULL);                         \
    } while (0)

int main(void)
{
    buf b = chain(10, 3, 4, 300);
    CHECK_OK(load(&b, NULL));
    AT_AND_BEYOND(b, max_nodes, 10);
    AT_AND_BEYOND(b, max_attributes, 30);
    AT_AND_BEYOND(b, max_opsets, 4);
    AT_AND_BEYOND(b, max_values, 12);
    AT_AND_BEYOND(b, max_string_bytes, 300);
    AT_AND_BEYOND(b, max_model_bytes, (int64_t)b.n);
    og_load_options bad = {0};
    bad.max_nodes = -1;
    CHECK(load(&b, &bad) == OG_ERR_INVALID_ARG);
    bad = (og_load_options){0};
    bad.max_depth = OG_MAX_NESTING + 1; /* may be lowered, not raised */
    CHECK(load(&b, &bad) == OG_ERR_INVALID_ARG);
    free(b.p);

    /* Nesting: If subgraphs within subgraphs.  At the limit the scan passes (If itself is not
     * an op onnxgrad runs yet: a later error), one level more is refused; at the default
     * (OG_MAX_NESTING, 100) the same; 3,000 levels (a 122 KB file that crashed the loader)
     * are refused before protobuf-c recurses into them. */
    og_status st;
    og_load_options o5 = {0};
    b = nested_if(5);
    o5.max_depth = 5;
    st = load(&b, &o5);
    CHECK(st != OG_ERR_LIMIT && st != OG_OK);
    o5.max_depth = 4;
    CHECK(load(&b, &o5) == OG_ERR_LIMIT);
    CHECK(strstr(og_last_error(), "og_load_options.max_depth") != NULL);
    free(b.p);
    b = nested_if(OG_MAX_NESTING);
    st = load(&b, NULL);
    CHECK(st != OG_ERR_LIMIT && st != OG_OK);
    free(b.p);
    b = nested_if(OG_MAX_NESTING + 1);
    CHECK(load(&b, NULL) == OG_ERR_LIMIT);
    CHECK(strstr(og_last_error(), "101 subgraphs within subgraphs") != NULL);
    CHECK(strstr(og_last_error(), "beyond the limit of 100") != NULL);
    free(b.p);
    b = nested_if(3000);
    CHECK(load(&b, NULL) == OG_ERR_LIMIT);
    printf("3000 nested If (%zu bytes): %s\n", b.n, og_last_error());
    free(b.p);

    /* external data: all tensors together against max_external_bytes */
    char dir[] = "/tmp/og_limits_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    FILE *f = fopen(path, "wb");
    float w[4] = {1, 2, 3, 4};
    CHECK(f && fwrite(w, sizeof w, 1, f) == 1);
    if (f) fclose(f);
    buf m = {0}, g = {0}, node = {0};
    field_varint(&m, 1, 8);
    opsets(&m, 1);
    field_str(&node, 1, "x");
    field_str(&node, 1, "w");
    field_str(&node, 2, "y");
    field_str(&node, 4, "Add");
    field_msg(&g, 1, &node);
    field_str(&g, 2, "g");
    for (int k = 0; k < 2; k++) { /* two initializers of 8 bytes in the same file */
        buf t = {0}, e = {0};
        field_varint(&t, 1, 2);
        field_varint(&t, 2, 1);
        field_str(&t, 8, k ? "w2" : "w");
        field_str(&e, 1, "location");
        field_str(&e, 2, "w.bin");
        field_msg(&t, 13, &e);
        field_str(&e, 1, "offset");
        field_str(&e, 2, k ? "8" : "0");
        field_msg(&t, 13, &e);
        field_varint(&t, 14, 1);
        field_msg(&g, 5, &t);
    }
    value_info(&g, 11, "x");
    value_info(&g, 12, "y");
    field_msg(&m, 7, &g);
    og_load_options o = {0};
    o.base_dir = dir;
    CHECK_OK(load(&m, &o));
    o.max_external_bytes = 16;
    CHECK_OK(load(&m, &o));
    o.max_external_bytes = 15;
    CHECK(load(&m, &o) == OG_ERR_LIMIT);
    CHECK(strstr(og_last_error(), "og_load_options.max_external_bytes") != NULL);
    free(m.p);
    unlink(path);
    rmdir(dir);

    /* the session's memory budget, at and one byte below what a run needs */
    b = constant_of_shape(1000);
    og_model *cm = NULL;
    CHECK_OK(og_model_load_buffer(b.p, b.n, NULL, &cm));
    free(b.p);
    if (cm) {
        CHECK_OK(run_with_budget(cm, 4000));
        CHECK(run_with_budget(cm, 3999) == OG_ERR_LIMIT);
        CHECK(strstr(og_last_error(), "og_session_options.max_memory") != NULL);
        CHECK(run_with_budget(cm, -1) == OG_ERR_INVALID_ARG);
    }
    og_model_free(cm);
    /* 1.6e9 floats (6.4 GB) fail at once under the default budget, allocating nothing */
    b = constant_of_shape(1600000000);
    CHECK_OK(og_model_load_buffer(b.p, b.n, NULL, &cm));
    free(b.p);
    if (cm) {
        CHECK(run_with_budget(cm, 0) == OG_ERR_LIMIT);
        CHECK(strstr(og_last_error(), "needs 6400000000 bytes, past the session's memory budget "
                                      "of 4294967296 bytes") != NULL);
    }
    og_model_free(cm);
    /* gradient objects and their instances pass the budget to their sessions */
    og_model *mlp = NULL;
    og_tensor *x = NULL, *outs[1] = {0}, *grads[8] = {0};
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &mlp));
    CHECK_OK(og_npy_load("models/mlp_x.npy", NULL, &x));
    og_grad_options go = {0};
    go.threads = 1;
    go.max_memory = 256;
    og_grad *gr = NULL;
    if (mlp) CHECK_OK(og_grad_create(mlp, &go, &gr));
    const char *xn[] = {"x"};
    if (gr && x) {
        CHECK(og_grad_run(gr, xn, (const og_tensor *const *)&x, 1, NULL, outs, grads) ==
              OG_ERR_LIMIT);
        og_instance *inst = NULL;
        CHECK_OK(og_grad_new_instance(gr, &inst));
        if (inst)
            CHECK(og_instance_forward(inst, xn, (const og_tensor *const *)&x, 1, 1, outs) ==
                  OG_ERR_LIMIT);
        og_instance_free(inst);
    }
    og_grad_free(gr);
    og_tensor_free(x);
    og_model_free(mlp);

    /* the dataset reader's limit: the smallest max_memory that loads a compressed .npz is its
     * size plus what its arrays inflate to; one byte less fails with OG_ERR_LIMIT */
    FILE *z = fopen("tests/data/train/compressed.npz", "rb");
    CHECK(z != NULL);
    if (z) {
        unsigned char bytes[1 << 16];
        size_t n = fread(bytes, 1, sizeof bytes, z);
        fclose(z);
        og_data_options dopt = {0};
        og_dataset *d = NULL;
        int64_t lo = (int64_t)n, hi = (int64_t)n * 1000;
        dopt.max_memory = hi;
        CHECK_OK(og_dataset_load_buffer(bytes, n, "c.npz", &dopt, NULL, &d));
        og_dataset_free(d);
        while (lo < hi) { /* the least limit that loads */
            int64_t mid = lo + (hi - lo) / 2;
            dopt.max_memory = mid;
            d = NULL;
            st = og_dataset_load_buffer(bytes, n, "c.npz", &dopt, NULL, &d);
            og_dataset_free(d);
            if (st == OG_OK) {
                hi = mid;
            } else {
                CHECK(st == OG_ERR_LIMIT);
                lo = mid + 1;
            }
        }
        dopt.max_memory = lo;
        CHECK_OK(og_dataset_load_buffer(bytes, n, "c.npz", &dopt, NULL, &d));
        og_dataset_free(d);
        dopt.max_memory = lo - 1;
        CHECK(og_dataset_load_buffer(bytes, n, "c.npz", &dopt, NULL, &d) == OG_ERR_LIMIT);
        CHECK(strstr(og_last_error(), "og_data_options.max_memory") != NULL);
        CHECK(lo > (int64_t)n); /* the inflated arrays counted, not only the file */
        printf("compressed.npz: %zu bytes, loads with max_memory >= %lld\n", n, (long long)lo);
    }
    TEST_DONE();
}
