/* string.c: the ops on string tensors: StringNormalizer (10), StringConcat, StringSplit,
 * RegexFullMatch (20), and TfIdfVectorizer (9, on strings or integers).
 *
 * Strings are UTF-8.  Case mapping (StringNormalizer) and regular expressions run in the
 * C.UTF-8 locale through POSIX 2008's per-object locales (newlocale, towlower_l, uselocale
 * for the calling thread only), never the process's locale; where the system has no C.UTF-8,
 * case mapping covers ASCII and patterns match bytes.  RegexFullMatch's patterns are RE2
 * syntax: they are translated once, at load, to POSIX extended syntax (with glibc's \b and
 * \B) and compiled; what has no translation (Unicode classes \p{..}, flags after the start,
 * \C) is refused at load.  TfIdfVectorizer's pool becomes a hash table of its n-grams and
 * their prefixes at load. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <wctype.h>

#include "ops/string.h"

static const og_dtype types_string[] = {OG_STRING, OG_UNDEFINED};

/* ---- UTF-8 ------------------------------------------------------------------------------ */

/* The code point at s (length *n bytes), or -1 with *n = 1 for an invalid sequence. */
static int32_t utf8_decode(const unsigned char *s, int *n)
{
    unsigned char b = s[0];
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    *n = 1;
    if (len == 0) return -1;
    int32_t cp = len == 1 ? b : b & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return -1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const int32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    *n = len;
    return cp;
}

static int utf8_encode(int32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

char *og_utf8_case(const og_allocator *a, const char *s, bool upper, locale_t loc)
{
    size_t n = strlen(s);
    /* a mapped code point takes at most 4 bytes, as does any source sequence of 1..4 */
    char *o = og_malloc(a, 4 * n + 1), *w = o;
    if (!o) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int len;
        int32_t cp = utf8_decode(p, &len);
        if (cp < 0) {
            *w++ = (char)*p++;
            continue;
        }
        int32_t m = cp;
        if (loc)
            m = (int32_t)(upper ? towupper_l((wint_t)cp, loc) : towlower_l((wint_t)cp, loc));
        else if (cp < 0x80)
            m = upper ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp)
                      : (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
        if (m < 0 || m > 0x10ffff) m = cp;
        w += utf8_encode(m, w);
        p += len;
    }
    *w = 0;
    return o;
}

/* C.UTF-8, or (locale_t)0 when the system lacks it. */
static locale_t utf8_locale(void)
{
    locale_t l = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
    return l ? l : newlocale(LC_ALL_MASK, "C.utf8", (locale_t)0);
}

/* ---- StringNormalizer ------------------------------------------------------------------ */

static void strnorm_free(const og_allocator *a, void *params)
{
    og_strnorm_params *p = params;
    if (!p) return;
    for (int i = 0; i < p->n_stop; i++) og_free(a, p->stop[i]);
    og_free(a, p->stop);
    if (p->loc) freelocale(p->loc);
    og_free(a, p);
}

static og_status strnorm_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    og_status st = og_attr_check_type(c, "case_change_action", OG_ATTR_STRING);
    if (!st) st = og_attr_check_type(c, "is_case_sensitive", OG_ATTR_INT);
    if (!st) st = og_attr_check_type(c, "stopwords", OG_ATTR_STRINGS);
    if (!st) st = og_attr_check_type(c, "locale", OG_ATTR_STRING);
    if (st) return st;
    og_strnorm_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    const char *act = og_attr_string(n, "case_change_action", "NONE");
    if (strcmp(act, "NONE") == 0)
        p->action = OG_CASE_NONE;
    else if (strcmp(act, "LOWER") == 0)
        p->action = OG_CASE_LOWER;
    else if (strcmp(act, "UPPER") == 0)
        p->action = OG_CASE_UPPER;
    else
        return og_op_error(c, OG_ERR_MODEL,
                           "attribute 'case_change_action' must be NONE, LOWER or UPPER, got '%s'",
                           act);
    p->case_sensitive = og_attr_int(n, "is_case_sensitive", 0) != 0;
    p->loc = utf8_locale();
    const og_attr *sw = og_node_attr(n, "stopwords");
    if (!sw || sw->n == 0) return OG_OK;
    p->stop = og_calloc(c->alloc, (size_t)sw->n, sizeof *p->stop);
    if (!p->stop) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    for (int i = 0; i < sw->n; i++) {
        p->stop[i] = p->case_sensitive ? og_strdup(c->alloc, sw->strings[i])
                                       : og_utf8_case(c->alloc, sw->strings[i], false, p->loc);
        if (!p->stop[i]) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
        p->n_stop = i + 1;
    }
    return OG_OK;
}

og_status og_strnorm_is_stop(const og_op_ctx *c, const og_strnorm_params *p, const og_tensor *x,
                             int64_t i, bool *stop)
{
    *stop = false;
    if (p->n_stop == 0) return OG_OK;
    const char *s = og_tensor_str(x, i);
    char *folded = NULL;
    if (!p->case_sensitive && !(folded = og_utf8_case(c->alloc, s, false, p->loc)))
        return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    for (int k = 0; k < p->n_stop && !*stop; k++)
        *stop = strcmp(folded ? folded : s, p->stop[k]) == 0;
    og_free(c->alloc, folded);
    return OG_OK;
}

/* [C] or [1, C] in; the same rank out, the stopwords removed (one "" when none is left). */
static og_status strnorm_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_string);
    if (st) return st;
    int r = in[0].rank;
    if (r >= 0 && r != 1 && r != 2)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 must be [C] or [1, C], got rank %d", r);
    if (r == 2 && in[0].dims[0] >= 0 && in[0].dims[0] != 1)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 must be [C] or [1, C], got [%lld, C]",
                           (long long)in[0].dims[0]);
    if (r < 0) {
        out[0].dtype = OG_STRING;
        return OG_OK;
    }
    int64_t dims[2] = {1, OG_DIM_UNKNOWN};
    const og_tensor *x = in[0].value;
    if (x) {
        int64_t kept = 0;
        for (int64_t i = 0; i < x->numel; i++) {
            bool stop;
            if ((st = og_strnorm_is_stop(c, c->node->params, x, i, &stop))) return st;
            kept += !stop;
        }
        dims[1] = kept ? kept : 1;
    } else if (((const og_strnorm_params *)c->node->params)->n_stop == 0) {
        dims[1] = in[0].dims[r - 1];
    }
    og_vinfo_set(&out[0], OG_STRING, r, r == 1 ? dims + 1 : dims);
    return OG_OK;
}

/* ---- StringConcat ---------------------------------------------------------------------- */

static og_status concat_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_string);
    if (!st) st = og_check_dtype(c, in, 1, types_string);
    if (st) return st;
    const og_vinfo *ins[2] = {&in[0], &in[1]};
    st = og_infer_broadcast(c, ins, 2, &out[0]);
    out[0].dtype = OG_STRING;
    return st;
}

/* ---- StringSplit ----------------------------------------------------------------------- */

static bool is_space(int32_t cp)
{
    return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Whitespace at s: its length in bytes, 0 if none. */
static int space_at(const char *s)
{
    int n;
    int32_t cp = utf8_decode((const unsigned char *)s, &n);
    return cp >= 0 && is_space(cp) ? n : 0;
}

int64_t og_strsplit(const og_strsplit_params *p, const char *s, int64_t cap, int64_t *start,
                    int64_t *len)
{
    int64_t count = 0, n = (int64_t)strlen(s), i = 0;
#define PIECE(b, l)                                                                                \
    do {                                                                                           \
        if (start && count < cap) {                                                                \
            start[count] = (b);                                                                    \
            len[count] = (l);                                                                      \
        }                                                                                          \
        count++;                                                                                   \
    } while (0)
    if (!p->delim) { /* runs of whitespace, none at either end; maxsplit as Python's */
        for (;;) {
            int w;
            while (i < n && (w = space_at(s + i)) > 0) i += w;
            if (i >= n) break;
            if (p->maxsplit >= 0 && count == p->maxsplit) { /* the rest, as it is */
                PIECE(i, n - i);
                break;
            }
            int64_t b = i;
            while (i < n && space_at(s + i) == 0) i++;
            PIECE(b, i - b);
        }
        return count;
    }
    int64_t b = 0;
    for (;;) {
        const char *hit = p->maxsplit >= 0 && count == p->maxsplit ? NULL : strstr(s + b, p->delim);
        if (!hit) {
            PIECE(b, n - b);
            break;
        }
        PIECE(b, (int64_t)(hit - s) - b);
        b = (int64_t)(hit - s) + (int64_t)p->delim_len;
    }
#undef PIECE
    return count;
}

static og_status strsplit_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "delimiter", OG_ATTR_STRING);
    if (!st) st = og_attr_check_type(c, "maxsplit", OG_ATTR_INT);
    if (st) return st;
    og_strsplit_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    const og_attr *d = og_node_attr(c->node, "delimiter");
    if (d && d->s_len > 0) {
        if (strlen(d->s) != d->s_len)
            return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'delimiter' holds a NUL byte");
        p->delim = d->s;
        p->delim_len = d->s_len;
    }
    p->maxsplit = og_attr_int(c->node, "maxsplit", -1);
    if (og_node_attr(c->node, "maxsplit") && p->maxsplit < 0)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'maxsplit' must be >= 0, got %lld",
                           (long long)p->maxsplit);
    return OG_OK;
}

static og_status strsplit_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_string);
    if (st) return st;
    out[0].dtype = OG_STRING;
    out[1].dtype = OG_INT64;
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    if (r + 1 > OG_MAX_RANK)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "the output would have rank %d, above %d", r + 1,
                           OG_MAX_RANK);
    og_vinfo_set(&out[1], OG_INT64, r, in[0].dims);
    og_vinfo_set(&out[0], OG_STRING, r + 1, in[0].dims);
    out[0].dims[r] = OG_DIM_UNKNOWN;
    const og_tensor *x = in[0].value;
    if (x) {
        int64_t most = 0;
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t k = og_strsplit(c->node->params, og_tensor_str(x, i), 0, NULL, NULL);
            if (k > most) most = k;
        }
        out[0].dims[r] = most;
    }
    return OG_OK;
}

/* ---- RegexFullMatch -------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    const og_allocator *a;
    bool oom;
} sbuf;

static void put_n(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = 2 * (b->n + n + 16);
        char *q = og_realloc(b->a, b->p, b->n, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void put(sbuf *b, const char *s) { put_n(b, s, strlen(s)); }

static int hexval(char h)
{
    return h >= '0' && h <= '9'   ? h - '0'
           : h >= 'a' && h <= 'f' ? h - 'a' + 10
           : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                  : -1;
}

/* \xHH or \x{H...} at p (after the x): the code point, advancing *i; -1 if malformed. */
static int32_t hex_escape(const char *p, size_t *i)
{
    int32_t v = 0;
    if (p[*i] == '{') {
        size_t j = *i + 1;
        int digits = 0;
        for (; hexval(p[j]) >= 0 && digits < 8; j++, digits++) v = v * 16 + hexval(p[j]);
        if (p[j] != '}' || digits == 0) return -1;
        *i = j + 1;
        return v <= 0x10ffff ? v : -1;
    }
    if (hexval(p[*i]) < 0 || hexval(p[*i + 1]) < 0) return -1;
    v = hexval(p[*i]) * 16 + hexval(p[*i + 1]);
    *i += 2;
    return v;
}

/* A literal code point outside brackets, escaped where POSIX gives it a meaning. */
static void put_literal(sbuf *b, int32_t cp)
{
    char u[5] = {0};
    int n = utf8_encode(cp, u);
    if (n == 1 && strchr(".[]()*+?{}|^$\\", u[0]) && u[0]) put(b, "\\");
    put_n(b, u, (size_t)n);
}

/* The single-character escapes both syntaxes share as control characters. */
static int32_t control_escape(char e)
{
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'a': return '\a';
    default: return -1;
    }
}

/* One RE2 bracket expression starting at p[*i] == '[' into POSIX: the members gathered,
 * then written with ']' first and '-' last, where POSIX reads them literally. */
static og_status re2_class(const og_op_ctx *c, const char *p, size_t *i, sbuf *b)
{
    size_t j = *i + 1;
    bool neg = false, rb = false, dash = false, caret = false;
    sbuf m = {NULL, 0, 0, c->alloc, false};
    if (p[j] == '^') {
        neg = true;
        j++;
    }
    bool first = true;
    for (;; first = false) {
        char ch = p[j];
        if (!ch) {
            og_free(c->alloc, m.p);
            return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern': unterminated [");
        }
        if (ch == ']' && !first) break;
        int32_t lit = -1;
        if (ch == '[' && p[j + 1] == ':') { /* [:alpha:] */
            const char *e = strstr(p + j + 2, ":]");
            if (!e) {
                og_free(c->alloc, m.p);
                return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern': unterminated [:");
            }
            put_n(&m, p + j, (size_t)(e + 2 - (p + j)));
            j = (size_t)(e + 2 - p);
            continue;
        }
        if (ch == '\\') {
            char e = p[j + 1];
            j += 2;
            if (e == 'd') {
                put(&m, "0-9");
                continue;
            }
            if (e == 'w') {
                put(&m, "0-9A-Za-z_");
                continue;
            }
            if (e == 's') {
                put(&m, "\t\n\f\r ");
                continue;
            }
            if (e == 'x') {
                lit = hex_escape(p, &j);
            } else if ((lit = control_escape(e)) < 0) {
                if (!e || (e >= '0' && e <= '9') || (e >= 'A' && e <= 'Z') ||
                    (e >= 'a' && e <= 'z')) {
                    og_free(c->alloc, m.p);
                    return og_op_error(
                        c, OG_ERR_UNSUPPORTED,
                        "attribute 'pattern': \\%c in a character class has no POSIX "
                        "equivalent",
                        e ? e : '?');
                }
                lit = (unsigned char)e;
            }
            if (lit < 0) {
                og_free(c->alloc, m.p);
                return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern': bad \\x escape");
            }
        } else {
            int n;
            lit = utf8_decode((const unsigned char *)p + j, &n);
            if (lit < 0) lit = (unsigned char)ch;
            j += (size_t)n;
        }
        /* a range a-b */
        if (p[j] == '-' && p[j + 1] && p[j + 1] != ']') {
            int n;
            int32_t hi = p[j + 1] == '\\' ? -1 : utf8_decode((const unsigned char *)p + j + 1, &n);
            if (hi < 0 || lit == ']' || lit == '-' || lit == '^' || hi == ']' || hi == '^') {
                og_free(c->alloc, m.p);
                return og_op_error(c, OG_ERR_UNSUPPORTED,
                                   "attribute 'pattern': a range with an escaped or special end");
            }
            char u[5] = {0};
            put_n(&m, u, (size_t)utf8_encode(lit, u));
            put(&m, "-");
            put_n(&m, u, (size_t)utf8_encode(hi, u));
            j += 1 + (size_t)n;
            continue;
        }
        if (lit == ']')
            rb = true;
        else if (lit == '-')
            dash = true;
        else if (lit == '^')
            caret = true;
        else {
            char u[5] = {0};
            put_n(&m, u, (size_t)utf8_encode(lit, u));
        }
    }
    *i = j + 1;
    put(b, neg ? "[^" : "[");
    if (rb) put(b, "]");
    if (m.p) put(b, m.p);
    if (caret) put(b, "^");
    if (dash) put(b, "-");
    put(b, "]");
    og_free(c->alloc, m.p);
    return m.oom ? og_op_error(c, OG_ERR_NOMEM, "out of memory") : OG_OK;
}

/* RE2 syntax to POSIX extended, anchored: ^( ... )$ (a full match exists iff the anchored
 * pattern matches).  Lazy quantifiers become greedy: whether a full match exists does not
 * depend on which one a search prefers. */
static og_status re2_to_posix(const og_op_ctx *c, const char *p, sbuf *b, int *cflags)
{
    size_t i = 0;
    bool dotall = false;
    *cflags = REG_EXTENDED | REG_NOSUB;
    if (p[0] == '(' && p[1] == '?' && p[2] != ':' && p[2] != 'P' && p[2] != '<') {
        size_t j = 2;
        for (; p[j] && p[j] != ')'; j++) {
            if (p[j] == 'i')
                *cflags |= REG_ICASE;
            else if (p[j] == 's')
                dotall = true;
            else if (p[j] != 'U') /* U swaps greediness: no matter for a full match */
                return og_op_error(c, OG_ERR_UNSUPPORTED,
                                   "attribute 'pattern': flag '%c' is not "
                                   "supported (i, s and U at the start are)",
                                   p[j]);
        }
        if (p[j] != ')')
            return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern': unterminated (?");
        i = j + 1;
    }
    put(b, "^(");
    while (p[i]) {
        char ch = p[i];
        if (ch == '\\') {
            char e = p[i + 1];
            i += 2;
            int32_t lit;
            switch (e) {
            case 'd': put(b, "[0-9]"); continue;
            case 'D': put(b, "[^0-9]"); continue;
            case 'w': put(b, "[0-9A-Za-z_]"); continue;
            case 'W': put(b, "[^0-9A-Za-z_]"); continue;
            case 's': put(b, "[\t\n\f\r ]"); continue;
            case 'S': put(b, "[^\t\n\f\r ]"); continue;
            case 'b': put(b, "\\b"); continue;
            case 'B': put(b, "\\B"); continue;
            case 'A': put(b, "^"); continue;
            case 'z': put(b, "$"); continue;
            case 'Q': {
                const char *e2 = strstr(p + i, "\\E");
                size_t end = e2 ? (size_t)(e2 - p) : strlen(p);
                while (i < end) {
                    int n;
                    lit = utf8_decode((const unsigned char *)p + i, &n);
                    put_literal(b, lit < 0 ? (unsigned char)p[i] : lit);
                    i += (size_t)n;
                }
                if (e2) i += 2;
                continue;
            }
            case 'x':
                if ((lit = hex_escape(p, &i)) < 0)
                    return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern': bad \\x escape");
                put_literal(b, lit);
                continue;
            default: break;
            }
            if ((lit = control_escape(e)) >= 0) {
                put_literal(b, lit);
                continue;
            }
            if (!e || (e >= '0' && e <= '9') || (e >= 'A' && e <= 'Z') || (e >= 'a' && e <= 'z'))
                return og_op_error(c, OG_ERR_UNSUPPORTED,
                                   "attribute 'pattern': \\%c has no POSIX equivalent here",
                                   e ? e : '?');
            put_literal(b, (unsigned char)e);
            continue;
        }
        if (ch == '[') {
            og_status st = re2_class(c, p, &i, b);
            if (st) return st;
            continue;
        }
        if (ch == '(' && p[i + 1] == '?') {
            if (p[i + 2] == ':') {
                i += 3;
            } else if ((p[i + 2] == 'P' && p[i + 3] == '<') || p[i + 2] == '<') {
                const char *e = strchr(p + i, '>');
                if (!e)
                    return og_op_error(c, OG_ERR_MODEL,
                                       "attribute 'pattern': unterminated group name");
                i = (size_t)(e + 1 - p);
            } else {
                return og_op_error(c, OG_ERR_UNSUPPORTED,
                                   "attribute 'pattern': (? groups other than (?: and named ones "
                                   "are not supported");
            }
            put(b, "(");
            continue;
        }
        if (ch == '.') {
            put(b, dotall ? "." : "[^\n]");
            i++;
            continue;
        }
        if (ch == '{') { /* a repeat {n}, {n,}, {n,m}; RE2 reads anything else literally */
            size_t j = i + 1;
            bool digits = p[j] >= '0' && p[j] <= '9';
            while (p[j] >= '0' && p[j] <= '9') j++;
            if (p[j] == ',') j++;
            while (p[j] >= '0' && p[j] <= '9') j++;
            if (p[j] != '}' || !digits) {
                put(b, "\\{");
                i++;
                continue;
            }
            put_n(b, p + i, j + 1 - i);
            i = j + 1;
            if (p[i] == '?') i++; /* lazy */
            continue;
        }
        char u[2] = {ch, 0};
        put(b, u);
        i++;
        if ((ch == '*' || ch == '+' || ch == '?') && p[i] == '?') i++; /* lazy */
    }
    put(b, ")$");
    return b->oom ? og_op_error(c, OG_ERR_NOMEM, "out of memory") : OG_OK;
}

static void regex_free(const og_allocator *a, void *params)
{
    og_regex_params *p = params;
    if (!p) return;
    if (p->compiled) regfree(&p->re);
    if (p->loc) freelocale(p->loc);
    og_free(a, p);
}

static og_status regex_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "pattern", OG_ATTR_STRING);
    if (st) return st;
    const og_attr *pa = og_node_attr(c->node, "pattern");
    if (!pa) return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern' is required");
    if (strlen(pa->s) != pa->s_len)
        return og_op_error(c, OG_ERR_UNSUPPORTED, "attribute 'pattern' holds a NUL byte");
    og_regex_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    sbuf b = {NULL, 0, 0, c->alloc, false};
    int flags;
    st = re2_to_posix(c, pa->s, &b, &flags);
    if (st) {
        og_free(c->alloc, b.p);
        return st;
    }
    p->loc = utf8_locale();
    locale_t prev = p->loc ? uselocale(p->loc) : (locale_t)0;
    int rc = regcomp(&p->re, b.p, flags);
    if (p->loc) uselocale(prev);
    og_free(c->alloc, b.p);
    if (rc) {
        char msg[256];
        regerror(rc, &p->re, msg, sizeof msg);
        return og_op_error(c, OG_ERR_MODEL, "attribute 'pattern' '%s': %s", pa->s, msg);
    }
    p->compiled = true;
    return OG_OK;
}

static og_status regex_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_string);
    if (st) return st;
    og_vinfo_copy_shape(&out[0], &in[0]);
    out[0].dtype = OG_BOOL;
    return OG_OK;
}

/* ---- TfIdfVectorizer ------------------------------------------------------------------- */

static void tfidf_free(const og_allocator *a, void *params)
{
    og_tfidf_params *p = params;
    if (!p) return;
    og_free(a, p->table);
    og_free(a, p);
}

/* Insert pool items [first, first + len) (an n-gram or a prefix) with id (0: a prefix,
 * which never replaces an n-gram's id). */
static void tfidf_insert(og_tfidf_params *p, int64_t first, int64_t len, int64_t id)
{
    uint64_t h = OG_NGRAM_SEED;
    for (int64_t k = 0; k < len; k++)
        h = og_ngram_mix(h, p->pool_i ? (uint64_t)p->pool_i[first + k]
                                      : og_ngram_str(p->pool_s[first + k]));
    h = og_ngram_mix(h, (uint64_t)len);
    for (int64_t s = (int64_t)(h & (uint64_t)(p->cap - 1));; s = (s + 1) & (p->cap - 1)) {
        og_ngram *e = &p->table[s];
        bool same = e->len == len;
        for (int64_t k = 0; same && k < len; k++)
            same = p->pool_i ? p->pool_i[e->first + k] == p->pool_i[first + k]
                             : strcmp(p->pool_s[e->first + k], p->pool_s[first + k]) == 0;
        if (e->len == 0 || same) {
            if (e->len == 0 || id) e->id = id; /* the last occurrence of an n-gram wins */
            e->first = first;
            e->len = len;
            return;
        }
    }
}

static og_status tfidf_parse(const og_op_ctx *c, void **params)
{
    const og_node *n = c->node;
    const char *req[] = {"max_gram_length", "max_skip_count", "min_gram_length", "mode",
                         "ngram_counts",    "ngram_indexes"};
    og_status st = og_attr_check_type(c, "mode", OG_ATTR_STRING);
    if (!st) st = og_attr_check_type(c, "ngram_counts", OG_ATTR_INTS);
    if (!st) st = og_attr_check_type(c, "ngram_indexes", OG_ATTR_INTS);
    if (!st) st = og_attr_check_type(c, "pool_int64s", OG_ATTR_INTS);
    if (!st) st = og_attr_check_type(c, "pool_strings", OG_ATTR_STRINGS);
    if (!st) st = og_attr_check_type(c, "weights", OG_ATTR_FLOATS);
    for (int i = 0; !st && i < 3; i++) st = og_attr_check_type(c, req[i], OG_ATTR_INT);
    for (int i = 0; !st && i < 6; i++)
        if (!og_node_attr(n, req[i]))
            st = og_op_error(c, OG_ERR_MODEL, "attribute '%s' is required", req[i]);
    if (st) return st;
    og_tfidf_params *p = og_calloc(c->alloc, 1, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    *params = p;
    const char *mode = og_attr_string(n, "mode", "");
    p->mode = strcmp(mode, "TF") == 0      ? 1
              : strcmp(mode, "IDF") == 0   ? 2
              : strcmp(mode, "TFIDF") == 0 ? 3
                                           : 0;
    if (!p->mode)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'mode' must be TF, IDF or TFIDF, got '%s'",
                           mode);
    p->min_len = og_attr_int(n, "min_gram_length", 0);
    p->max_len = og_attr_int(n, "max_gram_length", 0);
    p->max_skip = og_attr_int(n, "max_skip_count", 0);
    if (p->min_len < 1 || p->max_len < p->min_len || p->max_skip < 0)
        return og_op_error(c, OG_ERR_MODEL,
                           "need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0, "
                           "got %lld, %lld, %lld",
                           (long long)p->min_len, (long long)p->max_len, (long long)p->max_skip);
    const og_attr *pi = og_node_attr(n, "pool_int64s"), *ps = og_node_attr(n, "pool_strings");
    if (!!pi == !!ps)
        return og_op_error(c, OG_ERR_MODEL,
                           "exactly one of pool_int64s and pool_strings must be set");
    p->pool_i = pi ? pi->ints : NULL;
    p->pool_s = ps ? ps->strings : NULL;
    p->pool_n = pi ? pi->n : ps->n;
    int nc = 0, ni = 0;
    const int64_t *counts = og_attr_ints(n, "ngram_counts", &nc);
    p->indexes = og_attr_ints(n, "ngram_indexes", &ni);
    p->n_indexes = ni;
    p->weights = og_attr_floats(n, "weights", &p->n_weights);
    if (p->n_weights == 0) p->weights = NULL;
    p->out_size = 0;
    for (int i = 0; i < ni; i++) {
        if (p->indexes[i] < 0)
            return og_op_error(c, OG_ERR_MODEL, "ngram_indexes[%d] is negative", i);
        if (p->indexes[i] + 1 > p->out_size) p->out_size = p->indexes[i] + 1;
    }
    if (p->weights && p->n_weights < p->out_size)
        return og_op_error(c, OG_ERR_MODEL, "weights has %d entries, the output %lld", p->n_weights,
                           (long long)p->out_size);
    /* count the n-grams (and their prefixes) to load: sizes min..max */
    int64_t entries = 0, id = 1;
    for (int s = 0; s < nc; s++) {
        int64_t b = counts[s], e = s + 1 < nc ? counts[s + 1] : p->pool_n, len = s + 1;
        if (b < 0 || e < b || e > p->pool_n || (e - b) % len)
            return og_op_error(c, OG_ERR_MODEL,
                               "ngram_counts[%d] = %lld does not delimit %lld-grams "
                               "in a pool of %lld",
                               s, (long long)b, (long long)len, (long long)p->pool_n);
        if (len >= p->min_len && len <= p->max_len) entries += (e - b);
        id += (e - b) / len;
    }
    if (id - 1 > ni)
        return og_op_error(c, OG_ERR_MODEL, "the pool holds %lld n-grams, ngram_indexes %d",
                           (long long)(id - 1), ni);
    p->cap = 16;
    while (p->cap < 2 * entries + 2) p->cap *= 2;
    p->table = og_calloc(c->alloc, (size_t)p->cap, sizeof *p->table);
    if (!p->table) return og_op_error(c, OG_ERR_NOMEM, "out of memory for the n-gram table");
    id = 1;
    for (int s = 0; s < nc; s++) {
        int64_t b = counts[s], e = s + 1 < nc ? counts[s + 1] : p->pool_n, len = s + 1;
        bool load = len >= p->min_len && len <= p->max_len;
        for (int64_t g = b; g < e; g += len, id++) {
            if (!load) continue;
            for (int64_t k = 1; k < len; k++) tfidf_insert(p, g, k, 0);
            tfidf_insert(p, g, len, id);
        }
    }
    return OG_OK;
}

static og_status tfidf_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    const og_tfidf_params *p = c->node->params;
    static const og_dtype types_int[] = {OG_INT32, OG_INT64, OG_UNDEFINED};
    og_status st = og_check_dtype(c, in, 0, p->pool_s ? types_string : types_int);
    if (st) return st;
    int r = in[0].rank;
    if (r > 2) return og_op_error(c, OG_ERR_SHAPE, "input 0 must be [C] or [N, C], got rank %d", r);
    if (r < 0) {
        out[0].dtype = OG_FLOAT;
        return OG_OK;
    }
    if (r == 2)
        og_vinfo_set(&out[0], OG_FLOAT, 2, (int64_t[]){in[0].dims[0], p->out_size});
    else
        og_vinfo_set(&out[0], OG_FLOAT, 1, &p->out_size);
    return OG_OK;
}

const og_op_def og_ops_string[] = {
    {"StringNormalizer", "", OG_SINCE(StringNormalizer), 1, 1, 1, 1, strnorm_parse, strnorm_free,
     strnorm_infer, 0},
    {"StringConcat", "", OG_SINCE(StringConcat), 2, 2, 1, 1, NULL, NULL, concat_infer, 0},
    {"StringSplit", "", OG_SINCE(StringSplit), 1, 1, 2, 2, strsplit_parse, NULL, strsplit_infer, 0},
    {"RegexFullMatch", "", OG_SINCE(RegexFullMatch), 1, 1, 1, 1, regex_parse, regex_free,
     regex_infer, 0},
    {"TfIdfVectorizer", "", OG_SINCE(TfIdfVectorizer), 1, 1, 1, 1, tfidf_parse, tfidf_free,
     tfidf_infer, 0},
    {0},
};
