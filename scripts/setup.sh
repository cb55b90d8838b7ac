#!/usr/bin/env bash
# Install what onnxgrad's build, tests, demo and benchmarks need, skipping what is there.
#   scripts/setup.sh            build + test dependencies
#   scripts/setup.sh --fuzz     also clang and its sanitizer runtimes, and atheris for the
#                               Python binding's fuzz target (make fuzz)
#   scripts/setup.sh --bench    the benchmarks' extras: bench/.venv, a virtual environment with the
#                               current PyTorch and torchvision from PyPI (the training peer)
# Pinned: the ONNX backend test data comes from the onnx Python package, version ONNX_VERSION.
set -euo pipefail

ONNX_VERSION=1.16.2
ORT_VERSION=1.19.2
NUMPY_SPEC='numpy>=1.26,<3'

# The bench environment's PyTorch: the PyPI release (CPU side: MKL, oneDNN).  Its Linux
# wheel imports only with its nvidia-* dependencies installed (several GB), so the full
# install it is; `pip install --no-deps torch` fails at import (libcufile.so.0).
TORCH_VERSION=2.15.0
TORCHVISION_VERSION=0.29.2

want_fuzz=0
want_bench=0
for a in "$@"; do
  case "$a" in
    --fuzz) want_fuzz=1 ;;
    --bench) want_bench=1 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# python3-torch (Debian's, for /usr/bin/python3) is the independent oracle of the gradient
# tests and exports the benchmark models; python3-torchvision gives the tests roi_align and
# exports the acceptance models of tests/models, with transformers (below, through pip).
# Open MPI (libopenmpi-dev, openmpi-bin: mpicc, mpirun) builds the optional MPI communicator
# and runs the data-parallel tests.
debs=(cmake make gcc pkg-config protobuf-c-compiler libprotobuf-c-dev libonnx-dev libopenblas-openmp-dev
      zlib1g-dev libdnnl-dev python3-torch python3-torchvision python3-pip python3-numpy
      libopenmpi-dev openmpi-bin strace e2fsprogs)
[ $want_fuzz = 1 ] && debs+=(clang libclang-rt-14-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if ! $PY - <<PYEOF 2>/dev/null
import numpy, onnx, onnxruntime, sklearn, skl2onnx, pytest, wheel, PIL, re2
assert onnx.__version__ == "$ONNX_VERSION", onnx.__version__
PYEOF
then
  echo "setup: installing Python packages (numpy, onnx==$ONNX_VERSION, onnxruntime, scikit-learn, skl2onnx, pytest, wheel, pillow, google-re2)"
  # pillow and google-re2: onnx's reference evaluator runs ImageDecoder and RegexFullMatch
  # with them (the integer type audit's only references for those two ops)
  $PY -m pip install -q --disable-pip-version-check "$NUMPY_SPEC" "onnx==$ONNX_VERSION" \
      "onnxruntime>=$ORT_VERSION" scikit-learn skl2onnx pytest wheel pillow google-re2
fi
if [ $want_bench = 1 ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  venv="$here/bench/.venv"
  if ! "$venv/bin/python" - <<PYEOF 2>/dev/null
import numpy, torch, torchvision
assert torch.__version__.split("+")[0] == "$TORCH_VERSION", torch.__version__
PYEOF
  then
    echo "setup: making bench/.venv with torch==$TORCH_VERSION and torchvision==$TORCHVISION_VERSION from PyPI"
    $PY -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$NUMPY_SPEC" \
        "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION"
  fi
fi
# transformers for Debian's Python (BERT, DistilBERT, GPT-2 with random weights, in
# tests/models): 4.44 is the last line that runs on Debian 12's torch 1.13.  Debian marks its
# Python as externally managed, hence --break-system-packages (user-level packages, no
# Debian file is touched).
TRANSFORMERS_VERSION=4.44.2
if ! /usr/bin/python3 -c "import transformers; assert transformers.__version__ == '$TRANSFORMERS_VERSION'" 2>/dev/null
then
  echo "setup: installing transformers==$TRANSFORMERS_VERSION for /usr/bin/python3"
  /usr/bin/python3 -m pip install -q --disable-pip-version-check --break-system-packages \
      "transformers==$TRANSFORMERS_VERSION"
fi
if [ $want_fuzz = 1 ] && ! $PY -c "import atheris" 2>/dev/null; then
  echo "setup: installing atheris (the Python fuzz target)"
  $PY -m pip install -q --disable-pip-version-check atheris
fi
echo "setup: ok"
