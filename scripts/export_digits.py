#!/usr/bin/env python3
"""Export scikit-learn's digits (1797 8x8 images of 0-9) for onnxgrad's training tests.

    python3 scripts/export_digits.py OUT_DIR

Writes, with a seeded stratified 80/20 train/test split:
  OUT_DIR/digits_train.npz, OUT_DIR/digits_test.npz   np.savez_compressed, arrays
      X: float32 [N, 64], pixels scaled to [0, 1] (divided by 16)
      y: int64 [N], labels 0..9
  OUT_DIR/digits_train.csv   the training set as CSV: header pixel0..pixel63,target
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python3 scripts/export_digits.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    digits = load_digits()
    X = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=SEED, stratify=y)
    np.savez_compressed(os.path.join(out, "digits_train.npz"), X=X_tr, y=y_tr)
    np.savez_compressed(os.path.join(out, "digits_test.npz"), X=X_te, y=y_te)
    header = ",".join([f"pixel{i}" for i in range(64)] + ["target"])
    with open(os.path.join(out, "digits_train.csv"), "w", newline="") as f:
        f.write(header + "\n")
        for row, label in zip(X_tr, y_tr):
            # repr of a float32 round-trips exactly: the CSV and the .npz hold the same values
            f.write(",".join(repr(float(v)) for v in row) + f",{int(label)}\n")
    print(f"digits: {len(y_tr)} train, {len(y_te)} test samples -> {out}")


if __name__ == "__main__":
    main()
