"""onnxcustom.utils' helpers that training code imports, under the same module names:
``orttraining_helper`` (get_train_initializer, add_loss_output, penalty_loss_onnx),
``onnx_helper`` (onnx_rename_weights, replace_initializers_into_onnx, get_onnx_opset, ...),
``onnxruntime_helper`` (get_ort_device, ort_device_to_string, device_to_providers, ...).
They manipulate onnx.ModelProto and need the onnx package."""
