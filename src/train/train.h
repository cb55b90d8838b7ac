/*
 * train.h: what the files of src/train/ share.  Internal header.
 *
 * npz.c reads zip archives (the container of numpy's .npz) from a buffer: the central
 * directory, zip64 records, stored and deflated members.  The archive is untrusted input:
 * every offset and size is checked against the buffer before it is used.
 */
#ifndef OG_TRAIN_H
#define OG_TRAIN_H

#include "core/core.h"

typedef struct og_zip_entry {
    char *name;      /* as stored in the archive, NUL-terminated */
    uint64_t offset; /* of the local file header */
    uint64_t csize;  /* compressed size */
    uint64_t usize;  /* uncompressed size */
    uint32_t crc;
    uint16_t method; /* 0 stored, 8 deflate */
    uint16_t flags;
} og_zip_entry;

typedef struct og_zip {
    const og_allocator *alloc;
    const unsigned char *data; /* the whole archive; the caller keeps it alive */
    size_t size;
    og_zip_entry *entries;
    int64_t n_entries;
    /* When set: the bytes members may still inflate to, all together; og_zip_read refuses
     * (OG_ERR_LIMIT) a member declared larger, before allocating, and takes it off. */
    uint64_t *budget;
} og_zip;

/* Parse the central directory of the archive in data[0..size).  `what` names the archive
 * in messages.  Errors: OG_ERR_PARSE (not a zip, or a malformed one), OG_ERR_UNSUPPORTED
 * (multi-disk archives), OG_ERR_NOMEM.  On failure *z needs no closing. */
og_status og_zip_open(const void *data, size_t size, const char *what, const og_allocator *a,
                      og_zip *z);
void og_zip_close(og_zip *z);

/* Index of the entry named `name`, or -1. */
int64_t og_zip_find(const og_zip *z, const char *name);

/* The uncompressed bytes of entry i, CRC-checked.  For a stored entry *out points into the
 * archive and *owned is NULL; for a deflated one *out == *owned, a block allocated with the
 * zip's allocator that the caller frees with og_free.  Errors: OG_ERR_PARSE (bad local
 * header, truncated or corrupt data, size or CRC mismatch), OG_ERR_UNSUPPORTED (encryption,
 * a method other than stored or deflate), OG_ERR_LIMIT (past z->budget), OG_ERR_NOMEM. */
og_status og_zip_read(const og_zip *z, int64_t i, const void **out, size_t *out_size, void **owned);

/* The entry of array `name` of a .npz: member "<name>.npy" (numpy's naming), else a
 * member named exactly `name`; -1 if neither exists. */
int64_t og_npz_find(const og_zip *z, const char *name);

/* The array stored as member "<name>.npy" (or "<name>", as np.load's keys) of a .npz. */
og_status og_npz_load_array(const og_zip *z, const char *name, const og_allocator *a,
                            og_tensor **out);

#endif /* OG_TRAIN_H */
