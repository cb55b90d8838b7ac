/* string.h: what the string ops' meaning (src/ops/string.c) shares with their kernels.
 * Internal header.  It uses POSIX 2008 (locale_t, regex_t): a file including it defines
 * _POSIX_C_SOURCE 200809L before any include. */
#ifndef OG_OPS_STRING_H
#define OG_OPS_STRING_H

#include <locale.h>
#include <regex.h>

#include "ops/op.h"

/* ---- StringNormalizer ------------------------------------------------------------------ */

enum { OG_CASE_NONE = 0, OG_CASE_LOWER = 1, OG_CASE_UPPER = 2 };

typedef struct og_strnorm_params {
    int action; /* OG_CASE_* */
    bool case_sensitive;
    int n_stop;
    char **stop;  /* the stopwords, lowercased when not case_sensitive (owned) */
    locale_t loc; /* C.UTF-8 for case mapping; (locale_t)0: ASCII only */
} og_strnorm_params;

/* s with every code point lowered (upper: raised) through loc (ASCII only without one),
 * into a new string allocated with a; invalid UTF-8 bytes are kept as they are.  NULL when
 * out of memory. */
char *og_utf8_case(const og_allocator *a, const char *s, bool upper, locale_t loc);

/* Whether element i of string tensor x is a stopword (compared as the params say). */
og_status og_strnorm_is_stop(const og_op_ctx *c, const og_strnorm_params *p, const og_tensor *x,
                             int64_t i, bool *stop);

/* ---- StringSplit ----------------------------------------------------------------------- */

typedef struct og_strsplit_params {
    const char *delim; /* NULL: runs of whitespace (borrowed from the node's attribute) */
    size_t delim_len;
    int64_t maxsplit; /* < 0: no limit */
} og_strsplit_params;

/* The pieces of s: their count, and when `start`/`len` are not NULL, where each begins and
 * how long it is (up to cap pieces). */
int64_t og_strsplit(const og_strsplit_params *p, const char *s, int64_t cap, int64_t *start,
                    int64_t *len);

/* ---- RegexFullMatch -------------------------------------------------------------------- */

typedef struct og_regex_params {
    regex_t re;
    bool compiled;
    locale_t loc; /* the regex is compiled and run in C.UTF-8 when it exists */
} og_regex_params;

/* ---- TfIdfVectorizer ------------------------------------------------------------------- */

/* One n-gram of the pool, or a prefix of one, in an open-addressing table: its first item
 * in the pool, its length, and its 1-based number (0 for a prefix only). */
typedef struct og_ngram {
    int64_t first, len, id;
} og_ngram;

typedef struct og_tfidf_params {
    int mode; /* 1 TF, 2 IDF, 3 TFIDF */
    int64_t min_len, max_len, max_skip;
    int64_t out_size; /* max(ngram_indexes) + 1 */
    const int64_t *indexes;
    int n_indexes;
    const float *weights; /* NULL: ones */
    int n_weights;
    const int64_t *pool_i; /* one of the two pools (the node's attributes) */
    char *const *pool_s;
    int64_t pool_n;
    og_ngram *table; /* cap entries, len 0: empty */
    int64_t cap;
} og_tfidf_params;

/* The table's hash of items v1..vn: a prefix hash mixed item by item from OG_NGRAM_SEED,
 * then the length (so that a walk along a row extends it one item at a time). */
#define OG_NGRAM_SEED 0x2545f4914f6cdd1dull
static inline uint64_t og_ngram_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}
static inline uint64_t og_ngram_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

#endif /* OG_OPS_STRING_H */
