#!/usr/bin/env bash
# Merge raw seeds (tests/fuzz/make_corpus.py RAW_DIR) into the small corpora kept in the
# repository, tests/fuzz/corpus/<target>/: libFuzzer keeps only inputs that add coverage.
#   tests/fuzz/minimize.sh BUILD_FUZZ RAW_DIR TARGET...
set -eu
build=$1; raw=$2; shift 2
cd "$(dirname "$0")/../.."
corpus_of() { case $1 in load|run|grad|save) echo models ;; *) echo "$1" ;; esac; }
for t in "$@"; do
  seeds=tests/fuzz/corpus/$(corpus_of "$t")
  out=$seeds
  mkdir -p "$out"
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0 nice -n 19 "$build/og_fuzz_$t" \
    -merge=1 -rss_limit_mb=3072 -malloc_limit_mb=1024 -timeout=25 -max_len=65536 \
    "$out" "$raw/$(corpus_of "$t")" 2>&1 | tail -2
  echo "$t: $(ls "$out" | wc -l) files, $(du -sh "$out" | cut -f1)"
done
