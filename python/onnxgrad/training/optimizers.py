"""OrtGradientOptimizer (onnxcustom.training.optimizers): SGD on a model whose loss is one of
its outputs (as utils.orttraining_helper.add_loss_output makes), which onnxcustom trained with
onnxruntime-training's TrainingSession and its SGDOptimizer; onnxgrad's gradient object
differentiates the loss output here.

Per batch: the loss (a sum over the batch), its gradient against every weight, then
``w <- w - value / batch_size * g`` (the SGDOptimizer with the learning rate fed as
``value / batch_size``); the epoch's loss is the mean of the batch losses divided by the batch
size; the learning rate moves to its next value after each epoch.

Under mpirun, ``onnxgrad.parallel.data_parallel(OrtGradientOptimizer(...))`` makes fit
collective, as for OrtGradientForwardBackwardOptimizer: batches of ranks x ``batch_size``
rows, each rank its part, the losses and gradients summed across ranks in one reduction per
step, the same update on every rank (see :mod:`onnxgrad.parallel`).
"""
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import _lib as L
from ..values import OrtValueArray, to_numpy
from ._base_estimator import BaseEstimator
from .data_loader import OrtDataLoader
from .excs import ConvergenceError, EvaluationError

__all__ = ["OrtGradientOptimizer"]


class _TrainingSession:
    """Stands where onnxcustom kept onnxruntime's TrainingSession: ``get_state()`` (the
    weights by name), ``load_state(dict)``, ``get_inputs()``, ``get_outputs()``, and
    ``save_onnx_graph``."""

    def __init__(self, forback: Any, weights: Sequence[str]) -> None:
        self.forback = forback
        self.function = forback.new_instance()
        self.weights = list(weights)
        self.values = {w: np.ascontiguousarray(forback.get_initializer(w)) for w in weights}

    def get_state(self) -> Dict[str, np.ndarray]:
        return {k: v.view(OrtValueArray) for k, v in self.values.items()}

    def load_state(self, state: Dict[str, Any], strict: bool = False) -> None:
        for k, v in state.items():
            if k not in self.values:
                if strict:
                    raise ValueError("Unknown weight %r (weights: %r)." % (k, self.weights))
                continue
            a = np.asarray(to_numpy(v), dtype=self.values[k].dtype)
            self.values[k][...] = a.reshape(self.values[k].shape)

    def get_inputs(self) -> List[Any]:
        return self.forback.cls_type_._sess.get_inputs()

    def get_outputs(self) -> List[Any]:
        return self.forback.cls_type_._sess.get_outputs()

    def save_onnx_graph(self, folder: Any, prefix: Optional[str] = None,
                        suffix: Optional[str] = None) -> Dict[str, Any]:
        return self.forback.save_onnx_graph(folder, prefix=prefix, suffix=suffix)


class OrtGradientOptimizer(BaseEstimator):
    """SGD on a model with a loss output (onnxcustom's class of that name).

    :param model_onnx: the model with its loss (inputs: features, label, optionally the
        sample weights; output `loss_output_name`)
    :param weights_to_train: the initializers to train
    :param loss_output_name: the loss output
    :param max_iter: epochs
    :param training_optimizer_name: 'SGDOptimizer' (the only one)
    :param batch_size: observations per batch
    :param learning_rate: a learning rate without velocity (LearningRateSGD), a name or a
        float
    :param device: 'cpu'
    :param warm_start: False: every fit starts from ``numpy.random.randn`` weights; True:
        from the current ones
    :param verbose: a tqdm progress bar when tqdm is installed
    :param validation_every: validation every `validation_every` epochs (below 1: that
        fraction of max_iter)
    :param saved_gradient: a file name: the gradient graph is saved there
    :param sample_weight_name: the name of the sample weight input

    Attributes after fit: ``train_session_``, ``train_losses_``, ``validation_losses_``,
    ``input_names_``, ``output_names_``, ``loss_index_``, ``trained_coef_``.
    """

    def __init__(self, model_onnx: Any, weights_to_train: Sequence[str],
                 loss_output_name: str = "loss", max_iter: int = 100,
                 training_optimizer_name: str = "SGDOptimizer", batch_size: int = 10,
                 learning_rate: Any = "SGD", device: Any = "cpu", warm_start: bool = False,
                 verbose: int = 0, validation_every: float = 0.1,
                 saved_gradient: Optional[str] = None,
                 sample_weight_name: str = "weight") -> None:
        BaseEstimator.__init__(self, model_onnx, learning_rate, device)
        self.batch_size = batch_size
        self.weights_to_train = weights_to_train
        self.loss_output_name = loss_output_name
        self.training_optimizer_name = training_optimizer_name
        self.verbose = verbose
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.saved_gradient = saved_gradient
        self.sample_weight_name = sample_weight_name
        if validation_every < 1:
            self.validation_every = int(self.max_iter * validation_every)
        else:
            self.validation_every = validation_every
        if self.learning_rate.needs_grad:
            raise NotImplementedError("Any weight update involving past gradient is not "
                                      "implemented (class %r)."
                                      % self.learning_rate.__class__.__name__)

    def build_onnx_function(self) -> None:
        """Nothing to prepare: the learning rate's update is computed here."""

    def _create_training_session(self, training_onnx: Any, weights_to_train: Sequence[str],
                                 loss_output_name: str = "loss",
                                 training_optimizer_name: str = "SGDOptimizer",
                                 device: Any = "cpu") -> _TrainingSession:
        if training_optimizer_name != "SGDOptimizer":
            raise NotImplementedError("Only the SGDOptimizer is implemented not %r."
                                      % training_optimizer_name)
        from .ortgradient import OrtGradientForwardBackward

        forback = OrtGradientForwardBackward(
            training_onnx, weights_to_train=list(weights_to_train), input_names=[],
            output_names=[loss_output_name], providers=self._check_device(),
            threads=self.threads)
        if self.saved_gradient is not None:
            forback.cls_type_._trained_onnx.save(self.saved_gradient)
        return _TrainingSession(forback, forback.weights_to_train)

    def fit(self, X: Any, y: Any, sample_weight: Any = None, X_val: Any = None,
            y_val: Any = None, use_numpy: bool = False) -> "OrtGradientOptimizer":
        """Train the model (use_numpy is ignored: batches are always read in place)."""
        dp = None
        if self.__dict__.get("_og_comm") is not None:  # onnxgrad.parallel.data_parallel
            from ..parallel import DataParallelLoop

            dp = DataParallelLoop(self._og_comm)
            dp.check_same_rows(X, y, sample_weight, X_val)
            dp.random_state_of_root()
        previous = None
        if self.warm_start and "train_session_" in self.__dict__:
            previous = {k: np.array(v) for k, v in self.train_session_.get_state().items()}
        elif self.warm_start and "trained_coef_" in self.__dict__:
            previous = {k: np.array(v) for k, v in self.trained_coef_.items()}
        self.train_session_ = self._create_training_session(
            self.model_onnx, self.weights_to_train, loss_output_name=self.loss_output_name,
            training_optimizer_name=self.training_optimizer_name, device=self.device)
        session = self.train_session_
        inputs = session.forback.cls_type_._model_inputs
        if (len(inputs) == 2 and sample_weight is not None) or (
                len(inputs) == 3 and sample_weight is None):
            raise RuntimeError("Number of inputs should be 2 if sample_weight is None or 3 if "
                               "not None but it is %d." % len(inputs))
        if previous is not None:
            session.load_state(previous)
        elif not self.warm_start:
            new_state = {}
            for k, v in session.get_state().items():
                new_state[k] = (np.random.randn(*v.shape) if len(v.shape) > 0
                                else np.random.randn(1)).astype(v.dtype)
            session.load_state(new_state)
        if dp is not None:  # rank 0's weights everywhere
            dp.same_as_root([session.values[w] for w in session.weights])
        loader = OrtDataLoader(X, y, sample_weight=sample_weight,
                               batch_size=self.batch_size * (dp.size if dp else 1),
                               device=self.device)
        loader_val = None
        if X_val is not None:
            loader_val = OrtDataLoader(X_val, y_val, batch_size=to_numpy(X_val).shape[0],
                                       device=self.device, random_iter=False)
        self.learning_rate.init_learning_rate()
        self.input_names_ = list(inputs) + ["Learning_Rate"]
        self.output_names_ = session.forback.output_names
        self.loss_index_ = self.output_names_.index(self.loss_output_name)
        loop = self._progress_loop()
        every = max(1, int(self.validation_every))
        self.train_losses_: List[Any] = []
        self.validation_losses_: List[Any] = []
        lr = self.learning_rate.value
        for it in loop:
            if dp is None:
                loss = self._iteration(loader, lr / self.batch_size, inputs)
            else:
                loss = self._iteration_dp(dp, loader, lr / loader.batch_size, inputs)
                dp.check_hash([session.values[w] for w in session.weights],
                              "at the end of epoch %d" % it)
            lr = self.learning_rate.update_learning_rate(it).value
            if self.verbose > 1 and hasattr(loop, "set_description"):
                loop.set_description("loss=%1.3g lr=%1.3g" % (loss, lr))
            self.train_losses_.append(loss)
            if loader_val is not None and (it + 1) % every == 0:
                self.validation_losses_.append(self._evaluation(loader_val, inputs, dp))
        self.trained_coef_ = {k: np.array(v) for k, v in session.get_state().items()}
        return self

    def _run(self, batch: Any, inputs: Sequence[str], training: bool) -> Any:
        session = self.train_session_
        fn = session.function
        feeds = dict(zip(inputs, batch))
        for k, v in session.values.items():
            feeds[k] = v
        out = fn.forward(feeds, training=training)
        return out[0]

    def _iteration(self, loader: OrtDataLoader, lr: float, inputs: Sequence[str]) -> Any:
        actual_losses: List[Any] = []
        session = self.train_session_
        weights = session.forback.weights_to_train
        for batch in loader.iter_numpy():
            n = batch[0].shape[0]
            loss = np.asarray(self._run(batch, inputs, True))
            if not np.isfinite(loss).all():
                session.function = session.forback.new_instance()
                raise ConvergenceError(
                    "Loss is nan or infinite, learning_rate=%r, the gradient descent has "
                    "failed (past losses=%r)." % (
                        np.array([lr], np.float32),
                        [float(np.asarray(v).ravel()[0]) for v in (
                            actual_losses if len(actual_losses) < 5 else actual_losses[-5:])]))
            grads = session.function.backward()
            for w, g in zip(weights, grads):
                value = session.values[w]
                np.subtract(value, g * np.array(lr, dtype=value.dtype), out=value)
            actual_losses.append(loss / n)
        return np.array(actual_losses).mean()

    def _iteration_dp(self, dp: Any, loader: OrtDataLoader, lr: float,
                      inputs: Sequence[str]) -> Any:
        """_iteration, data-parallel: this rank's part of every global batch, the losses and
        gradients summed across ranks, the same update on every rank."""
        actual_losses: List[Any] = []
        session = self.train_session_
        values = [session.values[w] for w in session.forback.weights_to_train]

        def local(batch: Any) -> Any:
            part = dp.part(batch)
            if part[0].shape[0] == 0:
                return None
            loss = self._run(part, inputs, True)
            return loss, session.function.backward()

        for batch in loader.iter_numpy():
            loss, grads = dp.sum_step(lambda b=batch: local(b), values)
            if not np.isfinite(loss).all():  # the global loss: the same on every rank
                session.function = session.forback.new_instance()
                raise ConvergenceError(
                    "Loss is nan or infinite, learning_rate=%r, the gradient descent has "
                    "failed (past losses=%r)." % (
                        np.array([lr], np.float32),
                        [float(np.asarray(v).ravel()[0]) for v in actual_losses[-5:]]))
            for value, g in zip(values, grads):
                np.subtract(value, g * np.array(lr, dtype=value.dtype), out=value)
            actual_losses.append(loss / batch[0].shape[0])
        return np.array(actual_losses).mean()

    def _evaluation(self, loader: OrtDataLoader, inputs: Sequence[str], dp: Any = None) -> Any:
        if dp is not None:  # each rank its part, the sums reduced
            exc, total, rows = None, 0.0, 0
            try:
                for batch in loader.iter_numpy():
                    rows += batch[0].shape[0]
                    part = dp.part(batch)
                    if part[0].shape[0]:
                        total += float(np.asarray(self._run(part, inputs, False)).sum())
            except Exception as e:  # pylint: disable=broad-except
                exc = e
            total = dp.sum_values([total], exc)[0]
            if not np.isfinite(total):
                raise EvaluationError("Loss is nan or infinite (%r), evaluation has failed."
                                      % total)
            return total / max(rows, 1)
        actual_losses = []
        total = 0
        for batch in loader.iter_numpy():
            loss = np.asarray(self._run(batch, inputs, False))
            if not np.isfinite(loss).all():
                raise EvaluationError("Loss is nan or infinite (%r), evaluation has failed."
                                      % loss)
            actual_losses.append(loss)
            total += batch[0].shape[0]
        return np.array(actual_losses).sum() / max(total, 1)

    def get_state(self) -> Dict[str, OrtValueArray]:
        """The trained weights by name."""
        if "train_session_" not in self.__dict__:
            if "trained_coef_" in self.__dict__:
                return {k: np.asarray(v).view(OrtValueArray)
                        for k, v in self.trained_coef_.items()}
            raise AttributeError("Method fit must be called before.")
        return self.train_session_.get_state()

    def get_trained_onnx(self, model: Any = None) -> Any:
        """The model (or `model`: the model without its loss, to get the predictions) with the
        trained weights: an onnx.ModelProto (needs onnx)."""
        return self._get_trained_onnx(self.get_state(), model=model)

    def set_state(self, state: Dict[str, Any]) -> None:
        """Replace the trained weights (a dict by name)."""
        if "train_session_" not in self.__dict__:
            raise AttributeError("Method fit must be called before.")
        self.train_session_.load_state(state)
