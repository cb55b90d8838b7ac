#!/usr/bin/env bash
# Seeds for og_fuzz_data: the dataset fixtures of tests/data/train, each behind the byte
# that makes the target read it in its own format (see tests/fuzz/fuzz_data.c).
set -euo pipefail
out=$1
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../data/train" && pwd)
for f in "$here"/*.csv "$here"/*.npy "$here"/*.npz; do
  [ -f "$f" ] || continue
  case "$f" in
    *.csv) sel='\000' ;;
    *.npy) sel='\001' ;;
    *.npz) sel='\002' ;;
  esac
  seed="$out/$(basename "$f").seed"
  [ -f "$seed" ] || { printf "$sel"; cat "$f"; } >"$seed"
done
