/* test_values.c: string tensors, and the values that are not tensors (sequences, maps,
 * optionals) through the public API: making and reading them, .npy strings, models that
 * pass them through (tests/data/values/, made by make_value_models.py), types as text, the
 * nesting limit, and failing allocations. */
#include <stdio.h>
#include <string.h>

#include "test.h"

static og_tensor *strings(int rank, const int64_t *dims, const char *const *s)
{
    og_tensor *t = NULL;
    CHECK_OK(og_tensor_from_strings(rank, dims, s, NULL, &t));
    return t;
}

static og_tensor *floats(int rank, const int64_t *dims, const float *v, size_t n)
{
    og_tensor *t = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, rank, dims, v, n * sizeof *v, NULL, &t));
    return t;
}

static void test_strings(void)
{
    const char *words[] = {"a", "", NULL,
                           "h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80"};
    int64_t dims[2] = {2, 2};
    og_tensor *t = strings(2, dims, words);
    CHECK(og_tensor_kind(t) == OG_KIND_TENSOR && og_tensor_dtype(t) == OG_STRING);
    CHECK(og_tensor_numel(t) == 4 && og_tensor_nbytes(t) == 0);
    CHECK(og_tensor_data(t) == NULL && og_tensor_cdata(t) == NULL);
    CHECK(strcmp(og_tensor_string(t, 0), "a") == 0);
    CHECK(strcmp(og_tensor_string(t, 1), "") == 0 && strcmp(og_tensor_string(t, 2), "") == 0);
    CHECK(strcmp(og_tensor_string(t, 3), words[3]) == 0);
    CHECK(og_tensor_string(t, 4) == NULL && og_tensor_string(t, -1) == NULL);
    char longer[5000];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    CHECK_OK(og_tensor_set_string(t, 1, longer));
    CHECK(strlen(og_tensor_string(t, 1)) == sizeof longer - 1);
    CHECK(og_tensor_set_string(t, 4, "x") == OG_ERR_INVALID_ARG);

    /* .npy: numpy's '<U', code points beyond the BMP included */
    const char *path = "build_test_values_strings.npy";
    CHECK_OK(og_npy_save(path, t));
    og_tensor *back = NULL;
    CHECK_OK(og_npy_load(path, NULL, &back));
    CHECK(back && og_tensor_dtype(back) == OG_STRING && og_tensor_rank(back) == 2);
    for (int64_t i = 0; back && i < 4; i++)
        CHECK(strcmp(og_tensor_string(back, i), og_tensor_string(t, i)) == 0);
    og_tensor_free(back);
    remove(path);

    /* zero-filled string tensors are empty strings; wrapping and raw bytes are refused */
    og_tensor *z = NULL;
    CHECK_OK(og_tensor_create(OG_STRING, 2, dims, NULL, &z));
    CHECK(z && strcmp(og_tensor_string(z, 3), "") == 0);
    og_tensor_free(z);
    char *raw[4] = {0};
    CHECK(og_tensor_wrap(OG_STRING, 2, dims, raw, sizeof raw, NULL, &z) == OG_ERR_INVALID_ARG);
    CHECK(og_tensor_from_data(OG_STRING, 2, dims, raw, sizeof raw, NULL, &z) == OG_ERR_INVALID_ARG);
    CHECK(z == NULL);
    /* invalid UTF-8 cannot become '<U' */
    CHECK_OK(og_tensor_set_string(t, 0, "\xff\xfe"));
    CHECK(og_npy_save(path, t) == OG_ERR_UNSUPPORTED);
    remove(path);
    og_tensor_free(t);
}

/* A .npy of numpy's object dtype is refused with a message saying what to do. */
static void test_npy_object(void)
{
    static const char hdr[] = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }";
    unsigned char buf[128] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t hl = sizeof hdr - 1;
    buf[8] = (unsigned char)hl;
    memcpy(buf + 10, hdr, hl);
    og_tensor *t = NULL;
    CHECK(og_npy_load_buffer(buf, 10 + hl + 8, NULL, &t) == OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "dtype=str") != NULL);
    CHECK(t == NULL);
}

static void test_containers(void)
{
    int64_t d2 = 2, d3 = 3;
    float a[3] = {1, 2, 3}, b[2] = {4, 5};
    og_tensor *x = floats(1, &d3, a, 3), *y = floats(1, &d2, b, 2);
    const og_tensor *items[2] = {x, y};
    og_tensor *seq = NULL, *map = NULL, *opt = NULL, *none = NULL;
    CHECK_OK(og_sequence_create(items, 2, NULL, &seq));
    CHECK(og_tensor_kind(seq) == OG_KIND_SEQUENCE && og_sequence_length(seq) == 2);
    CHECK(og_tensor_dtype(seq) == OG_UNDEFINED && og_tensor_rank(seq) == 0);
    CHECK(og_tensor_dims(seq) == NULL && og_tensor_cdata(seq) == NULL);
    const og_tensor *i1 = og_sequence_item(seq, 1);
    CHECK(i1 && i1 != y && og_tensor_numel(i1) == 2 &&
          ((const float *)og_tensor_cdata(i1))[1] == 5);
    CHECK(og_sequence_item(seq, 2) == NULL && og_map_size(seq) == 0);

    /* a map of string keys to scalars */
    const char *names[2] = {"zero", "one"};
    og_tensor *keys = strings(1, &d2, names);
    float s0 = 0.25f, s1 = 0.75f;
    og_tensor *v0 = floats(0, NULL, &s0, 1), *v1 = floats(0, NULL, &s1, 1);
    const og_tensor *vals[2] = {v0, v1};
    CHECK_OK(og_map_create(keys, vals, NULL, &map));
    CHECK(og_tensor_kind(map) == OG_KIND_MAP && og_map_size(map) == 2);
    CHECK(strcmp(og_tensor_string(og_map_keys(map), 1), "one") == 0);
    CHECK(*(const float *)og_tensor_cdata(og_map_value(map, 1)) == 0.75f);
    /* repeated keys and mixed values are refused */
    og_tensor *bad = NULL;
    const char *dup[2] = {"k", "k"};
    og_tensor *dkeys = strings(1, &d2, dup);
    CHECK(og_map_create(dkeys, vals, NULL, &bad) == OG_ERR_INVALID_ARG && bad == NULL);
    const og_tensor *mixed[2] = {x, seq};
    CHECK(og_sequence_create(mixed, 2, NULL, &bad) == OG_ERR_TYPE && bad == NULL);
    int64_t i64 = 1;
    og_tensor *iv = NULL;
    CHECK_OK(og_tensor_from_data(OG_INT64, 0, NULL, &i64, sizeof i64, NULL, &iv));
    const og_tensor *dtypes[2] = {x, iv};
    CHECK(og_sequence_create(dtypes, 2, NULL, &bad) == OG_ERR_TYPE);
    CHECK(og_map_create(x, vals, NULL, &bad) == OG_ERR_TYPE); /* float keys */

    /* optionals, and a sequence of maps */
    CHECK_OK(og_optional_create(map, NULL, &opt));
    CHECK_OK(og_optional_create(NULL, NULL, &none));
    CHECK(og_optional_value(none) == NULL && og_tensor_kind(none) == OG_KIND_OPTIONAL);
    CHECK(og_tensor_kind(og_optional_value(opt)) == OG_KIND_MAP);
    const og_tensor *maps[2] = {map, map};
    og_tensor *seq_maps = NULL;
    CHECK_OK(og_sequence_create(maps, 2, NULL, &seq_maps));
    CHECK(og_map_size(og_sequence_item(seq_maps, 1)) == 2);

    /* the nesting limit: OG_MAX_NESTING optionals around a tensor, not one more */
    og_tensor *cur = NULL;
    CHECK_OK(og_optional_create(x, NULL, &cur));
    for (int depth = 2; cur && depth <= OG_MAX_NESTING; depth++) {
        og_tensor *next = NULL;
        CHECK_OK(og_optional_create(cur, NULL, &next));
        og_tensor_free(cur);
        cur = next;
    }
    CHECK(cur != NULL);
    og_tensor *over = NULL;
    CHECK(og_optional_create(cur, NULL, &over) == OG_ERR_UNSUPPORTED && over == NULL);
    CHECK(strstr(og_last_error(), "100") != NULL);
    og_tensor_free(cur);

    og_tensor_free(seq_maps);
    og_tensor_free(opt);
    og_tensor_free(none);
    og_tensor_free(iv);
    og_tensor_free(dkeys);
    og_tensor_free(v0);
    og_tensor_free(v1);
    og_tensor_free(keys);
    og_tensor_free(map);
    og_tensor_free(seq);
    og_tensor_free(x);
    og_tensor_free(y);
    og_tensor_free(NULL);
}

/* Every allocation of making a sequence of maps fails in turn: a status, nothing leaked. */
static void test_alloc_failures(void)
{
    int64_t d2 = 2;
    const char *names[2] = {"a", "b"};
    float v[2] = {1, 2};
    for (long fail_at = 0;; fail_at++) {
        og_test_counting c = {0, fail_at, 0};
        og_allocator al = {og_test_malloc, og_test_free, &c};
        og_tensor *keys = NULL, *v0 = NULL, *v1 = NULL, *map = NULL, *seq = NULL;
        og_status st = og_tensor_from_strings(1, &d2, names, &al, &keys);
        if (!st) st = og_tensor_from_data(OG_FLOAT, 0, NULL, v, 4, &al, &v0);
        if (!st) st = og_tensor_from_data(OG_FLOAT, 0, NULL, v + 1, 4, &al, &v1);
        const og_tensor *vals[2] = {v0, v1};
        if (!st) st = og_map_create(keys, vals, &al, &map);
        const og_tensor *items[2] = {map, map};
        if (!st) st = og_sequence_create(items, 2, &al, &seq);
        og_tensor_free(seq);
        og_tensor_free(map);
        og_tensor_free(v0);
        og_tensor_free(v1);
        og_tensor_free(keys);
        CHECK(st == OG_OK || st == OG_ERR_NOMEM);
        CHECK(c.live == 0);
        if (st == OG_OK) break;
    }
}

static og_model *load(const char *path)
{
    og_model *m = NULL;
    CHECK_OK(og_model_load_file(path, NULL, &m));
    return m;
}

/* strings.onnx: the string tensors through the data-movement ops. */
static void test_string_model(void)
{
    og_model *m = load("tests/data/values/strings.onnx");
    og_session *s = NULL;
    if (!m || og_session_create(m, NULL, &s)) {
        CHECK(0);
        og_model_free(m);
        return;
    }
    int64_t idx[2] = {2, 0}, d2 = 2, d3 = 3;
    og_tensor *ti = NULL;
    CHECK_OK(og_tensor_from_data(OG_INT64, 1, &d2, idx, sizeof idx, NULL, &ti));
    const char *in_s[3] = {"p", "qq", "rrr"};
    og_tensor *ts = strings(1, &d3, in_s);
    const char *names[2] = {"idx", "s"};
    const og_tensor *ins[2] = {ti, ts};
    og_tensor *out[11] = {0};
    CHECK(og_model_output_count(m) == 11);
    CHECK_OK(og_session_run(s, names, ins, 2, out));
    /* W = [["a", "bb", ""], ["dddd", "é", "ffffff"]] */
    static const char *const expect[11][12] = {
        {"x", "yy",
         "long string long string long string long string long string long string "
         "long string long string "},
        {"", "a", "ffffff", "dddd"},
        {"a", "bb", "", "dddd", "\xc3\xa9", "ffffff", "a", "bb", "", "dddd", "\xc3\xa9", "ffffff"},
        {"bb", "", "\xc3\xa9", "ffffff"},
        {"a", "dddd", "bb", "\xc3\xa9", "", "ffffff"},
        {"a", "bb", "", "dddd", "\xc3\xa9", "ffffff", "a", "bb", "", "dddd", "\xc3\xa9", "ffffff"},
        {"a", "bb", "", "a", "bb", "", "dddd", "\xc3\xa9", "ffffff", "dddd", "\xc3\xa9", "ffffff"},
        {"x", "yy"},
        {"long string long string long string long string long string long string long string "
         "long string "},
        {"a", "bb", "", "dddd", "\xc3\xa9", "ffffff"},
        {"p", "qq", "rrr"}};
    static const int64_t numel[11] = {3, 4, 12, 4, 6, 12, 12, 2, 1, 6, 3};
    for (int j = 0; j < 11; j++) {
        CHECK(out[j] && og_tensor_dtype(out[j]) == OG_STRING &&
              og_tensor_numel(out[j]) == numel[j]);
        for (int64_t i = 0; out[j] && i < numel[j]; i++)
            if (strcmp(og_tensor_string(out[j], i), expect[j][i]) != 0) {
                fprintf(stderr, "output %d element %lld: '%s', expected '%s'\n", j, (long long)i,
                        og_tensor_string(out[j], i), expect[j][i]);
                CHECK(0);
            }
    }
    for (int j = 0; j < 11; j++) og_tensor_free(out[j]);
    /* a run again reuses the pool's blocks: strings must not leak or be freed twice */
    CHECK_OK(og_session_run(s, names, ins, 2, out));
    for (int j = 0; j < 11; j++) og_tensor_free(out[j]);
    /* a string tensor where int64 is declared */
    const og_tensor *wrong[2] = {ts, ts};
    CHECK(og_session_run(s, names, wrong, 2, out) == OG_ERR_TYPE);
    /* save and reload: the string initializer and Constant survive */
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(og_model_save_buffer(m, &bytes, &size));
    og_model *m2 = NULL;
    CHECK_OK(og_model_load_buffer(bytes, size, NULL, &m2));
    og_model_buffer_free(m, bytes);
    CHECK(m2 && og_model_initializer_count(m2) == 1);
    const og_tensor *w = m2 ? og_model_initializer(m2, 0) : NULL;
    CHECK(w && og_tensor_dtype(w) == OG_STRING && strcmp(og_tensor_string(w, 4), "\xc3\xa9") == 0);
    og_model_free(m2);
    og_tensor_free(ti);
    og_tensor_free(ts);
    og_session_free(s);
    og_model_free(m);
}

/* kinds.onnx: a sequence, a map and an optional in and out. */
static void test_kinds_model(void)
{
    og_model *m = load("tests/data/values/kinds.onnx");
    if (!m) return;
    char type[256];
    og_kind kind;
    CHECK_OK(og_model_input_type(m, 0, &kind, type, sizeof type));
    CHECK(kind == OG_KIND_SEQUENCE && strcmp(type, "seq(float32)") == 0);
    CHECK_OK(og_model_input_type(m, 1, &kind, type, sizeof type));
    CHECK(kind == OG_KIND_MAP && strcmp(type, "map(int64, float32 [])") == 0);
    CHECK_OK(og_model_output_type(m, 2, &kind, type, sizeof type));
    CHECK(kind == OG_KIND_OPTIONAL && strcmp(type, "optional(seq(int64 [k]))") == 0);
    CHECK(og_model_output_type(m, 3, &kind, type, sizeof type) == OG_ERR_INVALID_ARG);
    CHECK(type[0] == 0 && kind == OG_KIND_TENSOR);
    og_dtype dt;
    int rank;
    CHECK_OK(og_model_input_info(m, 0, &dt, &rank, NULL, NULL));
    CHECK(dt == OG_UNDEFINED && rank == -1);
    /* a short buffer is cut, NUL-terminated */
    char tiny[5];
    CHECK_OK(og_model_input_type(m, 2, NULL, tiny, sizeof tiny));
    CHECK(strcmp(tiny, "opti") == 0);

    og_session *s = NULL;
    CHECK_OK(og_session_create(m, NULL, &s));
    int64_t d2 = 2, d3 = 3;
    float a[3] = {1, 2, 3}, half = 0.5f;
    int64_t k[3] = {7, 8, 9}, keys_v[2] = {3, 1};
    og_tensor *x = floats(1, &d3, a, 3), *sc = floats(0, NULL, &half, 1), *ki = NULL, *keys = NULL;
    CHECK_OK(og_tensor_from_data(OG_INT64, 1, &d3, k, sizeof k, NULL, &ki));
    CHECK_OK(og_tensor_from_data(OG_INT64, 1, &d2, keys_v, sizeof keys_v, NULL, &keys));
    const og_tensor *xs[2] = {x, x}, *vals[2] = {sc, sc}, *kis[1] = {ki};
    og_tensor *seq = NULL, *map = NULL, *seqk = NULL, *opt = NULL, *none = NULL;
    CHECK_OK(og_sequence_create(xs, 2, NULL, &seq));
    CHECK_OK(og_map_create(keys, vals, NULL, &map));
    CHECK_OK(og_sequence_create(kis, 1, NULL, &seqk));
    CHECK_OK(og_optional_create(seqk, NULL, &opt));
    CHECK_OK(og_optional_create(NULL, NULL, &none));
    const char *names[3] = {"S", "M", "O"};
    const og_tensor *ins[3] = {seq, map, opt};
    og_tensor *out[3] = {0};
    CHECK_OK(og_session_run(s, names, ins, 3, out));
    CHECK(out[0] && og_tensor_kind(out[0]) == OG_KIND_SEQUENCE && og_sequence_length(out[0]) == 2);
    CHECK(out[1] && og_map_size(out[1]) == 2 &&
          ((const int64_t *)og_tensor_cdata(og_map_keys(out[1])))[0] == 3);
    const og_tensor *inner = og_optional_value(out[2]);
    CHECK(inner && ((const int64_t *)og_tensor_cdata(og_sequence_item(inner, 0)))[2] == 9);
    /* the outputs own their data: they outlive the inputs and the session */
    og_tensor_free(seq);
    seq = NULL;
    CHECK(((const float *)og_tensor_cdata(og_sequence_item(out[0], 1)))[2] == 3);
    for (int j = 0; j < 3; j++) og_tensor_free(out[j]);
    /* an optional where a sequence is declared; then an empty optional */
    const og_tensor *ins2[3] = {opt, map, none};
    CHECK(og_session_run(s, names, ins2, 3, out) == OG_ERR_TYPE); /* an optional for S */
    CHECK(strstr(og_last_error(), "'S'") != NULL);
    og_tensor *seq2 = NULL;
    CHECK_OK(og_sequence_create(xs, 2, NULL, &seq2));
    const og_tensor *ins3[3] = {seq2, map, none};
    CHECK_OK(og_session_run(s, names, ins3, 3, out));
    CHECK(out[2] && og_tensor_kind(out[2]) == OG_KIND_OPTIONAL && !og_optional_value(out[2]));
    for (int j = 0; j < 3; j++) og_tensor_free(out[j]);
    /* a tensor for a map, a map of string keys for int64 keys */
    const og_tensor *ins4[3] = {seq2, x, none};
    CHECK(og_session_run(s, names, ins4, 3, out) == OG_ERR_TYPE);
    const char *sk[2] = {"a", "b"};
    og_tensor *skeys = strings(1, &d2, sk), *smap = NULL;
    CHECK_OK(og_map_create(skeys, vals, NULL, &smap));
    const og_tensor *ins5[3] = {seq2, smap, none};
    CHECK(og_session_run(s, names, ins5, 3, out) == OG_ERR_TYPE);
    CHECK(strstr(og_last_error(), "string keys") != NULL);

    /* the types survive save and load */
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(og_model_save_buffer(m, &bytes, &size));
    og_model *m2 = NULL;
    CHECK_OK(og_model_load_buffer(bytes, size, NULL, &m2));
    og_model_buffer_free(m, bytes);
    CHECK_OK(og_model_output_type(m2, 2, &kind, type, sizeof type));
    CHECK(strcmp(type, "optional(seq(int64 [k]))") == 0);
    og_model_free(m2);

    og_tensor_free(smap);
    og_tensor_free(skeys);
    og_tensor_free(seq2);
    og_tensor_free(none);
    og_tensor_free(opt);
    og_tensor_free(seqk);
    og_tensor_free(map);
    og_tensor_free(keys);
    og_tensor_free(ki);
    og_tensor_free(sc);
    og_tensor_free(x);
    og_session_free(s);
    og_model_free(m);
}

/* Types nested OG_MAX_NESTING deep load and run; one level more is refused at load (by the
 * scan of the bytes, before decoding: og_load_options.max_depth). */
static void test_depth(void)
{
    og_model *m = NULL;
    CHECK(og_model_load_file("tests/data/values/deep_bad.onnx", NULL, &m) == OG_ERR_LIMIT);
    CHECK(strstr(og_last_error(), "100") != NULL && m == NULL);
    m = load("tests/data/values/deep_ok.onnx");
    og_session *s = NULL;
    if (!m || og_session_create(m, NULL, &s)) {
        CHECK(0);
        og_model_free(m);
        return;
    }
    int64_t d2 = 2;
    float v[2] = {1, 2};
    og_tensor *cur = floats(1, &d2, v, 2);
    for (int i = 0; i < OG_MAX_NESTING && cur; i++) {
        og_tensor *next = NULL;
        CHECK_OK(og_optional_create(cur, NULL, &next));
        og_tensor_free(cur);
        cur = next;
    }
    const char *names[1] = {"D"};
    const og_tensor *ins[1] = {cur};
    og_tensor *out = NULL;
    CHECK_OK(og_session_run(s, names, ins, 1, &out));
    const og_tensor *t = out;
    for (int i = 0; i < OG_MAX_NESTING && t; i++) t = og_optional_value(t);
    CHECK(t && og_tensor_kind(t) == OG_KIND_TENSOR && ((const float *)og_tensor_cdata(t))[1] == 2);
    og_tensor_free(out);
    og_tensor_free(cur);
    og_session_free(s);
    og_model_free(m);
}

int main(void)
{
    test_strings();
    test_npy_object();
    test_containers();
    test_alloc_failures();
    test_string_model();
    test_kinds_model();
    test_depth();
    TEST_DONE();
}
