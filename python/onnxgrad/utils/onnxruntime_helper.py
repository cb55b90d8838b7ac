"""Device helpers (onnxcustom.utils.onnxruntime_helper), on onnxgrad's Device instead of
onnxruntime's OrtDevice."""
from typing import Any, List

import numpy as np

from ..values import Device, OrtValueArray, device_to_string, get_device, to_numpy

__all__ = ["provider_to_device", "get_ort_device_type", "get_ort_device", "ort_device_to_string",
           "numpy_to_ort_value", "device_to_providers"]


def provider_to_device(provider_name: str) -> str:
    """'cpu' for CPUExecutionProvider, 'cuda' for CUDAExecutionProvider."""
    if provider_name == "CPUExecutionProvider":
        return "cpu"
    if provider_name == "CUDAExecutionProvider":
        return "cuda"
    raise ValueError("Unexpected value for provider_name=%r." % provider_name)


def get_ort_device_type(device: Any) -> int:
    """Device.cpu() or Device.cuda() for a device or its name."""
    return get_device(device).device_type()


def get_ort_device(device: Any) -> Device:
    """A :class:`~onnxgrad.values.Device` ('cpu', 'cuda', 'cuda:N', 'gpu', 'gpu:N', a
    Device, an onnxruntime OrtDevice, a torch.device)."""
    return get_device(device)


def ort_device_to_string(device: Any) -> str:
    """'cpu', 'cuda' or 'cuda:N'."""
    return device_to_string(device)


def numpy_to_ort_value(arr: Any, device: Any = None) -> OrtValueArray:
    """The array as an OrtValueArray (no copy)."""
    return np.asarray(to_numpy(arr)).view(OrtValueArray)


def device_to_providers(device: Any) -> List[str]:
    """['CPUExecutionProvider'] or ['CUDAExecutionProvider']."""
    d = get_device(device)
    return ["CPUExecutionProvider" if d.device_type() == Device.cpu() else
            "CUDAExecutionProvider"]
