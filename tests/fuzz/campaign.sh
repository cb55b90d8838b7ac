#!/usr/bin/env bash
# Run fuzz targets one after the other (never two fuzzers at once), each for SECONDS of wall
# time, at nice $NICE (default 10: at 19 a fuzzer got 1-20 % of a core on the shared machine,
# 10 still yields to builds at 0), with a per-input timeout of $TIMEOUT wall seconds (default
# 60: libFuzzer's timeout is wall time, and on the loaded machine a unit of 5 CPU seconds took
# 22), growing a working corpus per target in fuzz-corpus/<target>/ from the kept
# seeds (tests/fuzz/corpus/<target>/) with the dictionary; crashes go to
# fuzz-artifacts/<target>/, logs to fuzz-logs/<target>.log, and one summary line per run
# (CPU seconds, executions, edges, features, crash files) to fuzz-logs/summary.tsv.
# Target "python" is the atheris target (tests/fuzz/fuzz_python.py) over the release library
# $OG_PY_LIB (default build/libonnxgrad.so); the others are BUILD_FUZZ/og_fuzz_<target>.
#   tests/fuzz/campaign.sh BUILD_FUZZ SECONDS TARGET...
set -u
build=$1; secs=$2; shift 2
cd "$(dirname "$0")/../.."
mkdir -p fuzz-logs
corpus_of() { case $1 in load|run|grad|save) echo models ;; *) echo "$1" ;; esac; }
# -max_len fitting each target's inputs: the seeds' largest is 28 KB (models), 20 KB (python),
# 1.1 KB (data), 342 B (ckpt), 288 B (npy); longer inputs only slow the small readers down
max_len_of() { case $1 in npy|ckpt) echo 4096 ;; data) echo 16384 ;; *) echo 65536 ;; esac; }
for t in "$@"; do
  seeds=tests/fuzz/corpus/$(corpus_of "$t")
  mkdir -p "fuzz-corpus/$t" "fuzz-artifacts/$t" "$seeds"
  log=fuzz-logs/$t.run.log
  flags=(-max_total_time="$secs" -rss_limit_mb=3072 -timeout="${TIMEOUT:-60}" -report_slow_units=60 -max_len="$(max_len_of "$t")"
         -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$t/")
  if [ "$t" = python ]; then
    cmd=(env ONNXGRAD_LIBRARY="${OG_PY_LIB:-$PWD/build/libonnxgrad.so}" PYTHONPATH="$PWD/python"
         python3 tests/fuzz/fuzz_python.py)
  else
    cmd=("$build/og_fuzz_$t" -dict=tests/fuzz/onnx.dict -malloc_limit_mb=1024)
  fi
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    /usr/bin/time -f "cpu %U %S" -o "fuzz-logs/$t.time" \
    nice -n "${NICE:-10}" "${cmd[@]}" "${flags[@]}" "fuzz-corpus/$t" "$seeds" >"$log" 2>&1
  rc=$?
  cat "$log" >>"fuzz-logs/$t.log"
  cpu=$(awk '/^cpu/ {printf "%.0f", $2 + $3}' "fuzz-logs/$t.time")
  execs=$(grep -o "stat::number_of_executed_units: [0-9]*" "$log" | tail -1 | grep -o "[0-9]*$")
  cov=$(grep -o "cov: [0-9]*" "$log" | tail -1 | grep -o "[0-9]*$")
  ft=$(grep -o "ft: [0-9]*" "$log" | tail -1 | grep -o "[0-9]*$")
  crashes=$(ls "fuzz-artifacts/$t" | wc -l)
  printf "%s\t%s\tcpu %ss\texecs %s\tcov %s\tft %s\trc %s\tartifacts %s\n" "$(date -Is)" "$t" \
    "${cpu:-?}" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$rc" "$crashes" \
    | tee -a fuzz-logs/summary.tsv
done
