/* .npy read and write: every supported dtype round-trips; other dtypes, Fortran order and
 * truncated files are refused with a reason. */
#define _XOPEN_SOURCE 700
#include <string.h>
#include <unistd.h>

#include "test.h"

static void roundtrip(og_dtype dt, const char *path)
{
    int64_t dims[3] = {2, 3, 4};
    og_tensor *t = NULL, *u = NULL;
    CHECK_OK(og_tensor_create(dt, 3, dims, NULL, &t));
    if (!t) return;
    unsigned char *d = og_tensor_data(t);
    for (size_t i = 0; i < og_tensor_nbytes(t); i++) d[i] = (unsigned char)(i * 7 + 1);
    if (dt == OG_BOOL)
        for (size_t i = 0; i < og_tensor_nbytes(t); i++) d[i] &= 1;
    CHECK_OK(og_npy_save(path, t));
    CHECK_OK(og_npy_load(path, NULL, &u));
    if (u) {
        CHECK(og_tensor_dtype(u) == dt);
        CHECK(og_tensor_rank(u) == 3 && og_tensor_dims(u)[2] == 4);
        CHECK(memcmp(og_tensor_cdata(u), d, og_tensor_nbytes(t)) == 0);
    }
    og_tensor_free(t);
    og_tensor_free(u);
}

static og_status load_header(const char *header, const void *data, size_t n)
{
    unsigned char buf[512];
    size_t hl = strlen(header);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)hl;
    buf[9] = 0;
    memcpy(buf + 10, header, hl);
    memcpy(buf + 10 + hl, data, n);
    og_tensor *t = NULL;
    og_status st = og_npy_load_buffer(buf, 10 + hl + n, NULL, &t);
    og_tensor_free(t);
    return st;
}

int main(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/og_npy_%d.npy", (int)getpid());
    og_dtype types[] = {OG_FLOAT16, OG_FLOAT, OG_DOUBLE, OG_INT32, OG_INT64, OG_BOOL};
    for (int i = 0; i < 6; i++) roundtrip(types[i], path);

    /* a scalar and an empty array */
    og_tensor *t = NULL, *u = NULL;
    CHECK_OK(og_tensor_create(OG_FLOAT, 0, NULL, NULL, &t));
    CHECK_OK(og_npy_save(path, t));
    CHECK_OK(og_npy_load(path, NULL, &u));
    CHECK(u && og_tensor_rank(u) == 0 && og_tensor_numel(u) == 1);
    og_tensor_free(t);
    og_tensor_free(u);
    int64_t zero[2] = {0, 5};
    CHECK_OK(og_tensor_create(OG_INT64, 2, zero, NULL, &t));
    CHECK_OK(og_npy_save(path, t));
    CHECK_OK(og_npy_load(path, NULL, &u));
    CHECK(u && og_tensor_numel(u) == 0 && og_tensor_dims(u)[1] == 5);
    og_tensor_free(t);
    og_tensor_free(u);
    /* bfloat16 cannot be written (numpy has no such dtype); uint8 round-trips */
    int64_t one = 1;
    CHECK_OK(og_tensor_create(OG_BFLOAT16, 1, &one, NULL, &t));
    CHECK(og_npy_save(path, t) == OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "bfloat16") != NULL);
    og_tensor_free(t);
    CHECK_OK(og_tensor_create(OG_UINT8, 1, &one, NULL, &t));
    ((uint8_t *)og_tensor_data(t))[0] = 200;
    CHECK_OK(og_npy_save(path, t));
    CHECK_OK(og_npy_load(path, NULL, &u));
    CHECK(u && og_tensor_dtype(u) == OG_UINT8 && ((const uint8_t *)og_tensor_cdata(u))[0] == 200);
    og_tensor_free(t);
    og_tensor_free(u);
    remove(path);

    float f[2] = {1.0f, 2.0f};
    CHECK_OK(load_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", f, 8));
    /* big-endian is byte-swapped */
    unsigned char be[4] = {0x3f, 0x80, 0, 0};
    og_tensor *x = NULL;
    {
        const char *h = "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n";
        unsigned char buf[128];
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (unsigned char)strlen(h);
        buf[9] = 0;
        memcpy(buf + 10, h, strlen(h));
        memcpy(buf + 10 + strlen(h), be, 4);
        CHECK_OK(og_npy_load_buffer(buf, 10 + strlen(h) + 4, NULL, &x));
        CHECK(x && ((const float *)og_tensor_cdata(x))[0] == 1.0f);
        og_tensor_free(x);
    }
    CHECK(load_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", f, 8) ==
          OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "c8") != NULL);
    CHECK(load_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", f, 8) ==
          OG_ERR_UNSUPPORTED);
    CHECK(strstr(og_last_error(), "Fortran") != NULL);
    CHECK(load_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n", f, 8) ==
          OG_ERR_UNSUPPORTED);
    CHECK(load_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", f, 8) ==
          OG_ERR_PARSE); /* truncated data */
    CHECK(load_header("{'descr': '<f4', 'shape': (2,), }\n", f, 8) == OG_ERR_PARSE);
    CHECK(load_header(
              "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", f,
              8) == OG_ERR_PARSE);
    CHECK(og_npy_load_buffer("NOTNUMPY", 8, NULL, &x) == OG_ERR_PARSE);
    CHECK(og_npy_load("/nonexistent/x.npy", NULL, &x) == OG_ERR_IO);
    TEST_DONE();
}
