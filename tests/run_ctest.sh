#!/usr/bin/env bash
# Run the CTest suite of a build folder and end with one line: N passed, N failed, N skipped.
set -uo pipefail
build=${1:-build}
log=$(mktemp)
(cd "$build" && ctest -j "$(nproc)" --output-on-failure --timeout 300) 2>&1 | tee "$log" |
  grep -vE '^\s*[0-9]+/[0-9]+ Test +#[0-9]+: .*(Passed|Skipped|Not Run \(Disabled\))|^\s+[0-9]+ - .*\((Skipped|Disabled)\)$|^\s+Start +[0-9]+:' || true
passed=$(grep -cE 'Test +#[0-9]+: .* Passed' "$log")
failed=$(grep -cE 'Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|Not Run$)' "$log")
skipped=$(grep -cE 'Test +#[0-9]+: .*(Skipped|Disabled)' "$log")
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
