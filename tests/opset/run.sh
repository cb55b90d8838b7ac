#!/bin/sh
# Per-opset cases: generate them (once per change of the generator or the op lists) into
# BUILD_DIR/opset_cases, run BUILD_DIR/tests/og_backend_test on all of them, and fail on any
# failure not listed in tests/opset/known_failures.txt.
# usage: tests/opset/run.sh BUILD_DIR      exit 0 pass, 1 fail, 77 skip (no onnx/onnxruntime)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: run.sh BUILD_DIR}
build=$(cd "$build" && pwd) || exit 1
runner="$build/tests/og_backend_test"
cases="$build/opset_cases"
python=${PYTHON:-python3}

if [ ! -x "$runner" ]; then
    echo "run.sh: $runner not built" >&2
    exit 1
fi

# The case set depends on the generator, the runner's op list and the since-version table.
stamp=$(cat "$here"/gen_*.py "$root/tests/backend/og_backend_test.c" "$root/src/ops/since.inc" |
        cksum | cut -d' ' -f1)
if [ ! -f "$cases/.stamp" ] || [ "$(cat "$cases/.stamp")" != "$stamp" ]; then
    if ! "$python" -c "import onnx, onnxruntime" 2>/dev/null; then
        echo "run.sh: python onnx and onnxruntime are needed to generate the cases; skipped" >&2
        exit 77
    fi
    tmp="$cases.tmp.$$"
    rm -rf "$tmp"
    if ! "$python" "$here/gen_cases.py" "$tmp"; then
        rm -rf "$tmp"
        echo "run.sh: case generation failed" >&2
        exit 1
    fi
    echo "$stamp" >"$tmp/.stamp"
    rm -rf "$cases"
    mv "$tmp" "$cases"
fi

log="$build/opset_cases.log"
# The runner exits non-zero on any failure; the verdict below is ours.
"$runner" "$cases"/test_* >"$log" 2>&1
known=$(grep -v '^#' "$here/known_failures.txt" | awk 'NF {print $1}')

new_fail=0
stale=""
while IFS= read -r line; do
    case "$line" in
    FAIL\ *)
        name=${line#FAIL }
        name=${name%%:*}
        if echo "$known" | grep -qx "$name"; then
            echo "known: $line"
        else
            echo "$line"
            new_fail=$((new_fail + 1))
        fi
        ;;
    SKIP\ *) echo "$line" ;;
    esac
done <"$log"
for k in $known; do
    grep -qx "PASS $k" "$log" && stale="$stale $k"
done
[ -n "$stale" ] && echo "note: listed in known_failures.txt but passing now:$stale"
summary=$(tail -n 1 "$log")
echo "opset cases: $summary; $new_fail unexpected failure(s) (full log: $log)"
case "$summary" in
*passed*) ;;
*) echo "run.sh: the runner did not finish (see $log)" >&2; exit 1 ;;
esac
[ "$new_fail" -eq 0 ] || exit 1
exit 0
