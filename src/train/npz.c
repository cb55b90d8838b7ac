/*
 * npz.c: a zip reader for numpy's .npz archives (np.savez: stored members;
 * np.savez_compressed: deflate), zip64 included (numpy forces zip64 local headers, and
 * archives past 2 GiB get zip64 central records).
 *
 * The sizes come from the central directory: numpy's local headers carry 0xFFFFFFFF and
 * a zip64 extra field, and a member written through a data descriptor has zeros there.
 * The local header is read only for where the data starts (and checked against the
 * central entry).  Every offset and length is checked against the buffer, with 64-bit
 * arithmetic that cannot wrap, before anything is read.
 */
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "train/train.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD    0x06054b50u
#define SIG_EOCD64  0x06064b50u
#define SIG_LOC64   0x07064b50u

#define EOCD_SIZE    22
#define LOC64_SIZE   20
#define EOCD64_SIZE  56
#define CENTRAL_SIZE 46
#define LOCAL_SIZE   30

/* Deflate cannot expand data by more than ~1032x: a declared size past this bound is a
 * lie, refused before it becomes an allocation. */
#define MAX_DEFLATE_RATIO 1040u

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* [off, off + len) lies inside a buffer of `size` bytes. */
static bool in_bounds(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= (uint64_t)size - off;
}

/* Find the end-of-central-directory record: the last signature in the final 64 KiB + 22
 * bytes whose comment fits in the buffer. */
static bool find_eocd(const unsigned char *d, size_t size, size_t *pos)
{
    if (size < EOCD_SIZE) return false;
    size_t lo = size - EOCD_SIZE > 65535 ? size - EOCD_SIZE - 65535 : 0;
    for (size_t i = size - EOCD_SIZE + 1; i-- > lo;) {
        if (rd32(d + i) == SIG_EOCD && i + EOCD_SIZE + rd16(d + i + 20) <= size) {
            *pos = i;
            return true;
        }
    }
    return false;
}

/* Apply a zip64 extended-information extra field (id 1) to the fields that are saturated
 * in the central entry; false when one of them is missing from it. */
static bool apply_zip64(const unsigned char *extra, size_t len, og_zip_entry *e, bool need_u,
                        bool need_c, bool need_off)
{
    size_t i = 0;
    while (len - i >= 4) {
        uint16_t id = rd16(extra + i), n = rd16(extra + i + 2);
        if (n > len - i - 4) return false;
        if (id == 1) {
            const unsigned char *f = extra + i + 4;
            size_t k = 0;
            if (need_u) {
                if (n - k < 8) return false;
                e->usize = rd64(f + k);
                k += 8;
            }
            if (need_c) {
                if (n - k < 8) return false;
                e->csize = rd64(f + k);
                k += 8;
            }
            if (need_off) {
                if (n - k < 8) return false;
                e->offset = rd64(f + k);
            }
            return true;
        }
        i += 4 + (size_t)n;
    }
    return !need_u && !need_c && !need_off;
}

void og_zip_close(og_zip *z)
{
    if (!z) return;
    for (int64_t i = 0; i < z->n_entries; i++) og_free(z->alloc, z->entries[i].name);
    og_free(z->alloc, z->entries);
    memset(z, 0, sizeof *z);
}

og_status og_zip_open(const void *data, size_t size, const char *what, const og_allocator *a,
                      og_zip *z)
{
    const unsigned char *d = data;
    og_status st = OG_OK;
    memset(z, 0, sizeof *z);
    z->alloc = og_alloc_or_default(a);
    z->data = d;
    z->size = size;
    size_t eocd;
    if (!d || !find_eocd(d, size, &eocd))
        return og_error(OG_ERR_PARSE, "%s: not a zip archive (no end-of-central-directory record)",
                        what);
    uint64_t n_total = rd16(d + eocd + 10), cd_size = rd32(d + eocd + 12),
             cd_off = rd32(d + eocd + 16);
    uint64_t cd_end_limit = eocd; /* the central directory ends before this */
    if (rd16(d + eocd + 4) != 0 && rd16(d + eocd + 4) != 0xFFFF)
        return og_error(OG_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported", what);
    /* zip64: a locator right before the EOCD points to the zip64 EOCD record, whose fields
     * are authoritative (the classic ones are then saturated or equal) */
    if (eocd >= LOC64_SIZE && rd32(d + eocd - LOC64_SIZE) == SIG_LOC64) {
        uint64_t off64 = rd64(d + eocd - LOC64_SIZE + 8);
        if (!in_bounds(off64, EOCD64_SIZE, eocd - LOC64_SIZE) || rd32(d + off64) != SIG_EOCD64)
            return og_error(OG_ERR_PARSE, "%s: zip64 locator points outside the archive", what);
        const unsigned char *r = d + off64;
        if (rd32(r + 16) != 0 || rd32(r + 20) != 0)
            return og_error(OG_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported",
                            what);
        n_total = rd64(r + 32);
        cd_size = rd64(r + 40);
        cd_off = rd64(r + 48);
        cd_end_limit = off64;
    } else if (n_total == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
        return og_error(OG_ERR_PARSE, "%s: zip64 fields without a zip64 locator", what);
    }
    if (!in_bounds(cd_off, cd_size, (size_t)cd_end_limit))
        return og_error(OG_ERR_PARSE,
                        "%s: central directory (offset %llu, %llu bytes) outside the archive", what,
                        (unsigned long long)cd_off, (unsigned long long)cd_size);
    if (n_total > cd_size / CENTRAL_SIZE)
        return og_error(OG_ERR_PARSE, "%s: %llu entries cannot fit a %llu-byte central directory",
                        what, (unsigned long long)n_total, (unsigned long long)cd_size);
    if (n_total) {
        z->entries = og_calloc(z->alloc, (size_t)n_total, sizeof *z->entries);
        if (!z->entries) return og_error(OG_ERR_NOMEM, "%s: out of memory", what);
    }
    const unsigned char *p = d + cd_off, *end = p + cd_size;
    for (uint64_t i = 0; i < n_total; i++) {
        if (end - p < CENTRAL_SIZE || rd32(p) != SIG_CENTRAL) {
            st = og_error(OG_ERR_PARSE, "%s: central directory entry %llu is malformed", what,
                          (unsigned long long)i);
            goto fail;
        }
        size_t name_len = rd16(p + 28), extra_len = rd16(p + 30), comment_len = rd16(p + 32);
        if ((size_t)(end - p) - CENTRAL_SIZE < name_len + extra_len + comment_len) {
            st = og_error(OG_ERR_PARSE, "%s: central directory entry %llu overruns the directory",
                          what, (unsigned long long)i);
            goto fail;
        }
        og_zip_entry *e = &z->entries[i];
        e->flags = rd16(p + 8);
        e->method = rd16(p + 10);
        e->crc = rd32(p + 16);
        e->csize = rd32(p + 20);
        e->usize = rd32(p + 24);
        e->offset = rd32(p + 42);
        bool need_u = e->usize == 0xFFFFFFFFu, need_c = e->csize == 0xFFFFFFFFu,
             need_off = e->offset == 0xFFFFFFFFu;
        if (!apply_zip64(p + CENTRAL_SIZE + name_len, extra_len, e, need_u, need_c, need_off)) {
            st = og_error(OG_ERR_PARSE, "%s: central directory entry %llu lacks its zip64 sizes",
                          what, (unsigned long long)i);
            goto fail;
        }
        e->name = og_malloc(z->alloc, name_len + 1);
        if (!e->name) {
            st = og_error(OG_ERR_NOMEM, "%s: out of memory", what);
            goto fail;
        }
        z->n_entries = (int64_t)i + 1;
        memcpy(e->name, p + CENTRAL_SIZE, name_len);
        e->name[name_len] = 0;
        if (memchr(e->name, 0, name_len)) {
            st = og_error(OG_ERR_PARSE, "%s: entry %llu has a NUL byte in its name", what,
                          (unsigned long long)i);
            goto fail;
        }
        if (!in_bounds(e->offset, LOCAL_SIZE, (size_t)cd_off)) {
            st = og_error(OG_ERR_PARSE, "%s: entry '%s' starts outside the archive", what, e->name);
            goto fail;
        }
        p += CENTRAL_SIZE + name_len + extra_len + comment_len;
    }
    return OG_OK;
fail:
    og_zip_close(z);
    return st;
}

int64_t og_zip_find(const og_zip *z, const char *name)
{
    for (int64_t i = 0; i < z->n_entries; i++)
        if (strcmp(z->entries[i].name, name) == 0) return i;
    return -1;
}

static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    size_t n;
    if (!og_mul_size(items, size, &n)) return Z_NULL;
    return og_malloc(opaque, n);
}

static void zlib_free(voidpf opaque, voidpf p) { og_free(opaque, p); }

static uint32_t crc_of(const unsigned char *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

/* Raw-deflate src[0..n) into dst[0..want), which it must fill exactly. */
static og_status inflate_all(const og_zip *z, const og_zip_entry *e, const unsigned char *src,
                             size_t n, unsigned char *dst, size_t want)
{
    const size_t chunk = (size_t)1 << 30; /* zlib counts in uInt */
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = zlib_alloc;
    zs.zfree = zlib_free;
    zs.opaque = (voidpf)z->alloc;
    int r = inflateInit2(&zs, -MAX_WBITS);
    if (r == Z_MEM_ERROR) return og_error(OG_ERR_NOMEM, "out of memory inflating '%s'", e->name);
    if (r != Z_OK) return og_error(OG_ERR_INTERNAL, "inflateInit2 failed (%d)", r);
    og_status st = OG_OK;
    size_t in_left = n, out_left = want;
    zs.next_in = (Bytef *)(uintptr_t)src; /* zlib's API is not const-correct */
    zs.next_out = dst;
    for (;;) {
        if (zs.avail_in == 0 && in_left) {
            zs.avail_in = (uInt)(in_left < chunk ? in_left : chunk);
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left) {
            zs.avail_out = (uInt)(out_left < chunk ? out_left : chunk);
            out_left -= zs.avail_out;
        }
        r = inflate(&zs, Z_NO_FLUSH);
        if (r == Z_STREAM_END) break;
        if (r == Z_OK) continue;
        if (r == Z_BUF_ERROR && zs.avail_out == 0 && out_left == 0) {
            st = og_error(OG_ERR_PARSE, "'%s' inflates to more than its declared %zu bytes",
                          e->name, want);
        } else if (r == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
            st = og_error(OG_ERR_PARSE, "'%s': truncated deflate data", e->name);
        } else if (r == Z_MEM_ERROR) {
            st = og_error(OG_ERR_NOMEM, "out of memory inflating '%s'", e->name);
        } else if (r == Z_BUF_ERROR) {
            continue;
        } else {
            st = og_error(OG_ERR_PARSE, "'%s': corrupt deflate data (%s)", e->name,
                          zs.msg ? zs.msg : "zlib error");
        }
        goto done;
    }
    if (zs.avail_out != 0 || out_left != 0)
        st = og_error(OG_ERR_PARSE, "'%s' inflates to fewer than its declared %zu bytes", e->name,
                      want);
done:
    inflateEnd(&zs);
    return st;
}

og_status og_zip_read(const og_zip *z, int64_t i, const void **out, size_t *out_size, void **owned)
{
    *out = NULL;
    *out_size = 0;
    *owned = NULL;
    if (i < 0 || i >= z->n_entries)
        return og_error(OG_ERR_INTERNAL, "zip entry %lld", (long long)i);
    const og_zip_entry *e = &z->entries[i];
    const unsigned char *d = z->data;
    if (e->flags & 1) return og_error(OG_ERR_UNSUPPORTED, "'%s' is encrypted", e->name);
    if (e->method != 0 && e->method != 8)
        return og_error(OG_ERR_UNSUPPORTED,
                        "'%s' uses zip compression method %d (stored and deflate are supported)",
                        e->name, (int)e->method);
    /* og_zip_open checked that the fixed part of the local header is in the buffer */
    const unsigned char *h = d + e->offset;
    if (rd32(h) != SIG_LOCAL || rd16(h + 8) != e->method)
        return og_error(OG_ERR_PARSE, "'%s': bad local header", e->name);
    size_t name_len = rd16(h + 26), extra_len = rd16(h + 28);
    uint64_t start = e->offset + LOCAL_SIZE + name_len + extra_len;
    if (!in_bounds(e->offset + LOCAL_SIZE, name_len, z->size) || name_len != strlen(e->name) ||
        memcmp(h + LOCAL_SIZE, e->name, name_len) != 0)
        return og_error(OG_ERR_PARSE, "'%s': the local header names another file", e->name);
    if (!in_bounds(start, e->csize, z->size))
        return og_error(OG_ERR_PARSE, "'%s': data (%llu bytes at offset %llu) past the end",
                        e->name, (unsigned long long)e->csize, (unsigned long long)start);
    if (e->usize > SIZE_MAX) return og_error(OG_ERR_PARSE, "'%s' is too large", e->name);
    const unsigned char *src = d + start;
    size_t csize = (size_t)e->csize, usize = (size_t)e->usize;
    const unsigned char *bytes = src;
    unsigned char *buf = NULL;
    og_status st = OG_OK;
    if (e->method == 8 && (uint64_t)usize / MAX_DEFLATE_RATIO > csize)
        return og_error(OG_ERR_PARSE, "'%s': %zu bytes cannot inflate to the declared %zu", e->name,
                        csize, usize);
    if (z->budget && e->usize > *z->budget)
        return og_error(OG_ERR_LIMIT,
                        "'%s' holds %llu bytes, more than the %llu the dataset memory limit "
                        "leaves (og_data_options.max_memory)",
                        e->name, (unsigned long long)e->usize, (unsigned long long)*z->budget);
    if (e->method == 0) {
        if (csize != usize)
            return og_error(OG_ERR_PARSE, "'%s': stored entry with sizes %zu and %zu", e->name,
                            csize, usize);
    } else {
        buf = og_malloc(z->alloc, usize ? usize : 1);
        if (!buf)
            return og_error(OG_ERR_NOMEM, "out of memory (%zu bytes for '%s')", usize, e->name);
        st = inflate_all(z, e, src, csize, buf, usize);
        if (st) goto fail;
        bytes = buf;
    }
    if (crc_of(bytes, usize) != e->crc) {
        st = og_error(OG_ERR_PARSE, "'%s': CRC mismatch (corrupt data)", e->name);
        goto fail;
    }
    if (z->budget) *z->budget -= usize;
    *out = bytes;
    *out_size = usize;
    *owned = buf;
    return OG_OK;
fail:
    og_free(z->alloc, buf);
    return st;
}

int64_t og_npz_find(const og_zip *z, const char *name)
{
    size_t n = strlen(name);
    int64_t bare = -1;
    for (int64_t i = 0; i < z->n_entries; i++) {
        const char *e = z->entries[i].name;
        if (strncmp(e, name, n) != 0) continue;
        if (strcmp(e + n, ".npy") == 0) return i;
        if (e[n] == 0 && bare < 0) bare = i;
    }
    return bare;
}

og_status og_npz_load_array(const og_zip *z, const char *name, const og_allocator *a,
                            og_tensor **out)
{
    *out = NULL;
    int64_t i = og_npz_find(z, name);
    if (i < 0) return og_error(OG_ERR_INVALID_ARG, "no array '%s'", name);
    const void *bytes = NULL;
    size_t size = 0;
    void *owned = NULL;
    og_status st = og_zip_read(z, i, &bytes, &size, &owned);
    if (!st) st = og_npy_load_buffer(bytes, size, a, out);
    if (!st && (*out)->dtype == OG_STRING) { /* datasets are numbers */
        og_tensor_free(*out);
        *out = NULL;
        st = og_error(OG_ERR_UNSUPPORTED, "holds strings; datasets hold numbers");
    }
    og_free(z->alloc, owned);
    if (st) og_error_prefix(st, "array '%s'", name);
    return st;
}
