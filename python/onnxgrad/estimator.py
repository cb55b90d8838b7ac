"""Trainer: a scikit-learn style estimator that trains an ONNX model with onnxgrad's C trainer
(og_model_add_loss, og_trainer_*): Adam, AdamW, Adagrad or SGD, every loss of the C library,
the whole fit loop in C.

    from onnxgrad import Trainer

    est = Trainer(onx, max_iter=20, batch_size=16, learning_rate=1e-2)
    est.fit(X, y, X_val=Xv, y_val=yv)
    est.train_losses_, est.validation_losses_, est.predict(X), est.get_trained_onnx()

The model given is the prediction model (no loss): the loss (``learning_loss``) and the
penalty (``learning_penalty``) are added to it as ONNX nodes, the optimizer
(``training_optimizer_name``, ``learning_rate``) runs in C.  For onnxcustom's estimator, step
by step as onnxcustom trained, see :class:`onnxgrad.OrtGradientForwardBackwardOptimizer`.
"""
from __future__ import annotations

import inspect
import logging
import math
import sys
import time
from ctypes import byref, c_double, c_void_p
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _lib as L
from . import parallel as _parallel
from .gradient import _make_log_callback, _parse_providers

from .training.excs import ConvergenceError
from .training.sgd_learning_penalty import ElasticLearningPenalty

__all__ = ["Trainer"]

_SCHEDULES = {"constant": 0, "optimal": 1, "invscaling": 2, "linear": 3, "cosine": 4, "step": 5}
_OPTIMIZERS = {"sgdoptimizer": 0, "sgd": 0, "adam": 1, "adamoptimizer": 1, "adamw": 2,
               "adamwoptimizer": 2, "adagrad": 3, "adagradoptimizer": 3}
_LOSSES = {"square_error": 0, "squared_error": 0, "mse": 0, "absolute_error": 1, "mae": 1,
           "elastic": 2, "huber": 3, "log": 4, "neg_log": 4, "log_loss": 4,
           "cross_entropy": 5, "nll": 6, "negative_log_likelihood": 6}
_CLASSIFICATION = (4, 5, 6)
_OPTIMIZER_FIELDS = [f for f, _ in L.og_optimizer_options._fields_ if f != "kind"]


class _Handle:
    """Owns a C object freed by `free` (a trainer, a dataset) and the models it reads,
    freed after it by the same finalizer (so that the garbage collector's order of
    finalization cannot free a model first)."""

    __slots__ = ("ptr", "free", "models", "log_cb")

    def __init__(self, ptr: int, free: Any, models: Sequence[int] = (), log_cb: Any = None
                 ) -> None:
        self.ptr = ptr
        self.free = free
        self.models = list(models)
        self.log_cb = log_cb

    def __del__(self) -> None:
        p = getattr(self, "ptr", None)
        if p:
            self.ptr = None
            self.free(p)
        for m in getattr(self, "models", ()):
            L.og_model_free(m)
        self.models = []


class _Progress:
    """A one-line progress bar on stderr: epochs, losses, learning rate, time left."""

    def __init__(self, epochs: int, stream: Any = None) -> None:
        self.epochs = max(1, epochs)
        self.stream = stream or sys.stderr
        self.width = 24

    def update(self, epoch: int, train: float, val: float, lr: float, left: float) -> None:
        done = min(self.epochs, epoch + 1)
        fill = int(self.width * done / self.epochs)
        msg = "\r[%s%s] %d/%d loss=%.4g" % (
            "#" * fill, "." * (self.width - fill), done, self.epochs, train)
        if not math.isnan(val):
            msg += " val=%.4g" % val
        msg += " lr=%.3g" % lr
        if left == left and left > 0:
            msg += " eta %ds" % int(left + 0.5)
        self.stream.write(msg)
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _as_float32(a: Any, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "fiub":
        raise ValueError("%s must be numeric, got dtype %s" % (what, a.dtype))
    return np.ascontiguousarray(a, dtype=np.float32)


class Trainer:
    """Trains an ONNX model by mini-batch gradient descent with onnxgrad's C trainer.

    :param model_onnx: the model to train (``onnx.ModelProto``, bytes or a path), without
        a loss: its first output (or ``output_name``) is compared to the targets
    :param weights_to_train: initializers to train; None: every float initializer
    :param loss_output_name: name of the loss output added to the model
    :param max_iter: epochs
    :param training_optimizer_name: ``'SGDOptimizer'`` (or ``'SGD'``), ``'Adam'``,
        ``'AdamW'``, ``'Adagrad'``
    :param batch_size: samples per step
    :param learning_rate: ``'SGD'`` (scikit-learn's invscaling schedule: lr 0.01,
        power_t 0.25), ``'SGDNesterov'`` (the same with Nesterov's momentum 0.9), a float
        (constant learning rate), or a dict of og_optimizer_options fields (``lr``,
        ``momentum``, ``nesterov``, ``beta1``, ``beta2``, ``eps``, ``weight_decay``,
        ``clip_norm``, ``schedule`` (``'constant'``, ``'optimal'``, ``'invscaling'``,
        ``'linear'``, ``'cosine'``, ``'step'``), ``alpha``,
        ``power_t``, ``warmup_steps``, ``total_steps``, ``min_lr``, ``step_size``,
        ``gamma``, ...).  With Adam, AdamW and Adagrad the string ``'SGD'`` means their
        own (PyTorch's) defaults.
    :param device: ``'cpu'`` (a GPU is refused until onnxgrad has a CUDA backend)
    :param warm_start: False: every fit starts from the model's initializers; True: fit
        continues from the previous fit's weights and optimizer state
    :param verbose: 0 silent; 1 a progress bar on stderr, updated every epoch; 2 also
        every batch
    :param validation_every: validation losses recorded every ``validation_every`` epochs
        (a fraction < 1: that fraction of ``max_iter``)
    :param learning_loss: ``'square_error'``, ``'absolute_error'``, ``'elastic'``,
        ``'huber'``, ``'log'`` (binary, on logits), ``'cross_entropy'`` (softmax, on
        logits), ``'nll'`` (on log-probabilities), or a dict ``{"kind": ..., "l1_ratio":
        ..., "delta": ..., "reduction": "mean" | "sum"}``
    :param enable_logging: log every epoch (and the library's messages) to the logger
        ``"onnxgrad"``
    :param weight_name: name of the sample-weight input added when ``fit`` gets
        ``sample_weight`` (default ``"sample_weight"``)
    :param learning_penalty: None, ``'elastic'`` (l1 = l2 = 0.5), an
        :class:`~onnxgrad.training.sgd_learning_penalty.ElasticLearningPenalty`, or a dict
        ``{"l1": ..., "l2": ...}``
    :param shuffle: shuffle the samples every epoch
    :param random_state: seed of the shuffles
    :param threads: worker threads (0: one per core; the default, 1, suits small models,
        whose steps last microseconds: waking threads costs more than they save)
    :param output_name: the model output the loss compares (None: the first)

    Attributes after fit: ``train_losses_`` (the mean training loss of every epoch),
    ``validation_losses_`` (None without validation data), ``n_iter_``, ``classes_`` (for
    classification losses), ``input_names_``, ``weights_to_train_``.
    """

    def __init__(self, model_onnx: Any, weights_to_train: Optional[Sequence[str]] = None,
                 loss_output_name: str = "loss", max_iter: int = 100,
                 training_optimizer_name: str = "SGDOptimizer", batch_size: int = 10,
                 learning_rate: Any = "SGD", device: Any = "cpu", warm_start: bool = False,
                 verbose: int = 0, validation_every: float = 0.1,
                 learning_loss: Any = "square_error", enable_logging: bool = False,
                 weight_name: Optional[str] = None, learning_penalty: Any = None,
                 shuffle: bool = True, random_state: int = 0, threads: int = 1,
                 output_name: Optional[str] = None) -> None:
        self.model_onnx = model_onnx
        self.weights_to_train = weights_to_train  # as given: sklearn.base.clone checks it
        self.loss_output_name = loss_output_name
        self.max_iter = max_iter
        self.training_optimizer_name = training_optimizer_name
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.device = device
        self.warm_start = warm_start
        self.verbose = verbose
        self.validation_every = validation_every
        self.learning_loss = learning_loss
        self.enable_logging = enable_logging
        self.weight_name = weight_name
        self.learning_penalty = learning_penalty
        self.shuffle = shuffle
        self.random_state = random_state
        self.threads = threads
        self.output_name = output_name

    # -- scikit-learn's parameter protocol --------------------------------------------------

    @classmethod
    def _get_param_names(cls) -> List[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The constructor's parameters (scikit-learn's protocol: clone works)."""
        return {k: getattr(self, k) for k in self._get_param_names()}

    def set_params(self, **params: Any) -> "Trainer":
        names = set(self._get_param_names())
        for k, v in params.items():
            if k not in names:
                raise ValueError("Invalid parameter %r for %s." % (k, self.__class__.__name__))
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        defaults = {k: p.default for k, p in inspect.signature(self.__class__.__init__)
                    .parameters.items()}
        parts = []
        for k in self._get_param_names():
            v = getattr(self, k)
            d = defaults.get(k, inspect.Parameter.empty)
            if d is not inspect.Parameter.empty and _same(v, d):
                continue
            r = repr(v)
            parts.append("%s=%s" % (k, r if len(r) <= 50 and "\n" not in r else r[:10] + "..."))
        return "%s(%s)" % (self.__class__.__name__, ", ".join(parts))

    # -- option translation -----------------------------------------------------------------

    def _loss_kind(self) -> Tuple[int, Dict[str, Any]]:
        spec = self.learning_loss
        if isinstance(spec, str):
            spec = {"kind": spec}
        if not isinstance(spec, dict) or "kind" not in spec:
            raise ValueError("learning_loss must be a name (%s) or a dict with a 'kind', got %r"
                             % (", ".join(sorted(_LOSSES)), self.learning_loss))
        kind = _LOSSES.get(str(spec["kind"]).lower())
        if kind is None:
            raise ValueError("Unknown learning_loss %r (%s)." % (spec["kind"],
                                                                 ", ".join(sorted(_LOSSES))))
        extra = {k: v for k, v in spec.items() if k != "kind"}
        unknown = set(extra) - {"l1_ratio", "delta", "reduction"}
        if unknown:
            raise ValueError("Unknown learning_loss options %s" % sorted(unknown))
        return kind, extra

    def _loss_options(self, sample_weights: bool) -> Tuple[L.og_loss_options, list]:
        kind, extra = self._loss_kind()
        o = L.og_loss_options()
        L.og_loss_options_init(byref(o), kind)
        keep: list = []
        if "l1_ratio" in extra:
            o.l1_ratio = float(extra["l1_ratio"])
        if "delta" in extra:
            o.delta = float(extra["delta"])
        if "reduction" in extra:
            red = str(extra["reduction"]).lower()
            if red not in ("mean", "sum"):
                raise ValueError("reduction must be 'mean' or 'sum', got %r" % red)
            o.reduction = 1 if red == "sum" else 0
        pen = self.learning_penalty
        if isinstance(pen, str):
            if pen.lower() != "elastic":
                raise ValueError("Unknown learning_penalty %r ('elastic')." % pen)
            pen = ElasticLearningPenalty()
        if isinstance(pen, ElasticLearningPenalty):
            pen = {"l1": pen.l1, "l2": pen.l2}
        elif type(pen).__name__ == "NoLearningPenalty":
            pen = None
        if pen is not None:
            if not isinstance(pen, dict) or set(pen) - {"l1", "l2"}:
                raise ValueError("learning_penalty must be None, 'elastic', an "
                                 "ElasticLearningPenalty or {'l1': .., 'l2': ..}, got %r" % (pen,))
            o.l1, o.l2 = float(pen.get("l1", 0.0)), float(pen.get("l2", 0.0))
        for field, value in (("output", self.output_name), ("loss_name", self.loss_output_name),
                             ("target_name", self._target_name)):
            if value is not None:
                keep.append(value.encode())
                setattr(o, field, keep[-1])
        if sample_weights:
            keep.append((self.weight_name or "sample_weight").encode())
            o.sample_weight_name = keep[-1]
        return o, keep

    def _optimizer_options(self) -> L.og_optimizer_options:
        name = str(self.training_optimizer_name).lower()
        kind = _OPTIMIZERS.get(name)
        if kind is None:
            raise ValueError("Unknown training_optimizer_name %r (SGDOptimizer, Adam, AdamW, "
                             "Adagrad)." % self.training_optimizer_name)
        o = L.og_optimizer_options()
        L.og_optimizer_options_init(byref(o), kind)
        lr = self.learning_rate
        if isinstance(lr, str):
            key = lr.lower()
            sgd = {"lr": 0.01, "schedule": "invscaling", "power_t": 0.25}
            if key in ("sgd", "sgdregressor"):
                lr = sgd if kind == 0 else {}
            elif key in ("sgdnesterov", "nesterov"):
                lr = dict(sgd, momentum=0.9, nesterov=True) if kind == 0 else {}
            else:
                raise ValueError("Unknown learning_rate %r (SGD, SGDNesterov, a float or a "
                                 "dict)." % self.learning_rate)
        if isinstance(lr, (int, float)) and not isinstance(lr, bool):
            lr = {"lr": float(lr)}
        if not isinstance(lr, dict):
            raise ValueError("Unexpected learning_rate %r: Trainer takes a float, 'SGD', "
                             "'SGDNesterov' or a dict of og_optimizer_options fields; "
                             "onnxcustom's learning rate objects go with "
                             "OrtGradientForwardBackwardOptimizer." % (self.learning_rate,))
        for k, v in lr.items():
            if k not in _OPTIMIZER_FIELDS:
                raise ValueError("Unknown optimizer option %r (%s)." % (
                    k, ", ".join(_OPTIMIZER_FIELDS)))
            if k == "schedule" and isinstance(v, str):
                if v.lower() not in _SCHEDULES:
                    raise ValueError("Unknown learning rate schedule %r (%s)." % (
                        v, ", ".join(_SCHEDULES)))
                v = _SCHEDULES[v.lower()]
            if k == "nesterov":
                v = 1 if v else 0
            setattr(o, k, v)
        return o

    # -- fitting ----------------------------------------------------------------------------

    _target_name = "label"

    def _logger(self) -> Optional[logging.Logger]:
        return logging.getLogger("onnxgrad") if self.enable_logging else None

    def _prepare(self, sample_weights: bool) -> None:
        """Model, loss model and trainer (new, unless warm-starting the same configuration)."""
        device, _, _ = _parse_providers(self.device, 0)
        if device != L.OG_DEVICE_CPU:
            raise RuntimeError("device %r is not available: onnxgrad trains on the CPU only so far"
                               % (self.device,))
        if not L.has_trainer():
            raise RuntimeError("this libonnxgrad build has no training API (og_trainer_*)")
        optim = self._optimizer_options()
        config = (repr(self.learning_loss), repr(self.learning_penalty), sample_weights,
                  self.weight_name, self.output_name, self.loss_output_name,
                  repr(self.weights_to_train), bytes(optim), self.threads)
        trainer = getattr(self, "_trainer", None)
        if self.warm_start and trainer is not None and self._config == config:
            return
        previous = self.get_state() if self.warm_start and self._has_weights() else None
        model = L.Model.load(self.model_onnx)
        base_inputs = L.model_inputs(model.ptr)
        if not base_inputs:
            raise ValueError("the model has no input to bind the features to")
        names = {n for n, _ in base_inputs} | set(L.model_outputs(model.ptr))
        target = "label"
        while target in names:
            target = "_" + target
        self._target_name = target
        lo, keep = self._loss_options(sample_weights)
        loss_ptr = c_void_p()
        L.check(L.og_model_add_loss(model.ptr, byref(lo), byref(loss_ptr)))
        loss_model = L.Model(loss_ptr.value)
        del keep
        logger = self._logger()
        self._log_cb = _make_log_callback(logger) if logger is not None else None
        topts = L.og_trainer_options()
        topts.threads = int(self.threads)
        topts.seed = int(self.random_state or 0)
        # None means the model's float initializers, named explicitly: left to the trainer,
        # it would also train the constants the loss added (Huber's delta, ...)
        weights = self.weights_to_train
        if weights is None:
            weights = [L.decode(L.og_model_initializer_name(model.ptr, i))
                       for i in range(L.og_model_initializer_count(model.ptr))
                       if L.og_tensor_dtype(L.og_model_initializer(model.ptr, i))
                       in (1, 10, 11)]  # float, float16, double
        keep_names = L.names_array(weights)
        topts.weights, topts.n_weights = keep_names, len(weights)
        if self._log_cb is not None:
            topts.log = self._log_cb
        tptr = c_void_p()
        L.check(L.og_trainer_create(loss_model.ptr, byref(optim), byref(topts), byref(tptr)))
        self._trainer = _Handle(tptr.value, L.og_trainer_free,
                                (loss_model.release(), model.release()), self._log_cb)
        _parallel.attach(self, self._trainer.ptr)  # data-parallel when asked (parallel.py)
        loss_model_ptr = self._trainer.models[0]
        self._config = config
        self._session = None
        self._feature_input = base_inputs[0][0]
        self.input_names_ = [n for n, _ in base_inputs]
        t = self._trainer.ptr
        self.weights_to_train_ = [L.decode(L.og_trainer_weight_name(t, i))
                                  for i in range(L.og_trainer_weight_count(t))]
        # the target's declared rank, to reshape y
        self._target_rank = -1
        for i, (n, _) in enumerate(L.model_inputs(loss_model_ptr)):
            if n == target:
                self._target_rank = L.model_io_info(loss_model_ptr, i)[1]
        if previous is not None:
            self.set_state(previous)

    def _targets(self, y: Any, fitting: bool) -> np.ndarray:
        kind, _ = self._loss_kind()
        y = np.asarray(y)
        if kind in (5, 6):  # class indices
            if fitting:
                self.classes_ = np.unique(y)
            idx = np.searchsorted(self.classes_, y)
            idx = np.clip(idx, 0, len(self.classes_) - 1)
            if not np.all(self.classes_[idx] == y):
                raise ValueError("y holds labels not seen by fit: %r" % (
                    sorted(set(np.asarray(y).ravel().tolist()) - set(self.classes_.tolist())),))
            y = idx.astype(np.int64)
        elif kind == 4:  # binary labels as 0/1 floats
            if fitting:
                self.classes_ = np.unique(y)
                if len(self.classes_) > 2:
                    raise ValueError("the 'log' loss is binary; y has %d classes"
                                     % len(self.classes_))
            y = (y == self.classes_[-1]).astype(np.float32) if len(self.classes_) == 2 else \
                np.zeros(y.shape, np.float32)
        else:
            y = _as_float32(y, "y")
        rank = getattr(self, "_target_rank", -1)
        if rank == 2 and y.ndim == 1:
            y = y.reshape(-1, 1)
        elif rank == 1 and y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape(-1)
        return np.ascontiguousarray(y)

    def _has_weights(self) -> bool:
        return getattr(self, "_trainer", None) is not None or hasattr(self, "_trained_state")

    def fit(self, X: Any, y: Any, sample_weight: Any = None, X_val: Any = None,
            y_val: Any = None) -> "Trainer":
        """Train the model.

        :param X: features, [N, ...] (converted to float32)
        :param y: targets: values for regression losses, labels for classification ones
        :param sample_weight: a weight per sample, or None
        :param X_val: validation features (the validation loss is computed every epoch)
        :param y_val: validation targets
        :return: self
        """
        X = _as_float32(X, "X")
        if X.ndim < 1 or X.shape[0] == 0:
            raise ValueError("X must hold at least one sample, got shape %s" % (X.shape,))
        w = None
        if sample_weight is not None:
            w = _as_float32(sample_weight, "sample_weight").reshape(-1)
            if w.shape[0] != X.shape[0]:
                raise ValueError("sample_weight has %d values for %d samples" % (
                    w.shape[0], X.shape[0]))
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val go together")
        self._prepare(w is not None)
        y = self._targets(y, fitting=not (self.warm_start and hasattr(self, "classes_")))
        if y.shape[0] != X.shape[0]:
            raise ValueError("y has %d samples, X has %d" % (y.shape[0], X.shape[0]))
        val = None
        if X_val is not None:
            Xv = _as_float32(X_val, "X_val")
            yv = self._targets(y_val, fitting=False)
            if yv.shape[0] != Xv.shape[0]:
                raise ValueError("y_val has %d samples, X_val has %d" % (yv.shape[0],
                                                                         Xv.shape[0]))
            val = (Xv, yv)
        every = self.validation_every
        every = max(1, int(self.max_iter * every)) if every < 1 else max(1, int(every))
        train_losses: List[float] = []
        val_losses: List[float] = []
        logger = self._logger()
        bar = _Progress(self.max_iter) if self.verbose else None
        state: Dict[str, Any] = {"error": None, "t0": time.perf_counter()}

        def on_event(e: Any) -> int:
            # e.epoch counts the trainer's epochs (a warm start continues them): this fit's
            # epoch is len(train_losses)
            try:
                if e.epoch_end:
                    train_losses.append(float(e.train_loss))
                    if val is not None and len(train_losses) % every == 0:
                        val_losses.append(float(e.val_loss))
                    if logger is not None:
                        logger.info("[Trainer.fit] epoch %d "
                                    "loss=%g val_loss=%g lr=%g", len(train_losses),
                                    e.train_loss, e.val_loss, self._lr())
                if bar is not None and (e.epoch_end or self.verbose > 1):
                    bar.update(len(train_losses) - (1 if e.epoch_end else 0),
                               e.train_loss if e.epoch_end else e.loss,
                               e.val_loss if e.epoch_end else float("nan"), self._lr(),
                               e.seconds_left)
                return 0
            except BaseException as exc:  # noqa: BLE001 (KeyboardInterrupt included: it
                # cannot cross the C frames; fit stops and raises it)
                state["error"] = exc
                return 1

        try:
            self._fit_c(X, y, w, val, on_event)
        finally:
            if bar is not None:
                bar.close()
        if state["error"] is not None:
            raise state["error"]
        self.train_losses_ = train_losses
        self.validation_losses_ = val_losses if val is not None else None
        self.n_iter_ = len(train_losses)
        self._session = None
        return self

    def _lr(self) -> float:
        return float(L.og_trainer_lr(self._trainer.ptr))

    def _check_step(self, st: int) -> None:
        if not st:
            return
        exc = L.error(st)
        text = str(exc).lower()
        if st == L.OG_ERR_RUNTIME and ("nan" in text or "inf" in text):
            conv = ConvergenceError(str(exc) + " (the learning rate may be too large)")
            conv.status, conv.status_name = exc.status, exc.status_name  # type: ignore
            raise conv
        raise exc

    @staticmethod
    def _dataset(x: np.ndarray, y: np.ndarray, w: Optional[np.ndarray]) -> _Handle:
        tx, kx = L.wrap(x)
        ty, ky = L.wrap(y)
        tw, kw = L.wrap(w) if w is not None else (None, None)
        out = c_void_p()
        try:
            st = L.og_dataset_from_tensors(tx, ty, tw, None, byref(out))
        finally:
            for t in (tx, ty, tw):
                if t:
                    L.og_tensor_free(t)
        L.check(st)
        return _Handle(out.value, L.og_dataset_free)

    def _fit_c(self, X: np.ndarray, y: np.ndarray, w: Optional[np.ndarray], val: Any,
               on_event: Any) -> None:
        """og_trainer_fit: the C fit loop, with a callback for losses and progress."""
        data = self._dataset(X, y, w)
        vdata = self._dataset(val[0], val[1], None) if val is not None else None
        fo = L.og_fit_options()
        fo.epochs = int(self.max_iter)
        fo.batch_size = int(self.batch_size)
        fo.no_shuffle = 0 if self.shuffle else 1
        fo.validation = vdata.ptr if vdata is not None else None
        keep = [self._feature_input.encode(), self._target_name.encode(),
                (self.weight_name or "sample_weight").encode()]
        fo.feature_input, fo.target_input = keep[0], keep[1]
        if w is not None:
            fo.weight_input = keep[2]
        fo.callback = L.og_fit_callback(lambda user, ev: on_event(ev.contents))
        st = L.og_trainer_fit(self._trainer.ptr, data.ptr, byref(fo))
        self._check_step(st)

    def _run(self, fn: Any, x: np.ndarray, y: np.ndarray, w: Optional[np.ndarray]) -> float:
        """og_trainer_step or og_trainer_evaluate on one batch: its loss."""
        names = [self._feature_input, self._target_name]
        values = [x, y]
        if w is not None:
            names.append(self.weight_name or "sample_weight")
            values.append(w)
        tensors = (c_void_p * (len(values) + 1))()
        keep = []
        loss = c_double()
        try:
            for i, v in enumerate(values):
                keep.append(L.wrap_to(np.ascontiguousarray(v), None, tensors, i))
            st = fn(self._trainer.ptr, L.names_array(names), tensors, len(values), byref(loss))
        finally:
            for i in range(len(values)):
                if tensors[i]:
                    L.og_tensor_free(tensors[i])
        self._check_step(st)
        return loss.value

    def _evaluate(self, X: np.ndarray, y: np.ndarray, w: Optional[np.ndarray]) -> float:
        """The loss (with penalty) on a dataset, in batches, weights unchanged."""
        bs = max(1, int(self.batch_size))
        total = weight = 0.0
        for s in range(0, X.shape[0], bs):
            wb = w[s:s + bs] if w is not None else None
            loss = self._run(L.og_trainer_evaluate, X[s:s + bs], y[s:s + bs], wb)
            bw = float(wb.sum()) if wb is not None else float(min(bs, X.shape[0] - s))
            total += loss * bw
            weight += bw
        return total / weight

    # -- state ------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if getattr(self, "_trainer", None) is None and not hasattr(self, "_trained_bytes"):
            raise AttributeError("Method fit must be called before.")

    def get_state(self) -> List[np.ndarray]:
        """The trained weights (copies), in ``weights_to_train_`` order."""
        self._check_fitted()
        if getattr(self, "_trainer", None) is None:
            return [v.copy() for v in self._trained_state]
        res = []
        for name in self.weights_to_train_:
            t = c_void_p()
            L.check(L.og_trainer_get_weight(self._trainer.ptr, name.encode(), byref(t)))
            res.append(L.copy_array(t.value))
        return res

    def set_state(self, state: Sequence[Any]) -> None:
        """Replace the trained weights (same order, dtypes and shapes as get_state)."""
        self._check_fitted()
        if len(state) != len(self.weights_to_train_):
            raise ValueError("state holds %d arrays for %d weights" % (
                len(state), len(self.weights_to_train_)))
        if getattr(self, "_trainer", None) is None:
            self._trained_state = [np.array(v, copy=True) for v in state]
            self._trained_bytes = None
        else:
            for name, v in zip(self.weights_to_train_, state):
                t, kept = L.wrap(v)
                try:
                    L.check(L.og_trainer_set_weight(self._trainer.ptr, name.encode(), t))
                finally:
                    L.og_tensor_free(t)
        self._session = None

    def _trained_model(self, model: Any = None) -> L.Model:
        """The trained model (og_trainer_export), or `model` with the trained weights."""
        self._check_fitted()
        if getattr(self, "_trainer", None) is None:
            if model is not None or self._trained_bytes is None:
                self._rebuild_trainer()
            else:
                return L.Model.load(self._trained_bytes)
        base = L.Model.load(model) if model is not None else None
        out = c_void_p()
        L.check(L.og_trainer_export(self._trainer.ptr, base.ptr if base else None, byref(out)))
        return L.Model(out.value)

    def _rebuild_trainer(self) -> None:
        state = self._trained_state
        del self._trained_state
        self._trained_bytes = None
        self._prepare(self._config_weights)
        self.set_state(state)

    def get_trained_onnx(self, model: Any = None, as_bytes: bool = False) -> Any:
        """The trained model: the model given to the constructor (or `model`) whose trained
        initializers hold the trained values, without the loss.

        :return: an onnx.ModelProto (bytes when ``as_bytes`` or when onnx is not installed)
        """
        trained = self._trained_model(model)  # alive while its bytes are read
        data = L.model_bytes(trained.ptr)
        if as_bytes:
            return data
        try:
            import onnx
        except ImportError:
            return data
        return onnx.load_from_string(data)

    # -- prediction -------------------------------------------------------------------------

    def decision_function(self, X: Any) -> np.ndarray:
        """The model's output for X (the one the loss compares): values, logits or
        log-probabilities."""
        self._check_fitted()
        if getattr(self, "_session", None) is None:
            self._session = L.Session(self._trained_model(), threads=int(self.threads))
            model_ptr = self._session.model_ptr
            self._output = self.output_name or L.model_outputs(model_ptr)[0]
            self._predict_input = L.model_inputs(model_ptr)[0][0]
        X = _as_float32(X, "X")
        return self._session.run({self._predict_input: X}, [self._output])[0]

    def predict(self, X: Any) -> np.ndarray:
        """Predictions: the model's output for regression losses (1-D when it is [N, 1]),
        class labels for ``log``, ``cross_entropy`` and ``nll``."""
        out = self.decision_function(X)
        kind, _ = self._loss_kind()
        if kind in (5, 6):
            return self.classes_[np.argmax(out, axis=1)]
        if kind == 4:
            pos = (out.reshape(out.shape[0], -1)[:, 0] > 0).astype(np.int64)
            return self.classes_[np.minimum(pos, len(self.classes_) - 1)]
        if out.ndim == 2 and out.shape[1] == 1:
            return out[:, 0]
        return out

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities for classification losses (softmax of the logits for
        ``cross_entropy``, exp of the log-probabilities for ``nll``, sigmoid for ``log``)."""
        out = self.decision_function(X).astype(np.float64)
        kind, _ = self._loss_kind()
        if kind == 5:
            e = np.exp(out - out.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if kind == 6:
            return np.exp(out)
        if kind == 4:
            p = 1.0 / (1.0 + np.exp(-out.reshape(out.shape[0], -1)[:, 0]))
            return np.stack([1 - p, p], axis=1)
        raise AttributeError("predict_proba needs a classification loss (log, cross_entropy, "
                             "nll), not %r" % (self.learning_loss,))

    def losses(self, X: Any, y: Any, sample_weight: Any = None) -> np.ndarray:
        """The loss of every sample (no penalty), times its weight when given."""
        out = self.decision_function(X).astype(np.float64)
        t = self._targets(y, fitting=False)
        kind, extra = self._loss_kind()
        if kind in (5, 6):
            if kind == 5:
                m = out.max(axis=1, keepdims=True)
                logp = out - m - np.log(np.exp(out - m).sum(axis=1, keepdims=True))
            else:
                logp = out
            per = -np.take_along_axis(logp, t.reshape(t.shape[0], 1, *t.shape[1:]), axis=1)
            per = per.reshape(per.shape[0], -1).mean(axis=1)
        else:
            t = t.astype(np.float64).reshape(out.shape)
            e = out - t
            if kind == 0:
                el = e * e
            elif kind == 1:
                el = np.abs(e)
            elif kind == 2:
                r = float(extra.get("l1_ratio", 0.5))
                el = r * np.abs(e) + (1 - r) * e * e
            elif kind == 3:
                d = float(extra.get("delta", 1.0))
                a = np.abs(e)
                el = np.where(a <= d, 0.5 * e * e, d * (a - 0.5 * d))
            else:  # log loss on logits: softplus(y) - t y
                el = np.logaddexp(0.0, out) - t * out
            per = el.reshape(el.shape[0], -1).mean(axis=1)
        if sample_weight is not None:
            per = per * np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        return per

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Minus the (sample-weighted) mean loss: higher is better, as scikit-learn wants."""
        per = self.losses(X, y)
        if sample_weight is None:
            return -float(per.mean())
        w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        return -float((per * w).sum() / w.sum())

    # -- pickling ---------------------------------------------------------------------------

    def __getstate__(self) -> Dict[str, Any]:
        state = {k: getattr(self, k) for k in self._get_param_names()}
        for k in ("train_losses_", "validation_losses_", "n_iter_", "classes_", "input_names_",
                  "weights_to_train_"):
            if hasattr(self, k):
                state[k] = getattr(self, k)
        if self._has_weights():
            state["_trained_state"] = self.get_state()
            trained = self._trained_model()
            state["_trained_bytes"] = L.model_bytes(trained.ptr)
            state["_config_weights"] = bool(getattr(self, "_config", (0, 0, False))[2])
            state["_target_rank"] = self._target_rank
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._trainer = None
        self._session = None


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return a is b
