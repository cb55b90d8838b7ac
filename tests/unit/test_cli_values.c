/* test_cli_values.c: the CLI's writer of run outputs (tools/values.c), on values no op of
 * the CLI's models makes yet: a sequence of tensors (one .npy per item, listed in the
 * manifest), an optional with and without a value, nested sequences and maps (JSON), string
 * tensors, and names that need sanitizing and de-duplicating. */
#include "../../tools/values.c" /* first: it sets _POSIX_C_SOURCE */

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int main(void)
{
    char dir[] = "/tmp/og_cli_values_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int64_t d2 = 2, d3 = 3;
    float a[3] = {1.5f, -2, 3}, b[2] = {4, 5}, half = 0.5f;
    og_tensor *x = NULL, *y = NULL, *sc = NULL, *seq = NULL, *opt = NULL, *none = NULL;
    og_tensor *map = NULL, *seq_maps = NULL, *nested = NULL, *words = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 1, &d3, a, sizeof a, NULL, &x));
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 1, &d2, b, sizeof b, NULL, &y));
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 0, NULL, &half, sizeof half, NULL, &sc));
    const og_tensor *xy[2] = {x, y};
    CHECK_OK(og_sequence_create(xy, 2, NULL, &seq));
    CHECK_OK(og_optional_create(x, NULL, &opt));
    CHECK_OK(og_optional_create(NULL, NULL, &none));
    const char *k[2] = {"a\"b", "c"};
    og_tensor *keys = NULL;
    CHECK_OK(og_tensor_from_strings(1, &d2, k, NULL, &keys));
    const og_tensor *vals[2] = {sc, x};
    CHECK_OK(og_map_create(keys, vals, NULL, &map));
    const og_tensor *maps[2] = {map, map};
    CHECK_OK(og_sequence_create(maps, 2, NULL, &seq_maps));
    const og_tensor *seqs[2] = {seq, seq};
    CHECK_OK(og_sequence_create(seqs, 2, NULL, &nested));
    const char *w[3] = {"x", "h\xc3\xa9", ""};
    CHECK_OK(og_tensor_from_strings(1, &d3, w, NULL, &words));

    const char *names[7] = {"seq/t", "opt", "none", "maps", "nested", "words", "seq_t_0"};
    og_tensor *values[7] = {seq, opt, none, seq_maps, nested, words, y};
    CHECK(cli_write_outputs(names, values, 7, dir) == 0);

    char path[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    char *m = slurp(path);
    CHECK(m != NULL);
    if (m) {
        CHECK(strstr(m, "\"seq/t\": [\"seq_t_0.npy\", \"seq_t_1.npy\"]") != NULL);
        CHECK(strstr(m, "\"opt\": \"opt.npy\"") != NULL);
        CHECK(strstr(m, "\"none\": null") != NULL);
        CHECK(strstr(m, "\"maps\": \"maps.json\"") != NULL);
        CHECK(strstr(m, "\"nested\": \"nested.json\"") != NULL);
        CHECK(strstr(m, "\"words\": \"words.npy\"") != NULL);
        CHECK(strstr(m, "\"seq_t_0\": \"seq_t_0_1.npy\"") != NULL); /* kept unique */
        free(m);
    }
    og_tensor *back = NULL;
    snprintf(path, sizeof path, "%s/seq_t_1.npy", dir);
    CHECK_OK(og_npy_load(path, NULL, &back));
    CHECK(back && og_tensor_numel(back) == 2 && ((const float *)og_tensor_cdata(back))[1] == 5);
    og_tensor_free(back);
    snprintf(path, sizeof path, "%s/words.npy", dir);
    CHECK_OK(og_npy_load(path, NULL, &back));
    CHECK(back && strcmp(og_tensor_string(back, 1), "h\xc3\xa9") == 0);
    og_tensor_free(back);
    snprintf(path, sizeof path, "%s/maps.json", dir);
    char *j = slurp(path);
    CHECK(j &&
          strcmp(j, "[{\"a\\\"b\": 0.5, \"c\": [1.5, -2, 3]}, {\"a\\\"b\": 0.5, \"c\": [1.5, -2, "
                    "3]}]\n") == 0);
    free(j);
    snprintf(path, sizeof path, "%s/nested.json", dir);
    j = slurp(path);
    CHECK(j && strcmp(j, "[[[1.5, -2, 3], [4, 5]], [[1.5, -2, 3], [4, 5]]]\n") == 0);
    free(j);

    /* an unwritable folder: status 1, no crash */
    CHECK(cli_write_outputs(names, values, 1, "/proc/og_no_such_dir") == 1);

    og_tensor *all[] = {x, y, sc, seq, opt, none, map, seq_maps, nested, words, keys};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) og_tensor_free(all[i]);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_DONE();
}
