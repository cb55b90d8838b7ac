#!/usr/bin/env bash
# make install works for both ways of consuming onnxgrad: the README's C example builds with
# pkg-config and with CMake's find_package against a fresh install prefix, and runs.
set -euo pipefail
build=$1
src=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
python3 - "$src/README.md" "$tmp/example.c" <<'PY'
import re, sys
code = re.search(r"```c\n(.*?)```", open(sys.argv[1]).read(), re.S).group(1)
open(sys.argv[2], "w").write(code)
PY
cd "$tmp"
cp -r "$src/models" .
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror example.c $(pkg-config --cflags --libs onnxgrad) \
   -Wl,-rpath,"$tmp/prefix/lib" -o ex_pkgconfig
./ex_pkgconfig | tee out1
cat > CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.18)
project(ex C)
find_package(onnxgrad REQUIRED)
add_executable(app example.c)
target_link_libraries(app onnxgrad::onnxgrad)
CM
cmake -S . -B b -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build b >/dev/null
./b/app | tee out2
cmp out1 out2
# three probabilities that sum to 1
awk '{ s = $1 + $2 + $3; if (NF != 3 || s < 0.999 || s > 1.001) exit 1 }' out1
echo "1 passed, 0 failed"
