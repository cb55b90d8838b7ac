"""The loggers: onnxgrad's own messages go to the logger ``"onnxgrad"``; the messages
onnxcustom logged (``[OrtGradientForwardBackward] ...``,
``[OrtGradientForwardBackwardOptimizer._iteration] ...``) go, with the same text, to the
logger its users listen to, ``"onnxcustom"``, made a child of ``"onnxgrad"`` so that each
record also reaches the handlers of ``"onnxgrad"`` (and the root logger once)."""
import logging

__all__ = ["compat_logger"]


def compat_logger() -> logging.Logger:
    """The ``"onnxcustom"`` logger, whose records propagate to ``"onnxgrad"``: its level, when
    unset, is ``"onnxgrad"``'s."""
    parent = logging.getLogger("onnxgrad")
    logger = logging.getLogger("onnxcustom")
    if logger.parent is not parent:
        logger.parent = parent
    return logger
