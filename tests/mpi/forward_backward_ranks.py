#!/usr/bin/env python3
"""Run by tests/mpi/test_python_mpi.sh under `mpirun -np N`: onnxcustom's
OrtGradientForwardBackwardOptimizer made data-parallel (onnxgrad.parallel.data_parallel) with
batch_size 12 / N trains to the weights and losses of the same estimator in one process with
batch_size 12 and the same numpy seed (which every rank also trains, alone, as the
reference): SGD with sample weights and validation; Nesterov momentum with the elastic
penalty; 3 rows only (one batch of everything, and with 4 ranks a rank without rows).  Every
rank but 0 seeds numpy otherwise: rank 0's state must win.  Then: an exception on the last
rank raises on every rank naming it; a rank whose weights drift fails the epoch-end hash
check on every rank; ranks given different data raise; OrtGradientOptimizer trains data-parallel too.
Exit 0 when every check holds on this rank."""
import sys

import numpy as np
from onnx import numpy_helper

from onnxgrad import OrtGradientForwardBackwardOptimizer, OrtGradientOptimizer
from onnxgrad.parallel import data_parallel, mpi_communicator

from mlp_model import mlp
from onnxgrad.utils.orttraining_helper import add_loss_output



def make(batch, **kw):
    kw.setdefault("learning_rate", {"eta0": 0.005})
    return OrtGradientForwardBackwardOptimizer(mlp(), max_iter=10, batch_size=batch,
                                               validation_every=2, **kw)


def rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def main():
    comm = mpi_communicator(timeout=60)
    n, rank = comm.size, comm.rank
    rng = np.random.default_rng(0)
    X = rng.normal(size=(130, 4)).astype(np.float32)  # 130 = 10 x 12 + 10
    y = np.stack([X[:, 0] + X[:, 1], X[:, 2] * 0.5, X[:, 3] - X[:, 0]], 1).astype(np.float32)
    w = rng.uniform(0.5, 2.0, size=130).astype(np.float32)
    Xv, yv = X[:30] + 0.1, y[:30]
    ok = True

    def fail(msg):
        nonlocal ok
        print("rank %d: %s" % (rank, msg), flush=True)
        ok = False

    cases = [
        ("SGD, sample weights, validation", {}, (X, y, w, Xv, yv)),
        ("Nesterov, elastic penalty", dict(
            learning_rate={"class_name": "SGDNesterov", "eta0": 0.002, "momentum": 0.9},
            learning_penalty={"l1": 1e-4, "l2": 1e-4}), (X, y, None, None, None)),
        ("3 rows", {}, (X[:3], y[:3], None, Xv[:3], yv[:3])),
    ]
    for name, kw, (a, b, sw, av, bv) in cases:
        np.random.seed(5)
        ref = make(12, **kw).fit(a, b, sample_weight=sw, X_val=av, y_val=bv)
        np.random.seed(5 + 1000 * rank)  # rank 0's generator must decide
        dp = data_parallel(make(12 // n, **kw), comm).fit(a, b, sample_weight=sw, X_val=av,
                                                          y_val=bv)
        steps = len(ref.train_losses_) * -(-a.shape[0] // 12)
        for got, want, wn in zip(dp.get_state(), ref.get_state(), dp.weights_to_train):
            if not rel(got, want) < 1e-6:
                fail("%s: weight %s differs by %.3g" % (name, wn, rel(got, want)))
            if rel(got, want) == 0 and n > 1 and wn == "W1" and a.shape[0] > 3:
                pass  # equal bits are possible, not required
        for got, want, what in ((dp.train_losses_, ref.train_losses_, "train"),
                                (dp.validation_losses_, ref.validation_losses_, "validation")):
            if (got is None) != (want is None):
                fail("%s: %s losses %r, one process %r" % (name, what, got, want))
            elif got is not None and (len(got) != len(want) or not rel(got, want) < 1e-6):
                fail("%s: %s losses %r differ from one process's %r" % (name, what, got, want))
        moved = rel(dp.get_state()[0], numpy_helper.to_array(mlp().graph.initializer[0]))
        if not moved > 1e-3:
            fail("%s: the weights did not move (%g)" % (name, moved))
        if rank == 0 and ok:
            print("%d ranks, %s: %d steps, weights and losses equal one process's (1e-6)"
                  % (n, name, steps), flush=True)

    # an exception on the last rank, in its third step: every rank raises naming it
    est = data_parallel(make(12 // n), comm)
    if rank == n - 1:
        calls = [0]
        grad = est.learning_loss.loss_gradient

        def broken(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 3:
                raise ValueError("cannot read shard %d" % rank)
            return grad(*args, **kwargs)

        est.learning_loss.loss_gradient = broken
    try:
        est.fit(X, y)
        fail("an exception on one rank raised nothing")
    except RuntimeError as e:
        if "rank %d: ValueError: cannot read shard %d" % (n - 1, n - 1) not in str(e):
            fail("unexpected message: %s" % e)
        elif rank == 0:
            print("an exception on rank %d raised on every rank: %s" % (n - 1, e), flush=True)

    # weights that drift on rank 1: the hash check at the end of the first epoch
    if n > 1:
        est = data_parallel(make(12 // n), comm)
        if rank == 1:
            upd = est.learning_rate.update_weights

            def drift(i, device, state, *args):
                upd(i, device, state, *args)
                np.asarray(state).reshape(-1)[0] += 1e-3
                return state

            est.learning_rate.update_weights = drift
        try:
            est.fit(X, y)
            fail("ranks that diverged raised nothing")
        except RuntimeError as e:
            if "rank 1: RuntimeError: at the end of epoch 0" not in str(e) or \
                    "diverged" not in str(e):
                fail("unexpected message: %s" % e)
            elif rank == 0:
                print("diverged weights raised on every rank: %s" % e, flush=True)
        try:  # different data on the last rank
            data_parallel(make(12 // n), comm).fit(X[:129] if rank == n - 1 else X,
                                                   y[:129] if rank == n - 1 else y)
            fail("different data raised nothing")
        except ValueError as e:
            if "the ranks passed different data" not in str(e):
                fail("unexpected message: %s" % e)

    # OrtGradientOptimizer (a model with a loss output summed over rows), validation
    lm = add_loss_output(mlp())
    wn = ["W1", "B1", "W2", "B2"]

    def make_lo(batch):
        return OrtGradientOptimizer(lm, wn, max_iter=10, batch_size=batch, learning_rate=0.005,
                                    validation_every=2)

    np.random.seed(7)
    ref = make_lo(12).fit(X, y, X_val=Xv, y_val=yv)
    np.random.seed(7 + 1000 * rank)
    dp = data_parallel(make_lo(12 // n), comm).fit(X, y, X_val=Xv, y_val=yv)
    for k in wn:
        if not rel(dp.get_state()[k], ref.get_state()[k]) < 1e-6:
            fail("OrtGradientOptimizer: weight %s differs by %.3g" % (
                k, rel(dp.get_state()[k], ref.get_state()[k])))
    for got, want, what in ((dp.train_losses_, ref.train_losses_, "train"),
                            (dp.validation_losses_, ref.validation_losses_, "validation")):
        if len(got) != len(want) or not rel(got, want) < 1e-6:
            fail("OrtGradientOptimizer: %s losses %r differ from one process's %r" % (
                what, got, want))
    if rank == 0 and ok:
        print("%d ranks, OrtGradientOptimizer: weights and losses equal one process's (1e-6)"
              % n, flush=True)

    try:  # a loop that does not reduce: refused, not silently local
        data_parallel(object(), comm)
        fail("data_parallel took an object")
    except TypeError as e:
        if "OrtGradientForwardBackwardOptimizer" not in str(e):
            fail("unexpected message: %s" % e)
    if rank == 0 and ok:
        print("%d ranks: OrtGradientForwardBackwardOptimizer data-parallel checks hold" % n)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
