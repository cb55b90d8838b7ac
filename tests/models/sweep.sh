#!/usr/bin/env bash
# The long acceptance sweep (not in make test: hours on 2 cores): every model of
# tests/models/export.py with dynamic and static shapes, with and without constant folding,
# at opsets 13 and 17, some CNNs in training mode too, through tests/models/run.py.  Ends
# with a table of the errors measured and "N passed, N failed".
#   tests/models/sweep.sh [BUILD_DIR] [MODEL ...]
set -u
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
models=("$@")
if [ ${#models[@]} = 0 ]; then
  # every torchvision CNN dynamic and static, with and without constant folding, at opsets
  # 13 and 17
  for m in resnet18 mobilenet_v2 mobilenet_v3_small mobilenet_v3_large shufflenet_v2_x0_5 \
           efficientnet_b0 regnet_y_400mf regnet_x_400mf; do
    for s in dyn static; do for f in fold nofold; do for o in 13 17; do
      models+=("${m}_${s}_${f}_o${o}")
    done; done; done
  done
  # training mode (batch statistics, every parameter keeps its PyTorch name)
  for m in resnet18 mobilenet_v3_small efficientnet_b0 regnet_y_400mf; do
    models+=("${m}_dyn_nofold_train")
  done
  for m in vit bert distilbert gpt2; do
    for f in fold nofold; do for o in 13 17; do models+=("${m}_dyn_${f}_o${o}"); done; done
  done
fi
exec python3 "$here/run.py" "$build" "${models[@]}"
