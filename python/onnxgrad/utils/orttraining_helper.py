"""Training helpers on ONNX models (onnxcustom.utils.orttraining_helper): the weights to train,
and a loss appended to a model (the model OrtGradientOptimizer trains).  They need onnx."""
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np

__all__ = ["get_train_initializer", "add_loss_output", "penalty_loss_onnx"]

_FLOATS = (1, 10, 11)  # float, float16, double


def get_train_initializer(onx: Any) -> "OrderedDict[str, Tuple[np.ndarray, Any]]":
    """The float initializers of a model, in its order: ``{name: (value, TensorProto)}``
    (the weights trained when none are named).  `onx` may also be bytes or a path."""
    from onnx.numpy_helper import to_array

    from .onnx_helper import load_model

    onx = load_model(onx)
    res: "OrderedDict[str, Tuple[np.ndarray, Any]]" = OrderedDict()
    for init in onx.graph.initializer:
        if init.data_type in _FLOATS:
            res[init.name] = (to_array(init), init)
    return res


class _Names:
    """Fresh names for the nodes and values a loss adds."""

    def __init__(self, taken: Set[str]) -> None:
        self.taken = set(taken)

    def __call__(self, base: str) -> str:
        name, k = base, 2
        while name in self.taken:
            name = "%s_%d" % (base, k)
            k += 1
        self.taken.add(name)
        return name


def penalty_loss_onnx(name: str, dtype: Any, l1: Optional[float] = None,
                      l2: Optional[float] = None,
                      existing_names: Optional[Set[str]] = None) -> Tuple[List[Any], List[Any]]:
    """(initializers, nodes) computing ``l1 * sum|w| + l2 * sum w^2`` of value `name`; the
    last node's output is the penalty.  l1 and l2 cannot both be 0 or None."""
    from onnx import helper, numpy_helper

    fresh = existing_names if isinstance(existing_names, _Names) else _Names(
        existing_names or set())
    l1 = l1 or 0.0
    l2 = l2 or 0.0
    if not l1 and not l2:
        raise ValueError("l1 and l2 cannot be null or None at the same time, name=%r." % name)
    flat, shape = fresh("reshaped_%s" % name), fresh("shape_%s" % name)
    inits = [numpy_helper.from_array(np.array([-1], np.int64), shape)]
    nodes = [helper.make_node("Reshape", [name, shape], [flat])]
    parts = []
    for coef, kind in ((l1, "l1"), (l2, "l2")):
        if not coef:
            continue
        c = fresh("%s_weight_%s" % (kind, name))
        inits.append(numpy_helper.from_array(np.array([coef], dtype=dtype), c))
        term = fresh("%s_term_%s" % (kind, name))
        red = fresh("%s_reduced_%s" % (kind, name))
        if kind == "l1":
            nodes.append(helper.make_node("Abs", [flat], [term]))
        else:
            nodes.append(helper.make_node("Mul", [flat, flat], [term]))
        pen = fresh("%s_penalty_%s" % (kind, name))
        nodes += [helper.make_node("ReduceSum", [term], [red]),
                  helper.make_node("Mul", [red, c], [pen])]
        parts.append(pen)
    if len(parts) == 2:
        total = fresh("penalty_%s" % name)
        nodes.append(helper.make_node("Add", parts, [total]))
    return inits, nodes


def add_loss_output(onx: Any, score_name: str = "squared_error", loss_name: str = "loss",
                    label_name: str = "label", weight_name: Optional[str] = None,
                    penalty: Optional[Dict[str, Any]] = None, output_index: Any = None,
                    **kwargs: Any) -> Any:
    """A copy of `onx` that also computes a loss: a new input `label_name` (and `weight_name`,
    one weight per observation, when given), a new first output `loss_name` of shape [1, 1]
    (followed by the output compared).

    :param score_name: 'squared_error' or 'l2': sum((f(x) - y)^2 w); 'absolute_error' or
        'l1': sum(|f(x) - y| w); 'elastic': sum((l1_weight |f(x) - y| + l2_weight
        (f(x) - y)^2) w) (kwargs l1_weight, l2_weight, default 0.5); 'log': for a binary
        classifier whose output holds the two probabilities, minus the mean over the
        observations of w log(p[label]) (kwargs eps, default 1e-6, clips the probabilities;
        the label is int64)
    :param loss_name: name of the loss output
    :param label_name: name of the label input (an intermediate value of that name is
        renamed '_label_')
    :param weight_name: name of the sample weight input, or None
    :param penalty: ``{initializer: {'l1': a, 'l2': b}}`` or ``{initializer: b}`` (L2):
        ``a sum|w| + b sum w^2`` added to the loss
    :param output_index: the output compared (index or name); None when there is only one
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from .onnx_helper import load_model

    src = load_model(onx)
    model = onnx.ModelProto()
    model.CopyFrom(src)
    graph = model.graph
    for node in graph.node:
        if "_label_" in node.input or "_label_" in node.output:
            raise RuntimeError("One intermediate result contains '_label_'. It should be "
                               "removed manually.\n%r" % node)
        for seq in (node.input, node.output):
            for k, n in enumerate(seq):
                if n == label_name:
                    seq[k] = "_label_"
    outputs = list(graph.output)
    if output_index is None:
        if len(outputs) != 1:
            raise ValueError("Unable to guess the output to compare to the expected labels "
                             "among %r." % [o.name for o in outputs])
        output_index = 0
    elif isinstance(output_index, str):
        names = [o.name for o in outputs]
        if output_index not in names:
            raise ValueError("Unable to find output %r in %r." % (output_index, names))
        output_index = names.index(output_index)
    elif not isinstance(output_index, int):
        raise TypeError("output_index must be an integer or a str not %r." % type(output_index))
    out = outputs[output_index]
    elem = out.type.tensor_type.elem_type
    if elem == 0:
        raise TypeError("Unable to guess input tensor type from %r." % out)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
    shape = [d.dim_value if d.dim_value > 0 else None for d in out.type.tensor_type.shape.dim]
    taken = {n for node in graph.node for n in list(node.input) + list(node.output)}
    taken |= {i.name for i in graph.initializer} | {i.name for i in graph.input}
    taken |= {label_name, loss_name} | ({weight_name} if weight_name else set())
    fresh = _Names(taken)
    inits: List[Any] = []
    nodes: List[Any] = []
    inputs = [helper.make_tensor_value_info(label_name, elem, shape)]
    if weight_name is not None:
        inputs.append(helper.make_tensor_value_info(weight_name, elem,
                                                    [shape[0] if shape else None]))
    result = loss_name if penalty is None else fresh("loss_no_penalty")

    if score_name in ("squared_error", "l2", "absolute_error", "l1", "elastic"):
        diff = fresh("loss_diff")
        nodes.append(helper.make_node("Sub", [out.name, label_name], [diff]))
        sq, ab = fresh("loss_square"), fresh("loss_abs")
        if score_name in ("squared_error", "l2"):
            nodes.append(helper.make_node("Mul", [diff, diff], [sq]))
            per = sq
        elif score_name in ("absolute_error", "l1"):
            nodes.append(helper.make_node("Abs", [diff], [ab]))
            per = ab
        else:
            c1, c2 = fresh("l1_weight"), fresh("l2_weight")
            inits += [numpy_helper.from_array(
                np.array([kwargs.get("l1_weight", 0.5)], dtype), c1),
                numpy_helper.from_array(np.array([kwargs.get("l2_weight", 0.5)], dtype), c2)]
            t1, t2, per = fresh("loss_l1"), fresh("loss_l2"), fresh("loss_elastic")
            nodes += [helper.make_node("Abs", [diff], [ab]),
                      helper.make_node("Mul", [diff, diff], [sq]),
                      helper.make_node("Mul", [ab, c1], [t1]),
                      helper.make_node("Mul", [sq, c2], [t2]),
                      helper.make_node("Add", [t1, t2], [per])]
        if weight_name is not None:
            # one weight per observation: [N] against [N, k]
            col, wcol = fresh("weight_shape"), fresh("weight_column")
            inits.append(numpy_helper.from_array(np.array([-1, 1], np.int64), col))
            nodes.append(helper.make_node("Reshape", [weight_name, col], [wcol]))
            res = fresh("loss_weighted")
            nodes.append(helper.make_node("Mul", [per, wcol], [res]))
            per = res
        nodes.append(helper.make_node("ReduceSum", [per], [result]))
    elif score_name == "log":
        eps = kwargs.get("eps", 1e-6)
        inputs[0] = helper.make_tensor_value_info(label_name, TensorProto.INT64, [None, 1])
        e0, e1, one, axes, shp = (fresh("eps_name"), fresh("eps1_name"), fresh("one_name"),
                                  fresh("axes_name"), fresh("shape_name"))
        inits += [numpy_helper.from_array(np.array([eps], dtype), e0),
                  numpy_helper.from_array(np.array([1 - eps], dtype), e1),
                  numpy_helper.from_array(np.array([1], dtype), one),
                  numpy_helper.from_array(np.array([1], np.int64), axes),
                  numpy_helper.from_array(np.array([1, 1], np.int64), shp)]
        clip, tot, prob, logp, y1, y0, onehot, prod, like = [
            fresh(n) for n in ("clip", "clip_sum", "probability", "log_probability", "label1",
                               "label0", "one_hot", "product", "likelihood")]
        nodes += [helper.make_node("Clip", [out.name, e0, e1], [clip]),
                  helper.make_node("ReduceSum", [clip, axes], [tot], keepdims=1),
                  helper.make_node("Div", [clip, tot], [prob]),
                  helper.make_node("Log", [prob], [logp]),
                  helper.make_node("Cast", [label_name], [y1], to=elem),
                  helper.make_node("Sub", [one, y1], [y0]),
                  helper.make_node("Concat", [y0, y1], [onehot], axis=1),
                  helper.make_node("Mul", [logp, onehot], [prod]),
                  helper.make_node("ReduceSum", [prod, axes], [like], keepdims=1)]
        if weight_name is not None:
            col, wcol, res = fresh("weight_shape"), fresh("weight_column"), fresh("weighted")
            inits.append(numpy_helper.from_array(np.array([-1, 1], np.int64), col))
            nodes += [helper.make_node("Reshape", [weight_name, col], [wcol]),
                      helper.make_node("Mul", [like, wcol], [res])]
            like = res
        mean, neg = fresh("reduced_loss"), fresh("neg_reduced_loss")
        nodes += [helper.make_node("ReduceMean", [like], [mean]),
                  helper.make_node("Neg", [mean], [neg]),
                  helper.make_node("Reshape", [neg, shp], [result])]
    else:
        raise NotImplementedError("Unexpected %r value for score_name." % score_name)

    if penalty is not None:
        pens = []
        for k, v in penalty.items():
            if isinstance(v, float):
                v = {"l2": v}
            p_inits, p_nodes = penalty_loss_onnx(k, dtype, existing_names=fresh, **v)
            inits += p_inits
            nodes += p_nodes
            pens.append(p_nodes[-1].output[0])
        total = pens[0]
        for p in pens[1:]:
            s = fresh("penalty_sum")
            nodes.append(helper.make_node("Add", [total, p], [s]))
            total = s
        shp, a, b = fresh("shapevect"), fresh("loss_reshape"), fresh("penalty_reshape")
        inits.append(numpy_helper.from_array(np.array([-1, 1], np.int64), shp))
        nodes += [helper.make_node("Reshape", [result, shp], [a]),
                  helper.make_node("Reshape", [total, shp], [b]),
                  helper.make_node("Add", [a, b], [loss_name])]

    loss_out = helper.make_tensor_value_info(loss_name, elem, [1, 1])
    new_graph = helper.make_graph(list(graph.node) + nodes, graph.name,
                                  list(graph.input) + inputs, [loss_out, out],
                                  list(graph.initializer) + inits)
    res = helper.make_model(new_graph, opset_imports=list(model.opset_import))
    res.ir_version = model.ir_version
    for a in ("producer_name", "producer_version", "domain", "model_version", "doc_string"):
        setattr(res, a, getattr(model, a))
    res.metadata_props.extend(model.metadata_props)
    return _remove_unused(res)


def _remove_unused(model: Any) -> Any:
    """Drop the nodes and initializers no output needs."""
    graph = model.graph
    need = {o.name for o in graph.output}
    keep = []
    for node in reversed(list(graph.node)):
        if any(o in need for o in node.output):
            keep.append(node)
            need.update(i for i in node.input if i)
    keep.reverse()
    del graph.node[:]
    graph.node.extend(keep)
    inits = [i for i in graph.initializer if i.name in need]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    return model
