/* file.c: whole-file reads with size limits and clear errors. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_io.h"

og_status og_read_file(const char *path, size_t max_size, const og_allocator *a, void **out,
                       size_t *out_size)
{
    og_status st = OG_OK;
    unsigned char *buf = NULL;
    *out = NULL;
    *out_size = 0;
    /* opened without blocking and checked to be a regular file: a FIFO or a device named as
     * a model must not hang the caller, nor a folder read as bytes */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return og_error(OG_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = og_error(OG_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = og_error(OG_ERR_IO, "cannot read '%s': not a regular file", path);
        goto done;
    }
    if ((unsigned long long)sb.st_size > (unsigned long long)max_size) {
        st = og_error(OG_ERR_LIMIT, "'%s' has %lld bytes, more than the limit %zu", path,
                      (long long)sb.st_size, max_size);
        goto done;
    }
    size_t len = (size_t)sb.st_size;
    buf = og_malloc(a, len + 1);
    if (!buf) {
        st = og_error(OG_ERR_NOMEM, "out of memory reading '%s' (%zu bytes)", path, len);
        goto done;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            st = og_error(OG_ERR_IO, "short read on '%s'", path);
            goto done;
        }
        got += (size_t)r;
    }
    buf[len] = 0;
    *out = buf;
    *out_size = len;
    buf = NULL;
done:
    og_free(a, buf);
    close(fd);
    return st;
}
