#!/usr/bin/env bash
# Run libFuzzer targets one after the other (never two fuzzers at once), each for SECONDS,
# niced, growing a working corpus per target in fuzz-corpus/<target>/ from the kept seeds
# (tests/fuzz/corpus/<target>/) with the dictionary; crashes go to fuzz-artifacts/<target>/,
# logs to fuzz-logs/<target>.log, and one summary line per run (executions, edges,
# features, crashes) to fuzz-logs/summary.tsv.
#   tests/fuzz/campaign.sh BUILD_FUZZ SECONDS TARGET...
set -u
build=$1; secs=$2; shift 2
cd "$(dirname "$0")/../.."
mkdir -p fuzz-logs
for t in "$@"; do
  mkdir -p "fuzz-corpus/$t" "fuzz-artifacts/$t"
  log=fuzz-logs/$t.run.log
  start=$(date +%s)
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    nice -n 19 "$build/og_fuzz_$t" -max_total_time="$secs" -dict=tests/fuzz/onnx.dict \
    -rss_limit_mb=3072 -malloc_limit_mb=1024 -timeout=25 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="fuzz-artifacts/$t/" "fuzz-corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  cat "$log" >>"fuzz-logs/$t.log"
  execs=$(grep -o "stat::number_of_executed_units: [0-9]*" "$log" | tail -1 | grep -o "[0-9]*$")
  cov=$(grep -o "cov: [0-9]*" "$log" | tail -1 | grep -o "[0-9]*$")
  ft=$(grep -o "ft: [0-9]*" "$log" | tail -1 | grep -o "[0-9]*$")
  crashes=$(ls "fuzz-artifacts/$t" | wc -l)
  printf "%s\t%s\t%ss\texecs %s\tcov %s\tft %s\trc %s\tartifacts %s\n" "$(date -Is)" "$t" \
    "$(( $(date +%s) - start ))" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$rc" "$crashes" \
    | tee -a fuzz-logs/summary.tsv
done
