#!/usr/bin/env python3
"""Write the models of tests/data/values (checked in; rerun after changing this script), read
by tests/unit/test_values.c:

- strings.onnx: string tensors through Constant, an initializer, Gather, Concat, Slice,
  Transpose, Expand, Tile, Split, Identity and Reshape;
- kinds.onnx: a sequence, a map and an optional passed through Identity;
- deep_ok.onnx / deep_bad.onnx: an input whose type nests OG_MAX_NESTING (100) and 101
  optionals deep."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def save(m, name):
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(here, name))


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


# ---- strings ---------------------------------------------------------------------------
words = np.array([["a", "bb", ""], ["dddd", "é", "ffffff"]], dtype=object)
W = numpy_helper.from_array(words, "W")
S = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.STRING, shape)
I = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.INT64, shape)
const_i = lambda n, v: helper.make_node(
    "Constant", [], [n], value=numpy_helper.from_array(np.array(v, np.int64)))
nodes = [
    helper.make_node("Constant", [], ["c"], value_strings=["x", "yy", "long string " * 8]),
    helper.make_node("Gather", ["W", "idx"], ["gathered"], axis=1),
    helper.make_node("Concat", ["W", "W"], ["concat"], axis=0),
    const_i("starts", [1]), const_i("ends", [3]), const_i("axes", [1]),
    helper.make_node("Slice", ["W", "starts", "ends", "axes"], ["sliced"]),
    helper.make_node("Transpose", ["W"], ["transposed"], perm=[1, 0]),
    const_i("eshape", [2, 2, 3]),
    helper.make_node("Expand", ["W", "eshape"], ["expanded"]),
    const_i("reps", [1, 2]),
    helper.make_node("Tile", ["W", "reps"], ["tiled"]),
    helper.make_node("Split", ["c"], ["split0", "split1"], axis=0, num_outputs=2),
    const_i("rshape", [3, 2]),
    helper.make_node("Reshape", ["W", "rshape"], ["reshaped"]),
    helper.make_node("Identity", ["s"], ["s_out"]),
]
outs = [S("c", [3]), S("gathered", [2, 2]), S("concat", [4, 3]), S("sliced", [2, 2]),
        S("transposed", [3, 2]), S("expanded", [2, 2, 3]), S("tiled", [2, 6]),
        S("split0", [2]), S("split1", [1]), S("reshaped", [3, 2]), S("s_out", ["n"])]
save(model(nodes, [I("idx", [2]), S("s", ["n"])], outs, [W], opset=18), "strings.onnx")

# ---- sequence, map, optional -------------------------------------------------------------
seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
map_t = helper.make_map_type_proto(TensorProto.INT64,
                                   helper.make_tensor_type_proto(TensorProto.FLOAT, []))
opt_t = helper.make_optional_type_proto(
    helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, ["k"])))
vi = helper.make_value_info
nodes = [helper.make_node("Identity", ["S"], ["S_out"]),
         helper.make_node("Identity", ["M"], ["M_out"]),
         helper.make_node("Identity", ["O"], ["O_out"])]
save(model(nodes, [vi("S", seq_t), vi("M", map_t), vi("O", opt_t)],
           [vi("S_out", seq_t), vi("M_out", map_t), vi("O_out", opt_t)]), "kinds.onnx")


# ---- nesting limit -----------------------------------------------------------------------
# Python's protobuf refuses messages nested past 100, so these are written field by field.
def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def field(num, payload):  # a length-delimited field
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def deep_type(n):
    t = field(1, varint(1 << 3) + varint(TensorProto.FLOAT))  # TypeProto.tensor_type
    for _ in range(n):
        t = field(9, field(1, t))  # TypeProto.optional_type { elem_type }
    return t


def deep_model(n):
    vi_in = field(1, b"D") + field(2, deep_type(n))
    vi_out = field(1, b"D_out") + field(2, deep_type(n))
    node = field(1, b"D") + field(2, b"D_out") + field(4, b"Identity")
    graph = field(1, node) + field(2, b"g") + field(11, vi_in) + field(12, vi_out)
    opset = field(1, b"") + varint(2 << 3) + varint(17)
    return varint(1 << 3) + varint(8) + field(8, opset) + field(7, graph)


for name, depth in (("deep_ok.onnx", 100), ("deep_bad.onnx", 101)):
    with open(os.path.join(here, name), "wb") as f:
        f.write(deep_model(depth))
