#!/usr/bin/env python3
"""Run by tests/mpi/test_python_mpi.sh under `mpirun -np N`: onnxgrad.Trainer
made data-parallel (onnxgrad.parallel.data_parallel) with batch_size 12 / N trains to the
weights and losses of the same estimator in one process with batch_size 12 (which every
rank also trains, alone, as the reference); then a rank whose data hold a NaN makes fit
raise on every rank, naming it.  Exit 0 when every check holds on this rank."""
import sys

import numpy as np

from onnxgrad import Trainer
from onnxgrad.parallel import data_parallel, mpi_communicator

from mlp_model import mlp


def main():
    comm = mpi_communicator(timeout=60)
    n = comm.size
    rng = np.random.default_rng(0)
    X = rng.normal(size=(130, 4)).astype(np.float32)  # 130 = 10 x 12 + 10
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 0.5)
    w = rng.uniform(0.5, 2.0, size=130).astype(np.float32)
    Xv, yv = X[:30] + 0.1, y[:30]

    def make(batch, **kw):
        return Trainer(
            mlp(), max_iter=5, batch_size=batch, training_optimizer_name="Adam",
            learning_rate=0.01, learning_loss="cross_entropy", random_state=4, **kw)

    ref = make(12).fit(X, y, sample_weight=w, X_val=Xv, y_val=yv)
    dp = data_parallel(make(12 // n), comm, bucket_mb=0.001).fit(X, y, sample_weight=w,
                                                                   X_val=Xv, y_val=yv)
    ok = True
    for a, b, name in zip(dp.get_state(), ref.get_state(), dp.weights_to_train_):
        d = np.linalg.norm(a - b) / np.linalg.norm(b)
        if not d < 1e-6:
            print("rank %d: weight %s differs by %.3g" % (comm.rank, name, d))
            ok = False
    for got, want, what in ((dp.train_losses_, ref.train_losses_, "train"),
                            (dp.validation_losses_, ref.validation_losses_, "validation")):
        d = np.max(np.abs(np.array(got) - want) / np.abs(want))
        if not d < 1e-6:
            print("rank %d: %s losses differ by %.3g" % (comm.rank, what, d))
            ok = False
    # fit again: a new trainer, whose buckets take the shared memory the first one gave back
    # (or a new window): the same run, the same weights bit for bit
    first = [a.copy() for a in dp.get_state()]
    dp.fit(X, y, sample_weight=w, X_val=Xv, y_val=yv)
    if not all(np.array_equal(a, b) for a, b in zip(dp.get_state(), first)):
        print("rank %d: a second fit gave other weights" % comm.rank)
        ok = False
    Xn = X.copy()
    Xn[129, 1] = np.nan  # the last sample, in the last rank's part of the last batch
    try:
        data_parallel(make(12 // n, shuffle=False), comm).fit(Xn, y)
        print("rank %d: a NaN on one rank raised nothing" % comm.rank)
        ok = False
    except RuntimeError as e:
        if "rank %d:" % (n - 1) not in str(e):
            print("rank %d: unexpected message: %s" % (comm.rank, e))
            ok = False
        elif comm.rank == 0:
            print("a NaN on rank %d raised on every rank: %s" % (n - 1, e))
    try:  # a loop that does not reduce its gradients: refused, not silently local
        data_parallel(object(), comm)
        print("rank %d: data_parallel took an object" % comm.rank)
        ok = False
    except TypeError as e:
        if "onnxgrad.Trainer" not in str(e):
            print("rank %d: unexpected message: %s" % (comm.rank, e))
            ok = False
    if comm.rank == 0 and ok:
        print("%d ranks: weights and losses equal one process's (1e-6)" % n)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
