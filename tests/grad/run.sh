#!/usr/bin/env bash
# Gradient checks: every case of tests/grad/cases_*.py through `onnxgrad check` (central
# finite differences on a float64 copy).  Ends with "N passed, N failed".
set -uo pipefail
build=${1:-build}
cases="$build/grad_cases"
src=$(cd "$(dirname "$0")" && pwd)
stamp="$cases/.stamp"
if [ ! -f "$stamp" ] || [ -n "$(find "$src" -name '*.py' -newer "$stamp")" ]; then
  rm -rf "$cases"
  python3 "$src/make_cases.py" "$cases" || exit 1
  touch "$stamp"
fi
pass=0; fail=0; skip=0
for d in "$cases"/*/; do
  name=$(basename "$d")
  if [ -f "$d/no_fd" ]; then
    skip=$((skip + 1))
    echo "SKIP $name: $(cat "$d/no_fd")"
    continue
  fi
  # shellcheck disable=SC2046
  if out=$("$build/onnxgrad" check "$d/model.onnx" $(cat "$d/args") --threads 1 2>&1); then
    pass=$((pass + 1))
    worst=$(echo "$out" | awk 'NR > 1 && $2 + 0 > m { m = $2 + 0 } END { printf "%.2g", m }')
    echo "PASS $name (largest relative error $worst)"
  else
    fail=$((fail + 1))
    echo "FAIL $name"
    echo "$out" | sed 's/^/    /'
  fi
done
echo "$pass passed, $fail failed, $skip not checked by finite differences"
[ "$fail" = 0 ]
