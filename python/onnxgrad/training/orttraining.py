"""onnxcustom.training.orttraining: where onnxcustom's first versions had add_loss_output and
get_train_initializer (later in utils.orttraining_helper)."""
from ..utils.orttraining_helper import (add_loss_output, get_train_initializer,
                                        penalty_loss_onnx)

__all__ = ["add_loss_output", "get_train_initializer", "penalty_loss_onnx"]
