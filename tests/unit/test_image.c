/* test_image.c: ImageDecoder on streams written here: PNG (8-bit RGB with Sub and Up filters,
 * 16-bit gray Adam7-interlaced, 4-bit palette), BMP (24-bit bottom-up, 8-bit palette
 * top-down), PNM (P3 ASCII, P5 16-bit, P4 bits), TIFF (PackBits, big-endian); the three pixel
 * formats; every truncation of each stream (the spec's empty image or the whole one, never a
 * read past the end: ASan runs this too), a damaged CRC, and JPEG refused. */
#include <zlib.h>

#include "unit/node_harness.h"

typedef struct buf {
    uint8_t d[8192];
    size_t n;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    if (n) memcpy(b->d + b->n, p, n); /* p may be NULL when n is 0 */
    b->n += n;
}
static void be32p(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}
static void le32p(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void le16p(buf *b, uint32_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}

static void chunk(buf *b, const char *type, const uint8_t *p, size_t n)
{
    be32p(b, (uint32_t)n);
    put(b, type, 4);
    put(b, p, n);
    /* zlib's crc32 of a NULL buffer is its initial value, whatever the crc passed */
    be32p(b,
          (uint32_t)crc32(crc32(0, (const Bytef *)type, 4), p ? p : (const uint8_t *)"", (uInt)n));
}

/* A PNG of w x h from raw (filtered) scanlines. */
static void png(buf *b, uint32_t w, uint32_t h, int depth, int type, int interlace,
                const uint8_t *raw, size_t raw_n, const uint8_t *plte, size_t plte_n)
{
    b->n = 0;
    put(b, "\x89PNG\r\n\x1a\n", 8);
    uint8_t ihdr[13] = {(uint8_t)(w >> 24),
                        (uint8_t)(w >> 16),
                        (uint8_t)(w >> 8),
                        (uint8_t)w,
                        (uint8_t)(h >> 24),
                        (uint8_t)(h >> 16),
                        (uint8_t)(h >> 8),
                        (uint8_t)h,
                        (uint8_t)depth,
                        (uint8_t)type,
                        0,
                        0,
                        (uint8_t)interlace};
    chunk(b, "IHDR", ihdr, 13);
    if (plte) chunk(b, "PLTE", plte, plte_n);
    uint8_t z[4096];
    uLongf zn = sizeof z;
    compress(z, &zn, raw, (uLong)raw_n);
    chunk(b, "IDAT", z, zn);
    chunk(b, "IEND", (const uint8_t *)"", 0);
}

static og_tensor *stream(const buf *b, size_t n)
{
    int64_t d = (int64_t)n;
    return nh_tensor_raw(OG_UINT8, 1, &d, b->d);
}

/* Decode b with pixel format fmt; NULL (a check failed) when the run fails. */
static og_tensor *decode(const buf *b, const char *fmt)
{
    og_tensor *s = stream(b, b->n);
    nh_node n = {
        .op = "ImageDecoder", .opset = 20, .attrs = {NH_STRING("pixel_format", fmt)}, .in = {s}};
    nh_result r;
    og_status st = nh_run(&n, &r);
    CHECKF(st == OG_OK, "decoding %s", fmt);
    og_tensor *t = st ? NULL : nh_take(&r, 0);
    nh_release(&r);
    og_tensor_free(s);
    return t;
}

/* Every prefix of b decodes to the empty image (or, for the whole stream, to `whole`). */
static void truncations(const buf *b, const char *what)
{
    int bad = 0;
    for (size_t n = 0; n < b->n; n++) {
        og_tensor *s = stream(b, n);
        nh_node node = {.op = "ImageDecoder", .opset = 20, .in = {s}};
        nh_result r;
        og_status st = nh_run(&node, &r);
        bad += st != OG_OK || !r.out[0] || (r.out[0]->numel != 0 && n < b->n - 12);
        nh_release(&r);
        og_tensor_free(s);
    }
    CHECKF(bad == 0, "%s: %d truncations decoded to something", what, bad);
}

static bool pixels(const og_tensor *t, int64_t h, int64_t w, int64_t c, const uint8_t *want)
{
    return t && t->rank == 3 && t->dims[0] == h && t->dims[1] == w && t->dims[2] == c &&
           memcmp(t->data, want, (size_t)(h * w * c)) == 0;
}

static void test_png(void)
{
    /* 3 x 2 RGB, the rows filtered Sub (minus the pixel to the left) and Up (minus the one
     * above) */
    uint8_t img[18] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 15, 25, 35, 45, 55, 65, 75, 85, 95};
    uint8_t raw[2 * 10];
    raw[0] = 1; /* Sub */
    for (int i = 0; i < 9; i++) raw[1 + i] = (uint8_t)(img[i] - (i >= 3 ? img[i - 3] : 0));
    raw[10] = 2; /* Up */
    for (int i = 0; i < 9; i++) raw[11 + i] = (uint8_t)(img[9 + i] - img[i]);
    buf b;
    png(&b, 3, 2, 8, 2, 0, raw, sizeof raw, NULL, 0);
    og_tensor *t = decode(&b, "RGB");
    CHECK(pixels(t, 2, 3, 3, img));
    og_tensor_free(t);
    uint8_t bgr[18], gray[6];
    for (int i = 0; i < 6; i++) {
        bgr[3 * i] = img[3 * i + 2], bgr[3 * i + 1] = img[3 * i + 1], bgr[3 * i + 2] = img[3 * i];
        gray[i] = (uint8_t)((19595u * img[3 * i] + 38470u * img[3 * i + 1] +
                             7471u * img[3 * i + 2] + 0x8000u) >>
                            16);
    }
    t = decode(&b, "BGR");
    CHECK(pixels(t, 2, 3, 3, bgr));
    og_tensor_free(t);
    t = decode(&b, "Grayscale");
    CHECK(pixels(t, 2, 3, 1, gray));
    og_tensor_free(t);
    truncations(&b, "png rgb");
    b.d[b.n - 20] ^= 1; /* a byte of IDAT: its CRC fails */
    t = decode(&b, "RGB");
    CHECK(t && t->numel == 0);
    og_tensor_free(t);

    /* 16-bit gray, 3 x 3, Adam7: the passes that are not empty for 3 x 3 are 1, 4, 5, 6, 7 */
    uint16_t g[9] = {0x0100, 0x0200, 0x0300, 0x0400, 0x0500, 0x0600, 0x0700, 0x0800, 0x0900};
    /* pass 1: (0,0); pass 4: x=2,y=0; pass 5: y=2 x=0,2; pass 6: x=1 y=0,2; pass 7: row 1 */
    const int order[][2] = {{0, 0}, {2, 0}, {0, 2}, {2, 2}, {1, 0}, {1, 2}, {0, 1}, {1, 1}, {2, 1}};
    uint8_t r16[64];
    size_t k = 0;
    int px = 0;
    /* pass 1: 1 row of 1; pass 4: 1 of 1; pass 5: 1 of 2; pass 6: 2 rows of 1; pass 7: 1 of 3 */
    int pass_rows[][2] = {{1, 1}, {1, 1}, {1, 2}, {2, 1}, {1, 3}};
    for (int p = 0; p < 5; p++)
        for (int y = 0; y < pass_rows[p][0]; y++) {
            r16[k++] = 0;
            for (int x = 0; x < pass_rows[p][1]; x++, px++) {
                uint16_t v = g[order[px][1] * 3 + order[px][0]];
                r16[k++] = (uint8_t)(v >> 8);
                r16[k++] = (uint8_t)v;
            }
        }
    png(&b, 3, 3, 16, 0, 1, r16, k, NULL, 0);
    t = decode(&b, "Grayscale");
    CHECK(pixels(t, 3, 3, 1, (uint8_t[]){1, 2, 3, 4, 5, 6, 7, 8, 9}));
    og_tensor_free(t);
    truncations(&b, "png interlaced");

    /* 4-bit palette, 3 x 1: indices 2, 0, 1 */
    uint8_t pal[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, r4[3] = {0, 0x20, 0x10};
    png(&b, 3, 1, 4, 3, 0, r4, 3, pal, 9);
    t = decode(&b, "RGB");
    CHECK(pixels(t, 1, 3, 3, (uint8_t[]){7, 8, 9, 1, 2, 3, 4, 5, 6}));
    og_tensor_free(t);
}

static void test_bmp_pnm_tiff(void)
{
    buf b = {.n = 0};
    /* BMP 24-bit, 2 x 2 bottom-up: rows of 6 bytes padded to 8 */
    put(&b, "BM", 2);
    le32p(&b, 70), le32p(&b, 0), le32p(&b, 54);
    le32p(&b, 40), le32p(&b, 2), le32p(&b, 2), le16p(&b, 1), le16p(&b, 24), le32p(&b, 0),
        le32p(&b, 16);
    for (int i = 0; i < 4; i++) le32p(&b, 0);
    uint8_t px[16] = {1, 2, 3, 4,  5,  6,  0, 0,
                      7, 8, 9, 10, 11, 12, 0, 0}; /* bottom row first, BGR */
    put(&b, px, 16);
    og_tensor *t = decode(&b, "RGB");
    CHECK(pixels(t, 2, 2, 3, (uint8_t[]){9, 8, 7, 12, 11, 10, 3, 2, 1, 6, 5, 4}));
    og_tensor_free(t);
    truncations(&b, "bmp");
    /* BMP 8-bit palette, top-down 3 x 1 */
    b.n = 0;
    put(&b, "BM", 2);
    le32p(&b, 0), le32p(&b, 0), le32p(&b, 54 + 8);
    le32p(&b, 40), le32p(&b, 3), le32p(&b, (uint32_t)-1), le16p(&b, 1), le16p(&b, 8), le32p(&b, 0),
        le32p(&b, 4);
    le32p(&b, 0), le32p(&b, 0), le32p(&b, 2), le32p(&b, 0);
    put(&b, (uint8_t[]){30, 20, 10, 0, 60, 50, 40, 0}, 8);
    put(&b, (uint8_t[]){1, 0, 1, 0}, 4);
    t = decode(&b, "RGB");
    CHECK(pixels(t, 1, 3, 3, (uint8_t[]){40, 50, 60, 10, 20, 30, 40, 50, 60}));
    og_tensor_free(t);

    /* PNM: P3 ASCII with a comment and maxval 15; P5 16-bit; P4 bits */
    b.n = 0;
    const char *p3 = "P3 # rgb\n2 1 15\n15 0 0  0 15 7\n";
    put(&b, p3, strlen(p3));
    t = decode(&b, "RGB");
    CHECK(pixels(t, 1, 2, 3, (uint8_t[]){255, 0, 0, 0, 255, 119}));
    og_tensor_free(t);
    b.n = 0;
    put(&b, "P5\n2 1\n65535\n\x12\x34\xff\xff", 17);
    t = decode(&b, "Grayscale");
    CHECK(pixels(t, 1, 2, 1, (uint8_t[]){0x12, 0xff}));
    og_tensor_free(t);
    truncations(&b, "pnm p5");
    b.n = 0;
    put(&b, "P4 9 1 \xa5\x80", 9);
    t = decode(&b, "Grayscale");
    CHECK(pixels(t, 1, 9, 1, (uint8_t[]){0, 255, 0, 255, 255, 0, 255, 0, 0}));
    og_tensor_free(t);

    /* TIFF, big-endian, 3 x 1 gray, PackBits: a run of 3 x 77 */
    b.n = 0;
    put(&b, "MM\0*", 4);
    uint8_t ifd[] = {0,
                     0,
                     0,
                     8,
                     0,
                     7,
                     /* 256 width 3 */ 1,
                     0,
                     0,
                     3,
                     0,
                     0,
                     0,
                     1,
                     0,
                     3,
                     0,
                     0,
                     /* 257 height 1 */ 1,
                     1,
                     0,
                     3,
                     0,
                     0,
                     0,
                     1,
                     0,
                     1,
                     0,
                     0,
                     /* 258 bits 8 */ 1,
                     2,
                     0,
                     3,
                     0,
                     0,
                     0,
                     1,
                     0,
                     8,
                     0,
                     0,
                     /* 259 PackBits */ 1,
                     3,
                     0,
                     3,
                     0,
                     0,
                     0,
                     1,
                     0x80,
                     5,
                     0,
                     0,
                     /* 262 black is zero */ 1,
                     6,
                     0,
                     3,
                     0,
                     0,
                     0,
                     1,
                     0,
                     1,
                     0,
                     0,
                     /* 273 offset 98 */ 1,
                     17,
                     0,
                     4,
                     0,
                     0,
                     0,
                     1,
                     0,
                     0,
                     0,
                     98,
                     /* 279 count 2 */ 1,
                     23,
                     0,
                     4,
                     0,
                     0,
                     0,
                     1,
                     0,
                     0,
                     0,
                     2,
                     0,
                     0,
                     0,
                     0};
    put(&b, ifd, sizeof ifd); /* the directory's offset (8), its 7 entries, no next one */
    put(&b, (uint8_t[]){0xfe, 77}, 2);
    t = decode(&b, "RGB");
    CHECK(pixels(t, 1, 3, 3, (uint8_t[]){77, 77, 77, 77, 77, 77, 77, 77, 77}));
    og_tensor_free(t);
    truncations(&b, "tiff");

    /* JPEG is refused, junk is the empty image */
    b.n = 0;
    put(&b, "\xff\xd8\xff\xe0", 4);
    og_tensor *s = stream(&b, b.n);
    nh_node j = {.op = "ImageDecoder", .opset = 20, .in = {s}};
    nh_expect_fail(&j, NH_RUN, OG_ERR_UNSUPPORTED, "JPEG");
    og_tensor_free(s);
    nh_node bad = {.op = "ImageDecoder",
                   .opset = 20,
                   .attrs = {NH_STRING("pixel_format", "CMYK")},
                   .in = {NULL}};
    og_tensor *one = nh_tensor(OG_UINT8, 1, (int64_t[]){1}, NULL);
    bad.in[0] = one;
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_MODEL, "pixel_format");
    og_tensor_free(one);
}

int main(void)
{
    test_png();
    test_bmp_pnm_tiff();
    NH_DONE();
}
