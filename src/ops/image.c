/* image.c: ImageDecoder (20) and its decoders (image.h says which formats and why).  Every
 * read is bounds-checked: a stream is untrusted input, and a damaged one gives the spec's
 * empty image, never a read past its end. */
#include <string.h>
#include <zlib.h>

#include "ops/image.h"

#define MAX_PIXELS ((int64_t)1 << 28)

/* ---- bytes ------------------------------------------------------------------------------ */

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static bool has(const rd *r, size_t off, size_t len) { return off <= r->n && len <= r->n - off; }
static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p) { return be16(p) << 16 | be16(p + 2); }

/* An image of w x h x ch, zeroed, for a stream of n bytes.  None (px NULL: the caller
 * reports the damage) for a size of 0, or one no stream of n bytes can hold: deflate expands
 * at most ~1032 times, the other codings less, so a few bytes claiming a huge image allocate
 * nothing. */
static og_status img_alloc(const og_op_ctx *c, og_image *img, int64_t w, int64_t h, int ch,
                           size_t n)
{
    if (w <= 0 || h <= 0) return OG_OK;
    if (w > MAX_PIXELS || h > MAX_PIXELS || w * h > MAX_PIXELS)
        return og_op_error(c, OG_ERR_SHAPE,
                           "the image is %lld x %lld pixels, above the limit of %lld", (long long)w,
                           (long long)h, (long long)MAX_PIXELS);
    if ((uint64_t)(w * h) > (uint64_t)n * 1100 + 4096) return OG_OK;
    img->px = og_calloc(c->alloc, (size_t)(w * h * ch), 1);
    if (!img->px)
        return og_op_error(c, OG_ERR_NOMEM, "out of memory for a %lld x %lld image", (long long)w,
                           (long long)h);
    img->w = w;
    img->h = h;
    img->ch = ch;
    return OG_OK;
}

/* Scale a sample of `bits` bits (1..16) to 8 bits. */
static uint8_t to8(uint32_t v, int bits)
{
    if (bits == 8) return (uint8_t)v;
    if (bits == 16) return (uint8_t)(v >> 8);
    uint32_t mx = (1u << bits) - 1;
    return (uint8_t)((v * 255 + mx / 2) / mx);
}

/* ---- BMP -------------------------------------------------------------------------------- */

static og_status bmp(const og_op_ctx *c, const rd *r, og_image *img, const char **why)
{
    if (!has(r, 14, 40)) return *why = "a truncated BMP header", OG_OK;
    const uint8_t *d = r->p;
    uint32_t off = le32(d + 10), hs = le32(d + 14), bpp = le16(d + 28), comp = le32(d + 30);
    int32_t w = (int32_t)le32(d + 18), h = (int32_t)le32(d + 22);
    if (hs < 40 || w <= 0 || h == 0 || h == INT32_MIN)
        return *why = "an unsupported BMP header", OG_OK;
    bool top_down = h < 0;
    int64_t H = top_down ? -(int64_t)h : h;
    if (!(comp == 0 || (comp == 3 && (bpp == 16 || bpp == 32))) ||
        !(bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32))
        return *why = "a compressed BMP (RLE) or an unusual bit depth", OG_OK;
    uint32_t mask[3] = {0}, shift[3], width[3];
    if (bpp == 16 || bpp == 32) {
        if (comp == 3) {
            if (!has(r, 54, 12)) return *why = "truncated BMP bit fields", OG_OK;
            for (int k = 0; k < 3; k++) mask[k] = le32(d + 54 + 4 * k);
        } else if (bpp == 16) {
            mask[0] = 0x7c00, mask[1] = 0x3e0, mask[2] = 0x1f;
        } else {
            mask[0] = 0xff0000, mask[1] = 0xff00, mask[2] = 0xff;
        }
        for (int k = 0; k < 3; k++) {
            if (!mask[k]) return *why = "an empty BMP bit field", OG_OK;
            for (shift[k] = 0; !((mask[k] >> shift[k]) & 1); shift[k]++) {
            }
            for (width[k] = 0; shift[k] + width[k] < 32 && ((mask[k] >> (shift[k] + width[k])) & 1);
                 width[k]++) {
            }
            if (width[k] > 16) width[k] = 16;
        }
    }
    const uint8_t *pal = NULL;
    uint32_t n_pal = 0;
    if (bpp <= 8) {
        n_pal = le32(d + 46) ? le32(d + 46) : 1u << bpp;
        if (n_pal > 256 || !has(r, 14 + hs, 4 * (size_t)n_pal))
            return *why = "a truncated BMP palette", OG_OK;
        pal = d + 14 + hs;
    }
    size_t stride = ((size_t)w * bpp + 31) / 32 * 4;
    if ((uint64_t)stride * (uint64_t)H > r->n || !has(r, off, stride * (size_t)H))
        return *why = "truncated BMP pixels", OG_OK;
    og_status st = img_alloc(c, img, w, H, 3, r->n);
    if (st || !img->px) return st;
    for (int64_t y = 0; y < H; y++) {
        const uint8_t *row = d + off + stride * (size_t)(top_down ? y : H - 1 - y);
        uint8_t *o = img->px + y * w * 3;
        for (int32_t x = 0; x < w; x++, o += 3) {
            if (bpp <= 8) {
                uint32_t bitpos = (uint32_t)x * bpp,
                         idx = (row[bitpos / 8] >> (8 - bpp - bitpos % 8)) & ((1u << bpp) - 1);
                if (idx >= n_pal) idx = 0;
                o[0] = pal[4 * idx + 2], o[1] = pal[4 * idx + 1], o[2] = pal[4 * idx];
            } else if (bpp == 24) {
                o[0] = row[3 * x + 2], o[1] = row[3 * x + 1], o[2] = row[3 * x];
            } else {
                uint32_t v = bpp == 16 ? le16(row + 2 * x) : le32(row + 4 * x);
                for (int k = 0; k < 3; k++) o[k] = to8((v & mask[k]) >> shift[k], (int)width[k]);
            }
        }
    }
    return OG_OK;
}

/* ---- PNG -------------------------------------------------------------------------------- */

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    size_t n;
    if (!og_mul_size(items, size, &n)) return NULL;
    return og_malloc(opaque, n);
}
static void z_free(voidpf opaque, voidpf p) { og_free(opaque, p); }

/* Inflate a zlib stream into exactly `want` bytes of out; false if it is damaged or shorter. */
static bool inflate_all(const og_allocator *a, const uint8_t *src, size_t n, uint8_t *out,
                        size_t want)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = z_alloc;
    zs.zfree = z_free;
    zs.opaque = (voidpf)a;
    if (inflateInit(&zs) != Z_OK) return false;
    size_t in_done = 0, out_done = 0;
    int rc = Z_OK;
    while (rc == Z_OK && out_done < want) {
        uInt in_chunk = (uInt)(n - in_done > (1u << 30) ? 1u << 30 : n - in_done);
        uInt out_chunk = (uInt)(want - out_done > (1u << 30) ? 1u << 30 : want - out_done);
        zs.next_in = (Bytef *)(src + in_done);
        zs.avail_in = in_chunk;
        zs.next_out = out + out_done;
        zs.avail_out = out_chunk;
        rc = inflate(&zs, Z_NO_FLUSH);
        in_done += in_chunk - zs.avail_in;
        out_done += out_chunk - zs.avail_out;
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_done < n) rc = Z_OK;
        if (rc == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk)
            break; /* no progress */
    }
    inflateEnd(&zs);
    return out_done == want;
}

static uint8_t paeth(int a, int b, int c)
{
    int p = a + b - c, pa = p > a ? p - a : a - p, pb = p > b ? p - b : b - p,
        pc = p > c ? p - c : c - p;
    return (uint8_t)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/* Undo the filters of h rows of rb bytes (each after its filter byte), bpp bytes a pixel. */
static bool unfilter(uint8_t *buf, int64_t h, size_t rb, size_t bpp)
{
    uint8_t *prev = NULL;
    for (int64_t y = 0; y < h; y++) {
        uint8_t *row = buf + (size_t)y * (rb + 1), f = row[0], *px = row + 1;
        if (f > 4) return false;
        for (size_t i = 0; i < rb; i++) {
            int a = i >= bpp ? px[i - bpp] : 0, b = prev ? prev[i] : 0,
                c = prev && i >= bpp ? prev[i - bpp] : 0;
            switch (f) {
            case 1: px[i] = (uint8_t)(px[i] + a); break;
            case 2: px[i] = (uint8_t)(px[i] + b); break;
            case 3: px[i] = (uint8_t)(px[i] + ((a + b) >> 1)); break;
            case 4: px[i] = (uint8_t)(px[i] + paeth(a, b, c)); break;
            default: break;
            }
        }
        prev = px;
    }
    return true;
}

/* Sample k (0-based) of a row of `bits`-bit samples. */
static uint32_t sample(const uint8_t *row, size_t k, int bits)
{
    if (bits == 16) return be16(row + 2 * k);
    if (bits == 8) return row[k];
    size_t bit = k * (size_t)bits;
    return (uint32_t)(row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
}

static og_status png(const og_op_ctx *c, const rd *r, og_image *img, const char **why)
{
    const uint8_t *d = r->p;
    size_t pos = 8, idat = 0, plte_n = 0;
    const uint8_t *plte = NULL;
    uint32_t w = 0, h = 0;
    int depth = 0, type = -1, interlace = 0;
    uint8_t *z = NULL, *raw = NULL;
    og_status st = OG_OK;
    /* IHDR, PLTE; IDAT bytes gathered (twice over: count, then copy) */
    for (int pass = 0; pass < 2; pass++) {
        pos = 8;
        size_t at = 0;
        for (;;) {
            if (!has(r, pos, 12)) {
                *why = "a PNG without IEND";
                goto done;
            }
            uint32_t len = be32(d + pos);
            const uint8_t *typ = d + pos + 4, *body = d + pos + 8;
            if (!has(r, pos + 8, (size_t)len + 4)) {
                *why = "a truncated PNG chunk";
                goto done;
            }
            if (pass == 0 && crc32(crc32(0, typ, 4), body, len) != be32(body + len)) {
                *why = "a PNG chunk with a bad CRC";
                goto done;
            }
            if (!memcmp(typ, "IHDR", 4) && pass == 0) {
                if (len != 13) {
                    *why = "a bad PNG header";
                    goto done;
                }
                w = be32(body), h = be32(body + 4), depth = body[8], type = body[9],
                interlace = body[12];
                if (body[10] || body[11] || interlace > 1) {
                    *why = "an unknown PNG compression, filter or interlace method";
                    goto done;
                }
            } else if (!memcmp(typ, "PLTE", 4)) {
                plte = body, plte_n = len / 3;
            } else if (!memcmp(typ, "IDAT", 4)) {
                if (pass == 1) memcpy(z + at, body, len);
                at += len;
            } else if (!memcmp(typ, "IEND", 4)) {
                break;
            }
            pos += (size_t)len + 12;
        }
        if (pass == 0) {
            idat = at;
            if (!(z = og_malloc(c->alloc, idat + 1))) {
                st = og_op_error(c, OG_ERR_NOMEM, "out of memory");
                goto done;
            }
        }
    }
    static const int ch_of[7] = {1, 0, 3, 1, 2, 0, 4};
    int ch = type >= 0 && type <= 6 ? ch_of[type] : 0;
    bool ok_depth =
        (type == 0 && (depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16)) ||
        (type == 3 && (depth == 1 || depth == 2 || depth == 4 || depth == 8)) ||
        ((type == 2 || type == 4 || type == 6) && (depth == 8 || depth == 16));
    if (!ch || !ok_depth || w == 0 || h == 0 || w > 0x7fffffff || h > 0x7fffffff ||
        (type == 3 && !plte)) {
        *why = "an invalid PNG header or a missing palette";
        goto done;
    }
    if ((st = img_alloc(c, img, w, h, type == 0 || type == 4 ? 1 : 3, r->n)) || !img->px) goto done;
    /* the passes (Adam7, or the whole image) */
    static const int sx[7] = {0, 4, 0, 2, 0, 1, 0}, sy[7] = {0, 0, 4, 0, 2, 0, 1},
                     dx[7] = {8, 8, 4, 4, 2, 2, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
    int passes = interlace ? 7 : 1;
    size_t total = 0, bpp = (size_t)(ch * depth + 7) / 8;
    int64_t pw[7], ph[7];
    size_t prb[7];
    for (int p = 0; p < passes; p++) {
        int64_t x0 = interlace ? sx[p] : 0, y0 = interlace ? sy[p] : 0, ddx = interlace ? dx[p] : 1,
                ddy = interlace ? dy[p] : 1;
        pw[p] = w > x0 ? ((int64_t)w - x0 + ddx - 1) / ddx : 0;
        ph[p] = h > y0 ? ((int64_t)h - y0 + ddy - 1) / ddy : 0;
        prb[p] = ((size_t)pw[p] * (size_t)ch * (size_t)depth + 7) / 8;
        if (pw[p] && ph[p]) total += (size_t)ph[p] * (prb[p] + 1);
    }
    if (!(raw = og_malloc(c->alloc, total + 1))) {
        st = og_op_error(c, OG_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (!inflate_all(c->alloc, z, idat, raw, total)) {
        *why = "damaged PNG image data";
        goto fail_img;
    }
    uint8_t *buf = raw;
    for (int p = 0; p < passes; p++) {
        if (!pw[p] || !ph[p]) continue;
        if (!unfilter(buf, ph[p], prb[p], bpp)) {
            *why = "an unknown PNG filter";
            goto fail_img;
        }
        int64_t x0 = interlace ? sx[p] : 0, y0 = interlace ? sy[p] : 0, ddx = interlace ? dx[p] : 1,
                ddy = interlace ? dy[p] : 1;
        for (int64_t y = 0; y < ph[p]; y++) {
            const uint8_t *row = buf + (size_t)y * (prb[p] + 1) + 1;
            for (int64_t x = 0; x < pw[p]; x++) {
                uint8_t *o = img->px + ((y0 + y * ddy) * (int64_t)w + x0 + x * ddx) * img->ch;
                size_t k = (size_t)x * (size_t)ch;
                if (type == 3) {
                    uint32_t i = sample(row, k, depth);
                    if (i >= plte_n) i = 0;
                    o[0] = plte[3 * i], o[1] = plte[3 * i + 1], o[2] = plte[3 * i + 2];
                } else if (img->ch == 1) {
                    o[0] = to8(sample(row, k, depth), depth);
                } else {
                    for (int q = 0; q < 3; q++)
                        o[q] = to8(sample(row, k + (size_t)q, depth), depth);
                }
            }
        }
        buf += (size_t)ph[p] * (prb[p] + 1);
    }
    goto done;
fail_img:
    og_free(c->alloc, img->px);
    memset(img, 0, sizeof *img);
done:
    og_free(c->alloc, z);
    og_free(c->alloc, raw);
    return st;
}

/* ---- PNM -------------------------------------------------------------------------------- */

/* The next decimal number at *pos, skipping whitespace and # comments; -1 if none. */
static int64_t pnm_num(const rd *r, size_t *pos)
{
    const uint8_t *d = r->p;
    for (;;) {
        while (*pos < r->n && (d[*pos] == ' ' || (d[*pos] >= 9 && d[*pos] <= 13))) (*pos)++;
        if (*pos < r->n && d[*pos] == '#') {
            while (*pos < r->n && d[*pos] != '\n') (*pos)++;
            continue;
        }
        break;
    }
    int64_t v = -1;
    while (*pos < r->n && d[*pos] >= '0' && d[*pos] <= '9' && v < ((int64_t)1 << 40))
        v = (v < 0 ? 0 : v * 10) + (d[(*pos)++] - '0');
    return v;
}

static og_status pnm(const og_op_ctx *c, const rd *r, og_image *img, const char **why)
{
    int kind = r->p[1] - '0';
    size_t pos = 2;
    int64_t w = pnm_num(r, &pos), h = pnm_num(r, &pos),
            mx = kind == 1 || kind == 4 ? 1 : pnm_num(r, &pos);
    if (w < 1 || h < 1 || mx < 1 || mx > 65535) return *why = "a bad PNM header", OG_OK;
    bool ascii = kind <= 3, color = kind == 3 || kind == 6, bits = kind == 1 || kind == 4;
    int ch = color ? 3 : 1, bytes = mx > 255 ? 2 : 1;
    if (!ascii) pos++; /* the one whitespace byte before the raster */
    if (!ascii) {
        size_t need = bits ? (size_t)((w + 7) / 8) * (size_t)h : (size_t)(w * h * ch * bytes);
        if (w > MAX_PIXELS || h > MAX_PIXELS || !has(r, pos, need))
            return *why = "truncated PNM pixels", OG_OK;
    }
    og_status st = img_alloc(c, img, w, h, ch, r->n);
    if (st || !img->px) return st;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            for (int q = 0; q < ch; q++) {
                int64_t v;
                if (ascii && bits) { /* P1: one digit per pixel, whitespace optional */
                    while (pos < r->n && r->p[pos] != '0' && r->p[pos] != '1') pos++;
                    v = pos < r->n ? r->p[pos++] - '0' : -1;
                } else if (ascii) {
                    v = pnm_num(r, &pos);
                } else if (bits) {
                    v = (r->p[pos + (size_t)(y * ((w + 7) / 8) + x / 8)] >> (7 - x % 8)) & 1;
                } else {
                    size_t at = pos + (size_t)(((y * w + x) * ch + q) * bytes);
                    v = bytes == 2 ? (int64_t)be16(r->p + at) : r->p[at];
                }
                if (v < 0 || v > mx) {
                    og_free(c->alloc, img->px);
                    memset(img, 0, sizeof *img);
                    return *why = "a PNM sample out of range or missing", OG_OK;
                }
                img->px[(y * w + x) * ch + q] =
                    bits ? (uint8_t)(v ? 0 : 255)
                         : (uint8_t)(mx == 255 ? v : (v * 255 + mx / 2) / mx);
            }
    return OG_OK;
}

/* ---- TIFF ------------------------------------------------------------------------------- */

typedef struct tiff {
    const rd *r;
    bool le;
} tiff;

static uint32_t t16(const tiff *t, size_t o)
{
    return t->le ? le16(t->r->p + o) : be16(t->r->p + o);
}
static uint32_t t32(const tiff *t, size_t o)
{
    return t->le ? le32(t->r->p + o) : be32(t->r->p + o);
}

/* Value k of IFD entry e (SHORT or LONG); false when out of the stream. */
static bool tiff_val(const tiff *t, size_t e, uint32_t k, uint32_t *v)
{
    uint32_t type = t16(t, e + 2), cnt = t32(t, e + 4), sz = type == 3 ? 2 : type == 4 ? 4 : 0;
    if (!sz || k >= cnt) return false;
    size_t at = (uint64_t)cnt * sz <= 4 ? e + 8 : t32(t, e + 8);
    at += (size_t)k * sz;
    if (!has(t->r, at, sz)) return false;
    *v = sz == 2 ? t16(t, at) : t32(t, at);
    return true;
}

/* PackBits into out (exactly want bytes); false if the run data is short. */
static bool packbits(const uint8_t *s, size_t n, uint8_t *out, size_t want)
{
    size_t i = 0, o = 0;
    while (o < want && i < n) {
        int8_t k = (int8_t)s[i++];
        if (k >= 0) {
            size_t len = (size_t)k + 1;
            if (len > n - i || len > want - o) return false;
            memcpy(out + o, s + i, len);
            i += len, o += len;
        } else if (k != -128) {
            size_t len = (size_t)(1 - k);
            if (i >= n || len > want - o) return false;
            memset(out + o, s[i++], len);
            o += len;
        }
    }
    return o == want;
}

static og_status tiff_dec(const og_op_ctx *c, const rd *r, og_image *img, const char **why)
{
    tiff t = {r, r->p[0] == 'I'};
    if (!has(r, 0, 8)) return *why = "a truncated TIFF header", OG_OK;
    size_t ifd = t32(&t, 4);
    if (!has(r, ifd, 2)) return *why = "a bad TIFF directory offset", OG_OK;
    uint32_t n = t16(&t, ifd);
    if (!has(r, ifd + 2, (size_t)n * 12)) return *why = "a truncated TIFF directory", OG_OK;
    uint32_t w = 0, h = 0, bits = 1, comp = 1, photo = 9, spp = 1, rps = 0xffffffff, planar = 1;
    size_t e_off = 0, e_cnt = 0, e_map = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t e = ifd + 2 + (size_t)i * 12;
        uint32_t tag = t16(&t, e), v = 0;
        tiff_val(&t, e, 0, &v); /* v stays 0 for an entry of another type */
        switch (tag) {
        case 256: w = v; break;
        case 257: h = v; break;
        case 258: bits = v; break;
        case 259: comp = v; break;
        case 262: photo = v; break;
        case 273: e_off = e; break;
        case 277: spp = v; break;
        case 278: rps = v; break;
        case 279: e_cnt = e; break;
        case 284: planar = v; break;
        case 320: e_map = e; break;
        default: break;
        }
    }
    if (rps == 0) rps = h;
    int ch = photo == 2 ? 3 : 1;
    if (!w || !h || bits != 8 || planar != 1 || !e_off || !e_cnt || (photo > 3) ||
        (photo == 2 && spp < 3) || (photo != 2 && spp < 1) || (photo == 3 && !e_map) ||
        !(comp == 1 || comp == 8 || comp == 32946 || comp == 32773))
        return *why =
                   "a TIFF other than 8-bit gray, RGB or palette strips, uncompressed, PackBits or "
                   "Deflate",
               OG_OK;
    if (photo == 3) ch = 3;
    og_status st = img_alloc(c, img, w, h, ch, r->n);
    if (st || !img->px) return st;
    size_t row = (size_t)w * spp, rows_per = rps < h ? rps : h;
    uint8_t *strip = og_malloc(c->alloc, row * rows_per + 1);
    if (!strip) {
        og_free(c->alloc, img->px);
        memset(img, 0, sizeof *img);
        return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    }
    const char *bad = NULL;
    for (uint32_t s = 0, y0 = 0; y0 < h && !bad; s++, y0 += (uint32_t)rows_per) {
        uint32_t off, cnt;
        size_t rows = h - y0 < rows_per ? h - y0 : rows_per, want = row * rows;
        if (!tiff_val(&t, e_off, s, &off) || !tiff_val(&t, e_cnt, s, &cnt) || !has(r, off, cnt)) {
            bad = "a TIFF strip outside the stream";
            break;
        }
        if (comp == 1) {
            if (cnt < want)
                bad = "a short TIFF strip";
            else
                memcpy(strip, r->p + off, want);
        } else if (comp == 32773) {
            if (!packbits(r->p + off, cnt, strip, want)) bad = "damaged PackBits data";
        } else if (!inflate_all(c->alloc, r->p + off, cnt, strip, want)) {
            bad = "damaged Deflate data";
        }
        for (size_t y = 0; !bad && y < rows; y++)
            for (uint32_t x = 0; x < w; x++) {
                const uint8_t *p = strip + y * row + (size_t)x * spp;
                uint8_t *o = img->px + ((y0 + y) * (size_t)w + x) * (size_t)ch;
                if (photo == 2) {
                    o[0] = p[0], o[1] = p[1], o[2] = p[2];
                } else if (photo ==
                           3) { /* ColorMap: 3 x 256 16-bit values, reds then greens then blues */
                    uint32_t v;
                    for (int q = 0; q < 3 && !bad; q++) {
                        if (!tiff_val(&t, e_map, (uint32_t)q * 256 + p[0], &v))
                            bad = "a short TIFF color map";
                        o[q] = (uint8_t)(v >> 8);
                    }
                } else {
                    o[0] = photo == 0 ? (uint8_t)(255 - p[0]) : p[0]; /* 0: white is zero */
                }
            }
    }
    og_free(c->alloc, strip);
    if (bad) {
        og_free(c->alloc, img->px);
        memset(img, 0, sizeof *img);
        *why = bad;
    }
    return OG_OK;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

og_status og_image_decode(const og_op_ctx *c, const uint8_t *data, size_t n, og_image *img,
                          const char **why)
{
    rd r = {data, n};
    const char *w = NULL;
    memset(img, 0, sizeof *img);
    og_status st = OG_OK;
    if (n >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "the stream is a JPEG, which onnxgrad does not "
                           "decode (no codec library: BMP, PNG, PNM and TIFF are decoded)");
    if ((n >= 12 && !memcmp(data, "\0\0\0\x0cjP  ", 8)) ||
        (n >= 4 && !memcmp(data, "\xff\x4f\xff\x51", 4)))
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "the stream is a JPEG 2000 image, which onnxgrad "
                           "does not decode (no codec library)");
    if (n >= 12 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4))
        return og_op_error(c, OG_ERR_UNSUPPORTED,
                           "the stream is a WebP image, which onnxgrad does "
                           "not decode (no codec library)");
    if (n >= 2 && data[0] == 'B' && data[1] == 'M')
        st = bmp(c, &r, img, &w);
    else if (n >= 8 && !memcmp(data, "\x89PNG\r\n\x1a\n", 8))
        st = png(c, &r, img, &w);
    else if (n >= 3 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6')
        st = pnm(c, &r, img, &w);
    else if (n >= 4 && (!memcmp(data, "II*\0", 4) || !memcmp(data, "MM\0*", 4)))
        st = tiff_dec(c, &r, img, &w);
    else
        w = "not an image of a known format";
    if (!img->px && !w) w = "an empty image";
    if (why) *why = w;
    return st;
}

/* ---- the op --------------------------------------------------------------------------------- */

static og_status image_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "pixel_format", OG_ATTR_STRING);
    if (st) return st;
    const char *f = og_attr_string(c->node, "pixel_format", "RGB");
    int *p = og_malloc(c->alloc, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    *p = !strcmp(f, "RGB")         ? OG_PIXEL_RGB
         : !strcmp(f, "BGR")       ? OG_PIXEL_BGR
         : !strcmp(f, "Grayscale") ? OG_PIXEL_GRAY
                                   : -1;
    if (*p < 0)
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute 'pixel_format' must be RGB, BGR or Grayscale, "
                           "got '%s'",
                           f);
    return OG_OK;
}

static og_status image_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    static const og_dtype u8[] = {OG_UINT8, OG_UNDEFINED};
    og_status st = og_check_dtype(c, in, 0, u8);
    if (st) return st;
    if (in[0].rank >= 0 && in[0].rank != 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 (encoded_stream) must be 1-D, got rank %d",
                           in[0].rank);
    int64_t ch = *(const int *)c->node->params == OG_PIXEL_GRAY ? 1 : 3;
    int64_t dims[3] = {OG_DIM_UNKNOWN, OG_DIM_UNKNOWN, ch};
    if (in[0].value) {
        og_image img;
        const og_tensor *t = in[0].value;
        if ((st = og_image_decode(c, t->data, (size_t)t->numel, &img, NULL))) return st;
        dims[0] = img.h;
        dims[1] = img.w;
        og_free(c->alloc, img.px);
    }
    og_vinfo_set(&out[0], OG_UINT8, 3, dims);
    return OG_OK;
}

const og_op_def og_ops_image[] = {
    {"ImageDecoder", "", OG_SINCE(ImageDecoder), 1, 1, 1, 1, image_parse, NULL, image_infer, 0},
    {0},
};
