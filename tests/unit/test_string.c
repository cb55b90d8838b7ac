/* test_string.c: StringNormalizer (Unicode case mapping, stopwords either way, the empty
 * result), StringConcat, StringSplit (whitespace runs, Unicode spaces, maxsplit),
 * RegexFullMatch (RE2 syntax through its POSIX translation: classes, escapes, lazy and
 * possessive-free quantifiers, flags, groups, code points; what is refused), and
 * TfIdfVectorizer's attribute errors. */
#include "unit/node_harness.h"

static og_tensor *strings(int rank, const int64_t *dims, const char *const *s)
{
    og_tensor *t = NULL;
    og_tensor_from_strings(rank, dims, s, NULL, &t);
    return t;
}

static bool strings_are(const og_tensor *t, int64_t n, const char *const *want)
{
    if (!t || t->dtype != OG_STRING || t->numel != n) {
        fprintf(stderr, "expected %lld strings, got %lld\n", (long long)n,
                t ? (long long)t->numel : -1LL);
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        if (strcmp(og_tensor_string(t, i), want[i]) != 0) {
            fprintf(stderr, "string %lld is '%s', expected '%s'\n", (long long)i,
                    og_tensor_string(t, i), want[i]);
            return false;
        }
    return true;
}

static void test_normalizer(void)
{
    const char *w[] = {"Été", "ÉTÉ", "straße", "Monday", "MONDAY", "Ωmega"};
    og_tensor *x = strings(1, (int64_t[]){6}, w);
    nh_result r;
    nh_node lower = {
        .op = "StringNormalizer",
        .opset = 10,
        .attrs = {NH_STRING("case_change_action", "LOWER"), NH_STRINGS("stopwords", "monday")},
        .in = {x}};
    CHECK_OK(nh_run(&lower, &r)); /* case-insensitive: both Mondays go */
    CHECK(strings_are(r.out[0], 4, (const char *[]){"été", "été", "straße", "ωmega"}));
    nh_release(&r);
    nh_node upper = {.op = "StringNormalizer",
                     .opset = 10,
                     .attrs = {NH_STRING("case_change_action", "UPPER"),
                               NH_INT("is_case_sensitive", 1),
                               NH_STRINGS("stopwords", "Monday", "été")},
                     .in = {x}};
    CHECK_OK(nh_run(&upper, &r)); /* case-sensitive: only the exact "Monday" goes */
    CHECK(strings_are(r.out[0], 5, (const char *[]){"ÉTÉ", "ÉTÉ", "STRAßE", "MONDAY", "ΩMEGA"}));
    nh_release(&r);
    /* all removed: one empty string, [1] or [1, 1] */
    const char *m[] = {"monday", "Monday"};
    og_tensor *mm = strings(2, (int64_t[]){1, 2}, m);
    nh_node all = {.op = "StringNormalizer",
                   .opset = 10,
                   .attrs = {NH_STRINGS("stopwords", "MONDAY")},
                   .in = {mm}};
    CHECK_OK(nh_run(&all, &r));
    CHECK(r.out[0] && r.out[0]->rank == 2 && r.out[0]->dims[1] == 1 &&
          strings_are(r.out[0], 1, (const char *[]){""}));
    nh_release(&r);
    og_tensor *x3 = strings(2, (int64_t[]){2, 1}, m);
    nh_node bad = {.op = "StringNormalizer", .opset = 10, .in = {x3}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_SHAPE, "[C] or [1, C]");
    nh_node act = {.op = "StringNormalizer",
                   .opset = 10,
                   .attrs = {NH_STRING("case_change_action", "TITLE")},
                   .in = {x}};
    nh_expect_fail(&act, NH_LOAD, OG_ERR_MODEL, "case_change_action");
    nh_free_tensors((og_tensor *[]){x, mm, x3}, 3);
}

static void test_concat_split(void)
{
    og_tensor *a = strings(2, (int64_t[]){2, 1}, (const char *[]){"ab", ""}),
              *b = strings(1, (int64_t[]){3}, (const char *[]){"x", "", "γδ"});
    nh_node c = {.op = "StringConcat", .opset = 20, .in = {a, b}};
    nh_result r;
    CHECK_OK(nh_run(&c, &r));
    CHECK(strings_are(r.out[0], 6, (const char *[]){"abx", "ab", "abγδ", "x", "", "γδ"}));
    nh_release(&r);
    og_tensor *f = nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, NULL);
    nh_node cf = {.op = "StringConcat", .opset = 20, .in = {a, f}};
    nh_expect_fail(&cf, NH_LOAD, OG_ERR_UNSUPPORTED, "float32");

    /* whitespace runs, Unicode spaces (U+3000, U+00A0) too, none at the ends */
    og_tensor *s = strings(1, (int64_t[]){3}, (const char *[]){"  a\tb\u3000c\u00a0 ", "", "one"});
    nh_node sp = {.op = "StringSplit", .opset = 20, .n_out = 2, .in = {s}};
    CHECK_OK(nh_run(&sp, &r));
    CHECK(r.out[0] && r.out[0]->rank == 2 && r.out[0]->dims[1] == 3 &&
          strings_are(r.out[0], 9, (const char *[]){"a", "b", "c", "", "", "", "one", "", ""}));
    CHECK(nh_close("counts", r.out[1], 3, (double[]){3, 0, 1}, 0, 0));
    nh_release(&r);
    /* maxsplit 1: the rest stays whole, its trailing space too; maxsplit 0: one piece */
    nh_node sp1 = {
        .op = "StringSplit", .opset = 20, .n_out = 2, .attrs = {NH_INT("maxsplit", 1)}, .in = {s}};
    CHECK_OK(nh_run(&sp1, &r));
    CHECK(strings_are(r.out[0], 6, (const char *[]){"a", "b\u3000c\u00a0 ", "", "", "one", ""}));
    nh_release(&r);
    /* a delimiter of several bytes, and the empty string as one empty piece */
    og_tensor *d = strings(1, (int64_t[]){2}, (const char *[]){"a::b::::c", ""});
    nh_node sd = {.op = "StringSplit",
                  .opset = 20,
                  .n_out = 2,
                  .attrs = {NH_STRING("delimiter", "::")},
                  .in = {d}};
    CHECK_OK(nh_run(&sd, &r));
    CHECK(strings_are(r.out[0], 8, (const char *[]){"a", "b", "", "c", "", "", "", ""}));
    CHECK(nh_close("counts", r.out[1], 2, (double[]){4, 1}, 0, 0));
    nh_release(&r);
    nh_node neg = {
        .op = "StringSplit", .opset = 20, .n_out = 2, .attrs = {NH_INT("maxsplit", -1)}, .in = {d}};
    nh_expect_fail(&neg, NH_LOAD, OG_ERR_MODEL, "maxsplit");
    nh_free_tensors((og_tensor *[]){a, b, f, s, d}, 5);
}

static void test_regex(void)
{
    struct {
        const char *pattern;
        const char *text[4];
        int match[4];
    } cases[] = {
        {"[a-z]+\\d{2,3}", {"abc12", "abc1", "ab1234", "12"}, {1, 0, 0, 0}},
        {"(?i)hello\\s\\w+", {"HELLO world", "hello  x", "Hello_x", "hello x y"}, {1, 0, 0, 0}},
        {"[\\w.-]+@[^@]+\\.(?:com|org)",
         {"a.b-c@x.org", "a@b@c.com", "a@x.net", "_@x.com"},
         {1, 0, 0, 1}},
        {"a.*?b", {"aXXb", "ab", "a\nb", "ba"}, {1, 1, 0, 0}},
        {"(?s)a.b", {"a\nb", "ab", "axb", ""}, {1, 0, 1, 0}},
        {"\\Q1+1=2\\E\\.?", {"1+1=2", "1+1=2.", "11=2", "1+1=2.."}, {1, 1, 0, 0}},
        {"(?P<year>\\d{4})-[\\d]{2}", {"2024-05", "24-05", "2024-5", "2024-05-"}, {1, 0, 0, 0}},
        {"\\x41\\x{3b1}.", {"Aαβ", "Aα", "Aαxy", "aαx"}, {1, 0, 0, 0}},
        {"[^\\d\\s]+|\\b", {"abc", "a1", "", " "}, {1, 0, 0, 0}}, /* no boundary in "" */
        {"a{,2}", {"a{,2}", "aa", "", "a"}, {1, 0, 0, 0}},        /* RE2 reads {,2} literally */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        og_tensor *x = strings(1, (int64_t[]){4}, cases[i].text);
        nh_node n = {.op = "RegexFullMatch",
                     .opset = 20,
                     .attrs = {NH_STRING("pattern", cases[i].pattern)},
                     .in = {x}};
        nh_result r;
        CHECK_OK(nh_run(&n, &r));
        for (int k = 0; r.out[0] && k < 4; k++)
            CHECKF(((const uint8_t *)r.out[0]->data)[k] == cases[i].match[k], "'%s' on '%s': %d",
                   cases[i].pattern, cases[i].text[k], ((const uint8_t *)r.out[0]->data)[k]);
        nh_release(&r);
        og_tensor_free(x);
    }
    og_tensor *x = strings(1, (int64_t[]){1}, (const char *[]){"a"});
    struct {
        const char *pattern;
        og_status st;
        const char *msg;
    } bad[] = {{"\\p{L}+", OG_ERR_UNSUPPORTED, "no POSIX equivalent"},
               {"a(?i)b", OG_ERR_UNSUPPORTED, "(? groups"},
               {"(ab", OG_ERR_MODEL, "pattern"},
               {"[\\D]", OG_ERR_UNSUPPORTED, "character class"},
               {"(?m)^a", OG_ERR_UNSUPPORTED, "flag 'm'"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nh_node n = {.op = "RegexFullMatch",
                     .opset = 20,
                     .attrs = {NH_STRING("pattern", bad[i].pattern)},
                     .in = {x}};
        nh_expect_fail(&n, NH_LOAD, bad[i].st, bad[i].msg);
    }
    nh_node none = {.op = "RegexFullMatch", .opset = 20, .in = {x}};
    nh_expect_fail(&none, NH_LOAD, OG_ERR_MODEL, "required");
    og_tensor_free(x);
}

static void test_tfidf(void)
{
    og_tensor *x = nh_tensor(OG_INT64, 1, (int64_t[]){6}, (double[]){1, 2, 1, 2, 3, 1});
    nh_result r;
    /* unigrams 1, 2 and the bigrams (1, 2), (2, 1): with skips up to 1 */
    nh_node n = {.op = "TfIdfVectorizer",
                 .opset = 9,
                 .attrs = {NH_INT("min_gram_length", 1), NH_INT("max_gram_length", 2),
                           NH_INT("max_skip_count", 1), NH_STRING("mode", "TFIDF"),
                           NH_INTS("ngram_counts", 0, 2), NH_INTS("ngram_indexes", 3, 2, 1, 0),
                           NH_INTS("pool_int64s", 1, 2, 1, 2, 2, 1),
                           NH_FLOATS("weights", 0.5, 1, 2, 4)},
                 .in = {x}};
    CHECK_OK(nh_run(&n, &r));
    /* counts: 1 three times, 2 twice; (1, 2): adjacent twice, skip 1: x0-x2? no (1,1), x2-x4
     * (1,3) no, x1-x3 (2,2) no, x3-x5 (2,1) yes; adjacent (2, 1): x1x2, x4? (3,1) no -> once,
     * so (1, 2): 2 and (2, 1): 1 + 1 = 2; weights by output column */
    CHECK(nh_close("tfidf", r.out[0], 4, (double[]){2 * 0.5, 2 * 1, 2 * 2, 3 * 4}, 0, 0));
    nh_release(&r);
    struct {
        nh_attr a;
        const char *msg;
    } bad[] = {{NH_STRING("mode", "BM25"), "mode"},
               {NH_INTS("ngram_counts", 0, 5), "does not delimit"},
               {NH_INT("min_gram_length", 3), "min_gram_length"}};
    for (int i = 0; i < 3; i++) {
        nh_node b = n;
        for (int k = 0; k < NH_MAX_ATTRS && b.attrs[k].name; k++)
            if (strcmp(b.attrs[k].name, bad[i].a.name) == 0) b.attrs[k] = bad[i].a;
        nh_expect_fail(&b, NH_LOAD, OG_ERR_MODEL, bad[i].msg);
    }
    nh_node both = n;
    both.attrs[8] = (nh_attr)NH_STRINGS("pool_strings", "a");
    nh_expect_fail(&both, NH_LOAD, OG_ERR_MODEL, "exactly one of");
    og_tensor *s = strings(1, (int64_t[]){1}, (const char *[]){"a"});
    nh_node wrong = n;
    wrong.in[0] = s;
    nh_expect_fail(&wrong, NH_LOAD, OG_ERR_UNSUPPORTED, "string");
    og_tensor_free(s);
    og_tensor_free(x);
}

int main(void)
{
    test_normalizer();
    test_concat_split();
    test_regex();
    test_tfidf();
    NH_DONE();
}
