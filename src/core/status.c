/* status.c: status names and the per-thread error message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define OG_MSG_SIZE 1024

/* The only state outside handles: one message buffer per thread, so that a failed
 * og_xxx_create (which has no handle yet) can still explain itself. */
static _Thread_local char og_tls_msg[OG_MSG_SIZE];

const char *og_status_name(og_status status)
{
    switch (status) {
    case OG_OK: return "OG_OK";
    case OG_ERR_INVALID_ARG: return "OG_ERR_INVALID_ARG";
    case OG_ERR_NOMEM: return "OG_ERR_NOMEM";
    case OG_ERR_IO: return "OG_ERR_IO";
    case OG_ERR_PARSE: return "OG_ERR_PARSE";
    case OG_ERR_MODEL: return "OG_ERR_MODEL";
    case OG_ERR_UNSUPPORTED: return "OG_ERR_UNSUPPORTED";
    case OG_ERR_SHAPE: return "OG_ERR_SHAPE";
    case OG_ERR_TYPE: return "OG_ERR_TYPE";
    case OG_ERR_RUNTIME: return "OG_ERR_RUNTIME";
    case OG_ERR_INTERNAL: return "OG_ERR_INTERNAL";
    case OG_ERR_LIMIT: return "OG_ERR_LIMIT";
    case OG_ERR_BUSY: return "OG_ERR_BUSY";
    }
    return "OG_ERR_UNKNOWN";
}

const char *og_last_error(void) { return og_tls_msg; }

og_status og_set_error(og_status status, const char *message)
{
    if (message != og_tls_msg)
        snprintf(og_tls_msg, sizeof og_tls_msg, "%s", message ? message : "");
    return status;
}

og_status og_verror(og_status status, const char *fmt, va_list ap)
{
    vsnprintf(og_tls_msg, sizeof og_tls_msg, fmt, ap);
    return status;
}

og_status og_error(og_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    og_verror(status, fmt, ap);
    va_end(ap);
    return status;
}

og_status og_error_prefix(og_status status, const char *fmt, ...)
{
    char old[OG_MSG_SIZE];
    va_list ap;
    memcpy(old, og_tls_msg, sizeof old);
    va_start(ap, fmt);
    int n = vsnprintf(og_tls_msg, sizeof og_tls_msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n + 2 < sizeof og_tls_msg) {
        size_t used = (size_t)n;
        memcpy(og_tls_msg + used, ": ", 2);
        used += 2;
        size_t room = sizeof og_tls_msg - used - 1, len = strlen(old);
        if (len > room) len = room;
        memcpy(og_tls_msg + used, old, len);
        og_tls_msg[used + len] = 0;
    }
    return status;
}

void og_logf(og_log_fn log, void *user, og_log_level level, const char *fmt, ...)
{
    if (!log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log(user, level, msg);
}

void og_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "onnxgrad: internal error: %s (%s:%d)\n", expr, file, line);
    abort();
}
