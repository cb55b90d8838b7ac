#!/usr/bin/env bash
# onnxgrad.Trainer and OrtGradientForwardBackwardOptimizer under mpirun
# (python/onnxgrad/parallel.py), on 2 and 4 ranks: tests/mpi/estimator_ranks.py and
# tests/mpi/forward_backward_ranks.py check the weights and losses against one process and
# that a failing rank raises on every rank.  The package is used from the source tree with
# BUILD_DIR's libraries.  Exit 77 (skip) without mpirun or libonnxgrad_mpi.
# usage: tests/mpi/test_python_mpi.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v mpirun >/dev/null && [ -e "$build/libonnxgrad_mpi.so" ] || { echo "no MPI: skipped"; exit 77; }
export PYTHONPATH="$root/python" ONNXGRAD_LIBRARY="$build/libonnxgrad.so"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
preload=""
export ASAN_OPTIONS=${ASAN_OPTIONS:-}
if grep -q '^OG_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0
fi
for n in 2 4; do
  for script in estimator_ranks.py forward_backward_ranks.py; do
    LD_PRELOAD="$preload" timeout 300 mpirun --oversubscribe --bind-to none -np $n \
      -x LD_PRELOAD -x ASAN_OPTIONS "${PYTHON:-python3}" "$root/tests/mpi/$script"
  done
done
