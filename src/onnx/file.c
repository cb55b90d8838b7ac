/* file.c: whole-file reads with size limits and clear errors. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_io.h"

og_status og_read_file(const char *path, size_t max_size, const og_allocator *a, void **out,
                       size_t *out_size)
{
    og_status st = OG_OK;
    unsigned char *buf = NULL;
    *out = NULL;
    *out_size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return og_error(OG_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        st = og_error(OG_ERR_IO, "cannot seek in '%s': %s", path, strerror(errno));
        goto done;
    }
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = og_error(OG_ERR_IO, "cannot read '%s' (not a regular file?)", path);
        goto done;
    }
    if ((unsigned long)len > max_size) {
        st =
            og_error(OG_ERR_IO, "'%s' has %ld bytes, more than the limit %zu", path, len, max_size);
        goto done;
    }
    buf = og_malloc(a, (size_t)len + 1);
    if (!buf) {
        st = og_error(OG_ERR_NOMEM, "out of memory reading '%s' (%ld bytes)", path, len);
        goto done;
    }
    if (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        st = og_error(OG_ERR_IO, "short read on '%s'", path);
        goto done;
    }
    buf[len] = 0;
    *out = buf;
    *out_size = (size_t)len;
    buf = NULL;
done:
    og_free(a, buf);
    fclose(f);
    return st;
}
