/* session.c: og_session_create, the public way to a session: a model's graph to exec/. */
#include "api/api.h"
#include "exec/exec.h"

static og_status create(const og_model *m, const og_session_options *opts, bool fuse,
                        bool mutable_init, og_session **out)
{
    if (!out) return og_error(OG_ERR_INVALID_ARG, "og_session_create: out is NULL");
    *out = NULL;
    if (!m) return og_error(OG_ERR_INVALID_ARG, "og_session_create: model is NULL");
    og_status st = og_exec_create(m->graph, NULL, m->user_alloc, opts, fuse, out);
    if (!st && mutable_init) og_exec_set_init_mutable(*out);
    return st;
}

/* Inference: activations fused into the convolutions before them (exec/fuse.h). */
og_status og_session_create(const og_model *m, const og_session_options *opts, og_session **out)
{
    return create(m, opts, true, false, out);
}

og_status og_session_create_plain(const og_model *m, const og_session_options *opts,
                                  og_session **out)
{
    return create(m, opts, false, true, out);
}

og_status og_session_create_mutable(const og_model *m, const og_session_options *opts,
                                    og_session **out)
{
    return create(m, opts, true, true, out);
}
