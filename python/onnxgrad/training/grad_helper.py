"""The gradient graph of an ONNX model as an ONNX model (onnxcustom.training.grad_helper),
built by onnxgrad's gradient builder (og_grad_create) instead of onnxruntime-training's.

The graphs use standard ONNX ops (onnxgrad's own ops, where it has some, are saved with a
function body made of standard ops), so any runtime runs them; only ``KeepYieldOp`` adds an
onnxruntime-training operator, since that is what the option asks for.  They need the onnx
package (the result is an onnx.ModelProto).
"""
from enum import IntFlag
from typing import Any, List, Optional, Sequence, Union

from .. import _lib as L

__all__ = ["DerivativeOptions", "onnx_derivative"]


class DerivativeOptions(IntFlag):
    """How :func:`onnx_derivative` builds the gradient graph.

    * ``Zero``: inputs: the model's inputs, the weights, one gradient per output
      (``<output>_grad``); outputs: the gradients of the inputs and of the weights
      (``<name>_grad``)
    * ``KeepYieldOp``: the gradients of the outputs come from a ``YieldOp`` node
      (com.microsoft, as onnxruntime-training's graphs had them) instead of inputs; cannot be
      combined with another option
    * ``KeepOutputs``: the model's outputs are outputs too
    * ``FillGrad``: no gradient inputs: every output's gradient is ones of its shape
      (``ConstantOfShape``); needs ``KeepOutputs``
    * ``Loss``: the model computes a loss output (`loss`); its gradient is one, against the
      inputs (`label` excluded); the graph is also saved to `path_name`
    """

    Zero = 0
    KeepYieldOp = 1
    KeepOutputs = 2
    FillGrad = 4
    Loss = 5


def _names(v: Union[None, str, Sequence[str]]) -> Optional[List[str]]:
    if v is None:
        return None
    return [v] if isinstance(v, str) else list(v)


def _training_graph(model: Any, weights: Optional[List[str]], inputs: Optional[List[str]],
                    outputs: Optional[List[str]]) -> tuple:
    """(training graph bytes, selected outputs, inputs with gradients, weights) of og_grad."""
    from ctypes import byref, c_void_p

    m = L.Model.load(model)
    opts = L.og_grad_options()
    opts.threads = 1
    keep = []
    for field, names in (("weights", weights), ("inputs", inputs), ("outputs", outputs)):
        if names is not None:
            keep.append(L.names_array(names))
            setattr(opts, field, keep[-1])
            setattr(opts, "n_" + field, len(names))
    g = c_void_p()
    L.check(L.og_grad_create(m.ptr, byref(opts), byref(g)))
    try:
        p = g.value
        data = L.model_bytes(L.og_grad_training_model(p))
        outs = [L.decode(L.og_grad_output_name(p, i)) for i in range(L.og_grad_output_count(p))]
        ins = [L.decode(L.og_grad_input_name(p, i)) for i in range(L.og_grad_input_count(p))]
        ws = [L.decode(L.og_grad_weight_name(p, i)) for i in range(L.og_grad_weight_count(p))]
    finally:
        L.og_grad_free(g.value)
    return data, outs, ins, ws


def _float_inputs(onx: Any) -> List[str]:
    inits = {i.name for i in onx.graph.initializer}
    return [i.name for i in onx.graph.input if i.name not in inits and
            i.type.HasField("tensor_type") and i.type.tensor_type.elem_type in (1, 10, 11)]


def _fill_ones(graph: Any, outputs: List[str], seeds: List[str], elem: dict) -> List[Any]:
    """Nodes making seeds[j] = ones of outputs[j]'s shape."""
    from onnx import helper

    nodes = []
    for o, s in zip(outputs, seeds):
        shape = "%s_shape" % o
        nodes += [helper.make_node("Shape", [o], [shape]),
                  helper.make_node("ConstantOfShape", [shape], [s],
                                   value=helper.make_tensor("value", elem[o], (1,), [1]))]
    return nodes


def onnx_derivative(onx: Any, weights: Optional[Sequence[str]] = None,
                    inputs: Union[None, str, Sequence[str]] = None,
                    options: DerivativeOptions = DerivativeOptions.Zero,
                    loss: Optional[str] = None, label: Union[None, str, Sequence[str]] = None,
                    path_name: Optional[str] = None) -> Any:
    """The gradient graph of a model, as an onnx.ModelProto.

    :param onx: the model (onnx.ModelProto, bytes or path)
    :param weights: the initializers to differentiate against; None: every float
        initializer; [] none
    :param inputs: the inputs to differentiate against; None: every float input
    :param options: a :class:`DerivativeOptions`
    :param loss: with ``DerivativeOptions.Loss``: the loss output
    :param label: with ``DerivativeOptions.Loss``: the input(s) holding the expected values
        (no gradient)
    :param path_name: with ``DerivativeOptions.Loss``: where the graph is saved
    :return: onnx.ModelProto
    """
    import onnx
    from onnx import helper

    if not isinstance(options, DerivativeOptions):
        raise TypeError("Options must be from type DerivativeOptions not %r." % type(options))
    from ..utils.onnx_helper import load_model

    model = load_model(onx)
    if options == DerivativeOptions.Loss:
        return _derivative_loss(model, weights, inputs, loss, label, path_name)
    if options & DerivativeOptions.KeepYieldOp and options != DerivativeOptions.KeepYieldOp:
        raise ValueError("Option YieldOd cannot be combined with any other.")
    if options & DerivativeOptions.FillGrad and not options & DerivativeOptions.KeepOutputs:
        raise ValueError("FillGrad should be set with KeepOutputs.")
    data, outs, ins, ws = _training_graph(model, _names(weights), _names(inputs), None)
    grad = onnx.load_from_string(data)
    g = grad.graph
    seeds = ["%s_grad" % o for o in outs]
    elem = {o.name: o.type.tensor_type.elem_type for o in model.graph.output}
    seed_set = set(seeds)
    new_inputs = [i for i in g.input if i.name not in seed_set]
    grads = [o for o in g.output if o.name not in set(outs)]
    nodes = list(g.node)
    opsets = list(grad.opset_import)
    if options & DerivativeOptions.KeepYieldOp:
        nodes.insert(0, helper.make_node("YieldOp", outs, seeds, domain="com.microsoft",
                                         full_shape_outputs=list(range(len(outs)))))
        # the gradient nodes read the seeds: the YieldOp goes after the outputs' producers
        nodes = _sorted(nodes, [i.name for i in new_inputs] +
                        [i.name for i in g.initializer])
        opsets.append(helper.make_opsetid("com.microsoft", 1))
        g_outputs = grads
    elif options & DerivativeOptions.FillGrad:
        fill = _fill_ones(g, outs, seeds, elem)
        nodes = _sorted(fill + nodes, [i.name for i in new_inputs] +
                        [i.name for i in g.initializer])
        g_outputs = list(g.output)
    else:
        new_inputs = list(g.input)
        g_outputs = list(g.output) if options & DerivativeOptions.KeepOutputs else grads
    graph = helper.make_graph(nodes, g.name, new_inputs, g_outputs, list(g.initializer))
    graph.value_info.extend(g.value_info)
    res = helper.make_model(graph, opset_imports=opsets, functions=list(grad.functions))
    res.ir_version = grad.ir_version
    for a in ("producer_name", "producer_version", "domain", "model_version", "doc_string"):
        setattr(res, a, getattr(grad, a))
    return res


def _sorted(nodes: List[Any], known: List[str]) -> List[Any]:
    """The nodes in an order where each one follows the producers of its inputs."""
    done = set(known) | {""}
    left = list(nodes)
    res = []
    while left:
        rest = []
        for n in left:
            if all(i in done for i in n.input):
                res.append(n)
                done.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(left):
            raise RuntimeError("The gradient graph has a cycle or a missing input: %r"
                               % sorted({i for n in rest for i in n.input} - done))
        left = rest
    return res


def _derivative_loss(model: Any, weights: Any, inputs: Any, loss: Any, label: Any,
                     path_name: Any) -> Any:
    import onnx
    from onnx import helper

    if path_name is None:
        raise ValueError("path_name must not be None if options is 'Loss'.")
    if weights is not None:
        raise ValueError("weights must be None if options is 'Loss'.")
    if label is None:
        raise ValueError("label must not be None if options is 'Loss'.")
    if loss is None or not isinstance(loss, str):
        raise ValueError("loss must not None and a string if options is 'Loss'.")
    labels = set(_names(label) or [])
    names = _names(inputs) if inputs is not None else _float_inputs(model)
    names = [n for n in names if n not in labels]
    inits = {i.name for i in model.graph.initializer}
    w = [n for n in names if n in inits]
    x = [n for n in names if n not in inits]
    if loss not in [o.name for o in model.graph.output]:
        raise ValueError("loss %r is not an output of the model (outputs: %r)"
                         % (loss, [o.name for o in model.graph.output]))
    data, outs, _, _ = _training_graph(model, w, x, [loss])
    grad = onnx.load_from_string(data)
    g = grad.graph
    seed = "%s_grad" % loss
    elem = {o.name: o.type.tensor_type.elem_type for o in model.graph.output}
    new_inputs = [i for i in g.input if i.name != seed]
    nodes = _sorted(_fill_ones(g, [loss], [seed], elem) + list(g.node),
                    [i.name for i in new_inputs] + [i.name for i in g.initializer])
    graph = helper.make_graph(nodes, g.name, new_inputs, list(g.output), list(g.initializer))
    res = helper.make_model(graph, opset_imports=list(grad.opset_import),
                            functions=list(grad.functions))
    res.ir_version = grad.ir_version
    onnx.save(res, path_name)
    return res
