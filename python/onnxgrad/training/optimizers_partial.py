"""OrtGradientForwardBackwardOptimizer (onnxcustom.training.optimizers_partial): stochastic
gradient descent of an ONNX model, step by step as onnxcustom did it, with onnxgrad's
OrtGradientForwardBackward computing forward and backward.

Per epoch, per batch of ``batch_size`` consecutive observations (starts drawn by
numpy.random, see :class:`~onnxgrad.training.data_loader.OrtDataLoader`): a training forward,
the loss and its gradient against the output (``learning_loss``), the penalty added to the
reported loss (``learning_penalty``), backward, then for every weight the penalty's update and
the learning rate's update with the gradient divided by the batch size; the epoch's loss is
the mean of the batch losses divided by the batch size, and the learning rate moves to its
next value after each epoch.  With the same seed of numpy.random, the same model, data and
settings, the losses and weights follow onnxcustom's (checked against onnxcustom 0.4.293 in
python/tests/test_compat_estimator.py).

Under mpirun, ``onnxgrad.parallel.data_parallel(OrtGradientForwardBackwardOptimizer(...))``
makes fit collective: batches of ranks x ``batch_size`` rows drawn as above from rank 0's
numpy state, each rank computing its part, the losses and gradients summed across ranks
before the same update on every rank (see :mod:`onnxgrad.parallel`).
"""
import logging
import warnings
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import _lib as L
from .._logging import compat_logger
from ..values import OrtValueArray, device_to_string, get_device, to_numpy
from ._base_estimator import BaseEstimator
from .data_loader import OrtDataLoader
from .excs import ConvergenceError, ConvergenceWarning
from .ortgradient import OrtGradientForwardBackward
from .sgd_learning_loss import BaseLearningLoss
from .sgd_learning_penalty import BaseLearningPenalty

__all__ = ["OrtGradientForwardBackwardOptimizer"]


def _float_initializer_names(model: Any) -> List[str]:
    """Names of the float initializers of a model (ModelProto, bytes or path), in order."""
    m = L.Model.load(model)
    p = m.ptr
    return [L.decode(L.og_model_initializer_name(p, i))
            for i in range(L.og_model_initializer_count(p))
            if L.og_tensor_dtype(L.og_model_initializer(p, i)) in (1, 10, 11)]


def _opset(model: Any) -> int:
    """The default-domain opset a model imports."""
    if hasattr(model, "opset_import"):
        for op in model.opset_import:
            if op.domain in ("", "ai.onnx"):
                return op.version
        return 0
    m = L.Model.load(model)
    version = L.c_int64()
    domain = L.c_char_p()
    for i in range(L.og_model_opset_count(m.ptr)):
        L.check(L.og_model_opset(m.ptr, i, L.byref(domain), L.byref(version)))
        if (domain.value or b"") in (b"", b"ai.onnx"):
            return version.value
    return 0


class OrtGradientForwardBackwardOptimizer(BaseEstimator):
    """Stochastic gradient descent of an ONNX model (onnxcustom's class of that name).

    :param model_onnx: the model to train (``onnx.ModelProto``, bytes or a path); its first
        output is compared to the targets
    :param weights_to_train: initializers to train; None: every float initializer (the
        list is then stored here)
    :param loss_output_name: kept (onnxcustom's; the loss is not an output of the model)
    :param max_iter: epochs
    :param training_optimizer_name: 'SGDOptimizer' (the only one onnxcustom had; see
        :class:`onnxgrad.Trainer` for Adam, AdamW, Adagrad)
    :param batch_size: observations per batch
    :param learning_rate: a BaseLearningRate, a name ('SGD', 'SGDNesterov', 'Nesterov', a
        class name), a float (LearningRateSGD's eta0) or a dict of its parameters
    :param device: 'cpu' (a GPU is refused until onnxgrad has a CUDA backend)
    :param warm_start: False: every fit starts from weights drawn with
        ``numpy.random.randn`` (as onnxcustom did); True: the first fit starts from the
        model's initializers and the next ones from the previous fit's weights (onnxcustom's
        documented intent; its code restarted from the initializers)
    :param verbose: 1 or more: a tqdm progress bar when tqdm is installed
    :param validation_every: validation loss every ``validation_every`` epochs (a value
        below 1: that fraction of max_iter, as an int)
    :param learning_loss: a BaseLearningLoss or a name ('square_error', 'absolute_error',
        'elastic', 'log', ...) or a dict
    :param enable_logging: log onnxcustom's messages (``[OrtGradientForwardBackwardOptimizer
        .fit] ...``, ``[..._iteration] ...``) on the logger ``"onnxcustom"``, whose records also
        reach the handlers of ``"onnxgrad"``
    :param weight_name: the name onnxcustom gave the sample weights (fit takes them whether
        it is set or not)
    :param learning_penalty: a BaseLearningPenalty, None, a name ('elastic', 'l1l2') or a
        dict ``{'l1': .., 'l2': ..}``
    :param exc: raise ConvergenceError when a loss becomes NaN or infinite (False: a
        ConvergenceWarning, and the training goes on)

    Attributes after fit: ``train_losses_``, ``validation_losses_`` (None without
    validation data), ``train_session_`` (the OrtGradientForwardBackward),
    ``train_function_`` (its instance), ``input_names_``, ``output_names_``,
    ``train_state_`` (the state fed to forward: None for the inputs, then the weights),
    ``train_grad_state_`` (the velocities, with a momentum learning rate).
    ``threads`` (a class attribute, 1) is the C instances' thread count.
    """

    def __init__(self, model_onnx: Any, weights_to_train: Optional[Sequence[str]] = None,
                 loss_output_name: str = "loss", max_iter: int = 100,
                 training_optimizer_name: str = "SGDOptimizer", batch_size: int = 10,
                 learning_rate: Any = "SGD", device: Any = "cpu", warm_start: bool = False,
                 verbose: int = 0, validation_every: float = 0.1,
                 learning_loss: Any = "square_error", enable_logging: bool = False,
                 weight_name: Optional[str] = None, learning_penalty: Any = None,
                 exc: bool = True) -> None:
        if weights_to_train is None:
            weights_to_train = _float_initializer_names(model_onnx)
        BaseEstimator.__init__(self, model_onnx, learning_rate, device)
        self.batch_size = batch_size
        self.weights_to_train = weights_to_train
        self.loss_output_name = loss_output_name
        self.training_optimizer_name = training_optimizer_name
        self.verbose = verbose
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.learning_loss = BaseLearningLoss.select(learning_loss)
        self.learning_penalty = BaseLearningPenalty.select(learning_penalty)
        self.enable_logging = enable_logging
        self.weight_name = weight_name
        self.exc = exc
        if validation_every < 1:
            self.validation_every = int(self.max_iter * validation_every)
        else:
            self.validation_every = validation_every
        self.build_onnx_function()

    def _onnx_graphs(self) -> Dict[str, Any]:
        """zero_onnx_: the graph onnxcustom zeroed the velocities with (Y = X * 0)."""
        try:
            from ._onnx_functions import zero
        except ImportError:
            return {}
        return {"zero_onnx_": zero(_opset(self.model_onnx))}

    def _select_param(self, name: str, value: Any) -> Any:
        if name == "learning_loss":
            return BaseLearningLoss.select(value)
        return BaseLearningPenalty.select(value)

    @property
    def needs_grad(self) -> bool:
        """True when the learning rate keeps a velocity per weight."""
        return self.learning_rate.needs_grad

    # -- pickling ---------------------------------------------------------------------------

    def __getstate__(self) -> Dict[str, Any]:
        state = BaseEstimator.__getstate__(self)
        state.pop("_logger", None)
        for att in ("train_state_", "train_grad_state_"):
            if att in self.__dict__:
                state[att[:-1]] = [None if v is None else np.array(v, copy=True)
                                   for v in self.get_state(kind=self._kind(att))]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        popped = {k: state.pop(k) for k in ("train_state", "train_grad_state") if k in state}
        BaseEstimator.__setstate__(self, state)
        for k, v in popped.items():
            self.set_state(v, check_trained=False,
                           kind="weight" if k == "train_state" else "grad")
        self.build_onnx_function()

    @staticmethod
    def _kind(att: str) -> str:
        return "weight" if att == "train_state_" else "grad"

    # -- state ------------------------------------------------------------------------------

    def _get_att_state(self, kind: str) -> str:
        if kind == "weight":
            return "train_state_"
        if kind == "grad":
            return "train_grad_state_"
        raise ValueError("Unexpected kind=%r." % kind)

    def get_full_state(self, kind: Any = "weight") -> Any:
        """The state forward is fed (None for the inputs, then the weights), or the
        velocities (kind 'grad'); a list of kinds gives a list of states."""
        if isinstance(kind, list):
            return [self.get_full_state(kind=k) for k in kind]
        att = self._get_att_state(kind)
        if not hasattr(self, att):
            raise AttributeError("Method fit must be called before.")
        return getattr(self, att)

    def get_state(self, kind: str = "weight") -> List[OrtValueArray]:
        """The trained weights (kind 'weight') or their velocities ('grad'), in
        ``weights_to_train`` order: OrtValueArray over the training state (``.numpy()`` as
        onnxcustom's OrtValues; copy them to keep them past the next fit)."""
        att = self._get_att_state(kind)
        if not hasattr(self, att):
            raise AttributeError("Method fit must be called before.")
        value = getattr(self, att)
        if value is None:
            raise RuntimeError("No attribute %r available (None)." % att)
        n = len(value) - len(self.weights_to_train)
        return [v if v is None else v.view(OrtValueArray) for v in value[n:]]

    def set_state(self, state: Sequence[Any], check_trained: bool = True, kind: str = "weight",
                  zero: bool = False) -> None:
        """Replace the state (numpy arrays, OrtValueArray, OrtValues, torch tensors; None for
        the inputs' slots), copied; zero: zeros of the same shapes (velocities)."""
        if check_trained and not hasattr(self, "train_session_"):
            raise AttributeError("Method fit must be called before.")
        new: List[Optional[np.ndarray]] = []
        for i, v in enumerate(state):
            if v is None:
                new.append(None)
                continue
            try:
                a = np.array(to_numpy(v), copy=True)
            except (TypeError, ValueError) as e:
                raise TypeError("Unexpected type %r for state %r." % (type(v), i)) from e
            if zero:
                a = np.zeros(a.shape, dtype=a.dtype)
            new.append(np.ascontiguousarray(a))
        setattr(self, self._get_att_state(kind), new)

    def get_trained_onnx(self, model: Any = None) -> Any:
        """The model trained (or `model`, e.g. the whole scikit-learn model converted by
        skl2onnx, of which the model trained is a part) with its weights replaced by the
        trained ones: an onnx.ModelProto (needs onnx)."""
        state = dict(zip(self.weights_to_train, self.get_state()))
        return self._get_trained_onnx(state, model=model)

    # -- preparation ------------------------------------------------------------------------

    def build_onnx_function(self) -> None:
        """Prepare the loss, the learning rate and the penalty for this model's opset and
        number of weights, and the logger."""
        opset = _opset(self.model_onnx)
        n = len(self.weights_to_train)
        self.learning_loss.build_onnx_function(opset, self.device, self.weight_name)
        self.learning_rate.build_onnx_function(opset, self.device, n)
        self.learning_penalty.build_onnx_function(opset, self.device, n)
        self._logger = compat_logger() if self.enable_logging else None

    def _create_training_session(self, model_onnx: Any, weights_to_train: Sequence[str],
                                 device: Any) -> tuple:
        forback = OrtGradientForwardBackward(
            model_onnx, weights_to_train=weights_to_train, debug=False, enable_logging=False,
            providers=self._check_device(), threads=self.threads)
        return forback, forback.new_instance()

    # -- training ---------------------------------------------------------------------------

    def fit(self, X: Any, y: Any, sample_weight: Any = None, X_val: Any = None,
            y_val: Any = None, use_numpy: bool = False) -> "OrtGradientForwardBackwardOptimizer":
        """Train the model.

        :param X: features
        :param y: targets (labels for NegLogLearningLoss); 1-D becomes [N, 1]
        :param sample_weight: one weight per observation, or None
        :param X_val: validation features
        :param y_val: validation targets
        :param use_numpy: ignored (onnxcustom's first versions had it)
        :return: self
        """
        if self.training_optimizer_name != "SGDOptimizer":
            raise NotImplementedError("Only the SGDOptimizer is implemented not %r."
                                      % self.training_optimizer_name)
        logger = self._logger
        dp = None
        if self.__dict__.get("_og_comm") is not None:  # onnxgrad.parallel.data_parallel
            from ..parallel import DataParallelLoop

            dp = DataParallelLoop(self._og_comm)
            dp.check_same_rows(X, y, sample_weight, X_val)
            dp.random_state_of_root()
        self.train_session_, self.train_function_ = self._create_training_session(
            self.model_onnx, self.weights_to_train, device=self.device)
        cls = self.train_session_.cls_type_
        self.input_names_ = cls._grad_input_names
        self.output_names_ = cls._bw_fetches_names
        weights_to_train = self.train_session_.weights_to_train
        if logger is not None:
            logger.info("[OrtGradientForwardBackwardOptimizer.fit] input_names=%r",
                        self.input_names_)
            logger.info("[OrtGradientForwardBackwardOptimizer.fit] output_names=%r",
                        self.output_names_)
            logger.info("[OrtGradientForwardBackwardOptimizer.fit] weights_to_train=%r",
                        self.weights_to_train)
            logger.info("[OrtGradientForwardBackwardOptimizer.fit] device=%r|%r",
                        self.device.device_id(), self.device.device_type())
            logger.info("[OrtGradientForwardBackwardOptimizer.fit] warm_start=%r",
                        self.warm_start)

        n_in = len(self.input_names_) - len(weights_to_train)
        previous = None
        if self.warm_start and "train_state_" in self.__dict__:
            previous = self.get_state()
        init = [self.train_session_.get_initializer(name, exc=False)
                for name in self.input_names_]
        init[:n_in] = [None] * n_in
        if previous is not None and len(previous) == len(weights_to_train):
            init[n_in:] = [np.asarray(v) for v in previous]
        elif not self.warm_start:
            # onnxcustom's start: standard normal weights from numpy's global generator
            init[n_in:] = [np.random.randn(*v.shape).astype(v.dtype) if v.ndim > 0 else
                           np.random.randn(1).astype(v.dtype) for v in init[n_in:]]
        self.set_state(init, check_trained=False)
        if self.needs_grad:
            self.set_state(init, kind="grad", zero=True, check_trained=False)
        if dp is not None:  # rank 0's weights and velocities everywhere
            dp.same_as_root(self.train_state_[n_in:])
            if self.needs_grad:
                dp.same_as_root(self.train_grad_state_[n_in:])

        data_loader = OrtDataLoader(X, y, sample_weight,
                                    batch_size=self.batch_size * (dp.size if dp else 1),
                                    device=self.device)
        if X_val is not None:
            data_loader_val = OrtDataLoader(X_val, y_val, batch_size=to_numpy(X_val).shape[0],
                                            device=self.device, random_iter=False)
        else:
            data_loader_val = None
        self.learning_rate.init_learning_rate()

        loop = self._progress_loop()
        every = max(1, int(self.validation_every))
        self.train_losses_: List[Any] = []
        val_losses: List[Any] = []
        kinds = ["weight", "grad"] if self.needs_grad else ["weight"]
        for it in loop:
            if dp is None:
                loss = self._iteration(data_loader, self.get_full_state(kind=kinds),
                                       len(weights_to_train))
            else:
                loss = self._iteration_dp(dp, data_loader, self.get_full_state(kind=kinds),
                                          len(weights_to_train))
                dp.check_hash(self.train_state_[n_in:] + (
                    self.train_grad_state_[n_in:] if self.needs_grad else []),
                              "at the end of epoch %d" % it)
            lr = self.learning_rate.update_learning_rate(it).value
            if self.verbose > 1 and hasattr(loop, "set_description"):
                loop.set_description("loss=%1.3g lr=%1.3g" % (loss, lr))
            if logger is not None:
                logger.info("[OrtGradientForwardBackwardOptimizer.fit] lr value=%r", lr)
            self.train_losses_.append(loss)
            if data_loader_val is not None and (it + 1) % every == 0:
                val_losses.append(self._evaluation(data_loader_val, self.get_full_state(),
                                                   dp))
        self.validation_losses_ = None if data_loader_val is None else val_losses
        if logger is not None and self.train_losses_:
            logger.info("[OrtGradientForwardBackwardOptimizer.fit] end loss=%r",
                        self.train_losses_[-1])
        return self

    def _iteration_dp(self, dp: Any, data_loader: OrtDataLoader, states: List[Any],
                      n_weights: int) -> Any:
        """_iteration, data-parallel: the loader draws global batches of ranks x batch_size
        rows, this rank computes on its part, and the losses and gradients are summed across
        ranks (one packed reduction) before the same update on every rank; a sum, since the
        losses sum over observations, divided by the global batch size as one process
        would."""
        actual_losses: List[Any] = []
        bs = data_loader.batch_size
        logger = self._logger
        state, grad = (states[0], None) if len(states) == 1 else states
        forward = self.train_function_.forward
        backward = self.train_function_.backward
        device = self.device
        n = len(state) - n_weights

        def local(batch: Any) -> Any:
            part = dp.part(batch)
            if part[0].shape[0] == 0:  # a last batch smaller than the ranks
                return None
            state[0] = part[0]
            prediction = forward(state, training=True)
            loss, grad_loss = self.learning_loss.loss_gradient(
                device, part[1], prediction[0], weight=part[2] if len(part) > 2 else None)
            gradient = backward([grad_loss])
            if len(gradient) != len(state):
                raise RuntimeError("gradient and state should have the same length but "
                                   "%r != %r." % (len(gradient), len(state)))
            return loss, gradient[n:]

        for ib, ito in enumerate(data_loader.iter_ortvalue()):
            loss, gradient = dp.sum_step(lambda b=ito: local(b), state[n:])
            loss = self.learning_penalty.penalty_loss(device, loss, *state[n:])
            cpu_loss = np.asarray(loss)
            # the global loss: the same on every rank
            cpu_loss = self._finite_loss(cpu_loss, actual_losses)
            for i in range(n, len(state)):
                self.learning_penalty.update_weights(i - n, device, state[i])
                self.learning_rate.update_weights(i - n, device, state[i], gradient[i - n], bs,
                                                  None if grad is None else grad[i])
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] batch %d "
                             "rank %d/%d loss=%g", ib, dp.rank, dp.size,
                             float(cpu_loss.ravel()[0]))
            actual_losses.append(cpu_loss / bs)
        return np.array(actual_losses).mean()

    def _past(self, losses: List[Any]) -> List[float]:
        return [float(np.asarray(v).ravel()[0]) for v in
                (losses if len(losses) < 5 else losses[-5:])]

    def _finite_loss(self, cpu_loss: Any, actual_losses: List[Any]) -> Any:
        """cpu_loss, or after a non-finite one: ConvergenceError when ``exc``, else a
        ConvergenceWarning and the loss as NaN (an infinity too)."""
        if np.isfinite(cpu_loss).all():
            return cpu_loss
        msg = ("Loss is nan, learning_rate=%r, the gradient descent has failed "
               "(past losses=%r)." % (self.learning_rate, self._past(actual_losses)))
        if self.exc:
            raise ConvergenceError(msg)
        warnings.warn(msg, ConvergenceWarning)
        if np.isinf(cpu_loss).any():
            cpu_loss = np.full(cpu_loss.shape, np.nan, dtype=cpu_loss.dtype)
        return cpu_loss

    def _iteration(self, data_loader: OrtDataLoader, states: List[Any], n_weights: int) -> Any:
        actual_losses: List[Any] = []
        bs = data_loader.batch_size
        logger = self._logger
        if len(states) == 1:
            state, grad = states[0], None
        else:
            state, grad = states
        if logger is not None:
            logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] "
                         "iteration begin learning_rate=%r", self.learning_rate)
        forward = self.train_function_.forward
        backward = self.train_function_.backward
        loss_gradient = self.learning_loss.loss_gradient
        penalty_loss = self.learning_penalty.penalty_loss
        penalty_update = self.learning_penalty.update_weights
        lr_update = self.learning_rate.update_weights
        device = self.device
        n = len(state) - n_weights
        for ib, ito in enumerate(data_loader.iter_ortvalue()):
            if len(ito) == 2:
                ortx, orty = ito
                ortw = None
            else:
                ortx, orty, ortw = ito
            state[0] = ortx
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] batch %d", ib)
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] forward")
            prediction = forward(state, training=True)
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] "
                             "loss types=%r,%r", orty.data_type(), prediction[0].data_type())
            loss, grad_loss = loss_gradient(device, orty, prediction[0], weight=ortw)
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] "
                             "loss=%g has_weight=%r", float(loss[0]), ortw is not None)
            loss = penalty_loss(device, loss, *state[n:])
            cpu_loss = np.asarray(loss)
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] "
                             "cpu_loss=%r", cpu_loss)
            cpu_loss = self._finite_loss(cpu_loss, actual_losses)
            gradient = backward([grad_loss])
            if len(gradient) != len(state):
                raise RuntimeError("gradient and state should have the same length but "
                                   "%r != %r." % (len(gradient), len(state)))
            for i in range(n, len(state)):
                penalty_update(i - n, device, state[i])
                lr_update(i - n, device, state[i], gradient[i], bs,
                          None if grad is None else grad[i])
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] "
                             "loss=%g n_weights=%d", float(cpu_loss.ravel()[0]), n)
                for i in range(n, len(state)):
                    logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] "
                                 "state[%i]=%s", i, _str_value(state[i]))
            actual_losses.append(cpu_loss / bs)
        if logger is not None:
            logger.debug("[OrtGradientForwardBackwardOptimizer._iteration] iteration end")
        return np.array(actual_losses).mean()

    def _evaluation(self, data_loader: OrtDataLoader, state: List[Any], dp: Any = None) -> Any:
        if dp is not None:  # each rank its part of every batch, the sum reduced
            exc = None
            try:
                total = self._evaluation_sum(data_loader, state, dp)
            except Exception as e:  # pylint: disable=broad-except
                total, exc = 0.0, e
            total = dp.sum_values([total], exc)[0]
            if not np.isfinite(total):
                if self.exc:
                    raise ConvergenceError("Loss is nan, the evaluation has failed.")
                warnings.warn("Loss is nan, the evaluation has failed.", ConvergenceWarning)
            return total / len(data_loader)
        logger = self._logger
        actual_losses: List[Any] = []
        for ib, ito in enumerate(data_loader.iter_ortvalue()):
            ortx, orty = ito[0], ito[1]
            state[0] = ortx
            if logger is not None:
                logger.debug("[OrtGradientForwardBackwardOptimizer._evaluation] batch %d", ib)
            prediction = self.train_function_.forward(state, training=False)
            loss, _ = self.learning_loss.loss_gradient(self.device, orty, prediction[0])
            cpu_loss = np.asarray(loss)
            if not np.isfinite(cpu_loss).all():
                if self.exc:
                    raise ConvergenceError("Loss is nan, the evaluation has failed (past "
                                           "losses=%r)." % self._past(actual_losses))
                warnings.warn("Loss is nan, learning_rate=%r, the gradient descent has failed "
                              "(past losses=%r)." % (self.learning_rate,
                                                     self._past(actual_losses)),
                              ConvergenceWarning)
                if np.isinf(cpu_loss).any():
                    cpu_loss = np.full(cpu_loss.shape, np.nan, dtype=cpu_loss.dtype)
            actual_losses.append(cpu_loss)
        return np.array(actual_losses).sum() / len(data_loader)

    def _evaluation_sum(self, data_loader: OrtDataLoader, state: List[Any], dp: Any) -> float:
        """This rank's part of the validation loss's sum (no NaN check: the global one is)."""
        total = 0.0
        for ito in data_loader.iter_ortvalue():
            part = dp.part(ito)
            if part[0].shape[0] == 0:
                continue
            state[0] = part[0]
            prediction = self.train_function_.forward(state, training=False)
            loss, _ = self.learning_loss.loss_gradient(self.device, part[1], prediction[0])
            total += float(np.asarray(loss).sum())
        return total

    # -- scores -----------------------------------------------------------------------------

    def losses(self, X: Any, y: Any, sample_weight: Any = None) -> np.ndarray:
        """The loss of every observation (times its weight), in X's order.  (onnxcustom drew
        random batches here, so that some rows were scored twice and others not at all.)"""
        self._ensure_function()
        X = to_numpy(X)
        loader = OrtDataLoader(X, y, sample_weight, batch_size=max(1, int(self.batch_size)),
                               device=self.device, random_iter=False)
        state = list(self.get_full_state())
        scores = np.empty((X.shape[0],), dtype=X.dtype)
        n = len(loader)
        bs = loader.batch_size
        for start in range(0, n, bs):
            end = min(start + bs, n)
            state[0] = loader.X_np[start:end]
            prediction = self.train_function_.forward(state, training=False)
            w = None if loader.w_np is None else loader.w_np[start:end]
            score = self.learning_loss.loss_scores(self.device, loader.y_np[start:end],
                                                   prediction[0], w)
            per = np.asarray(score).reshape((end - start, -1)).sum(axis=1)
            scores[start:end] = per
        return scores

    def _ensure_function(self) -> None:
        """The instance that runs the model: fit's, or a new one for weights restored by
        unpickling (onnxcustom needed a new fit then)."""
        if "train_function_" in self.__dict__:
            return
        if "train_state_" not in self.__dict__:
            raise AttributeError("Method fit must be called before.")
        weights = self.get_state()
        self.train_session_, self.train_function_ = self._create_training_session(
            self.model_onnx, self.weights_to_train, device=self.device)
        n_in = len(self.train_session_.cls_type_._grad_input_names) - len(weights)
        self.set_state([None] * n_in + [np.asarray(w) for w in weights])

    #: the name onnxcustom's first versions gave losses
    scores = losses

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Minus the mean loss per observation (higher is better, as scikit-learn wants)."""
        scores = self.losses(X, y, sample_weight=sample_weight)
        return float(-scores.sum() / to_numpy(X).shape[0])

    def __sklearn_tags__(self) -> Any:
        try:
            from sklearn.utils import Tags, TargetTags
        except ImportError:  # scikit-learn < 1.6
            return None
        return Tags(estimator_type=None, target_tags=TargetTags(required=True))


def _str_value(v: Any) -> str:
    a = np.asarray(v)
    return "%s%r:%s" % (a.dtype, a.shape, np.array2string(a.ravel()[:5], precision=4))
