#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest).  `pip install ./python` into a
# throwaway folder, the way a user installs it: its build step runs CMake on the repository
# (in BUILD_DIR/python-lib, so that later runs rebuild incrementally) and bundles
# libonnxgrad.so; then pytest, with the CLI of BUILD_DIR as a reference.  For a sanitized
# BUILD_DIR the package bundles that build's library instead and Python runs with the
# sanitizer runtime preloaded (leak detection off: the interpreter keeps memory on purpose).
#
# usage: tests/python/run.sh [BUILD_DIR]      (PYTHON: the interpreter, default python3)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
if ! $PY -c "import numpy, pytest" 2>/dev/null; then
  echo "numpy or pytest missing for $PY: run scripts/setup.sh" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset ONNXGRAD_LIBRARY ONNXGRAD_PREBUILT
preload=""
if grep -q '^OG_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  export ONNXGRAD_PREBUILT=$build ONNXGRAD_SANITIZED=1
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
else
  export ONNXGRAD_CMAKE_BUILD_DIR=$build/python-lib
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
fi
# Without network pip cannot fetch setuptools for an isolated build: build with the
# interpreter's own setuptools when it can make wheels.
iso=""
if $PY -c "import setuptools, wheel" 2>/dev/null ||
   $PY -c "import setuptools.command.bdist_wheel" 2>/dev/null; then
  iso=--no-build-isolation
fi
if ! $PY -m pip install -q --disable-pip-version-check --no-deps $iso --target "$tmp/site" \
     "$root/python" >"$tmp/pip.log" 2>&1; then
  cat "$tmp/pip.log" >&2
  echo "pip install ./python failed" >&2
  exit 1
fi
cd "$tmp"
export PYTHONPATH="$tmp/site" ONNXGRAD_CLI="$build/onnxgrad"
py() { LD_PRELOAD="$preload" ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 $PY "$@"; }
py -c "
import onnxgrad
assert onnxgrad.library_path().startswith('$tmp/site/onnxgrad/'), onnxgrad.library_path()
print('onnxgrad', onnxgrad.__version__, 'from', onnxgrad.library_path())"
py -m pytest -q -p no:cacheprovider "$root/python/tests"
