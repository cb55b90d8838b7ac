#!/usr/bin/env python3
"""The hostile corpus: kinds of malicious or broken input (models, .npy, .npz, CSV,
checkpoints, paths), generated here, each fed to the CLI under a time and memory bound
(limits.py).  Every case must end in a clear error: the exit status expected (1, or 2 for a
usage error), a message on stderr containing the expected words, no signal, no hang, and —
when strace is available, in release builds — no file opened outside the case's folder (a SECRET file sits
beside the case folders, the target of every escape attempt; its name must never be
opened).
Usage: corpus.py ONNXGRAD_CLI [--sanitized] [--list] [--only NAME]"""
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import wire
from limits import run as run_limited, sanitized

I64_MAX, I64_MIN = 2**63 - 1, -2**63
F32, I64 = TensorProto.FLOAT, TensorProto.INT64
CASES = []


def case(name, rc=1):
    """Register a case maker: f(dir) -> (argv after the CLI, words the message must hold)."""
    def wrap(f):
        CASES.append((name, rc, f))
        return f
    return wrap


def vi(name, elem=F32, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def save_model(d, nodes, inputs, outputs, inits=(), opset=18, name="m.onnx", value_info=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def write(d, name, data):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def npy(d, name, a):
    path = os.path.join(d, name)
    np.save(path, a)
    return path


def unary(d, op, attrs=None, x_shape=(4,), elem=F32, extra_inputs=(), inits=()):
    """y = op(x, *extra) with x declared x_shape."""
    node = helper.make_node(op, ["x"] + [n for n, _ in extra_inputs] + [t.name for t in inits],
                            ["y"], name="hostile", **(attrs or {}))
    ins = [vi("x", elem, list(x_shape) if x_shape is not None else None)]
    ins += [vi(n, e, None) for n, e in extra_inputs]
    return save_model(d, [node], ins, [vi("y", elem)], inits)


def info(path):
    return ["info", path]


def run(d, path, **inputs):
    cmd = ["run", path, "-o", os.path.join(d, "out")]
    for k, v in inputs.items():
        cmd += ["--input", f"{k}={npy(d, k + '.npy', v)}"]
    return cmd


# ---- the model file itself -----------------------------------------------------------

@case("nested_if_3000")
def _(d):
    return info(write(d, "m.onnx", wire.nested_if(3000))), "beyond the limit of 100"


@case("nested_sequence_type_5000")
def _(d):
    return info(write(d, "m.onnx", wire.nested_sequence_type(5000))), "beyond the limit of 100"


@case("nested_if_101_levels")
def _(d):  # the top If's branch and 100 more levels: one past OG_MAX_NESTING
    return info(write(d, "m.onnx", wire.nested_if(100))), "101 subgraphs within subgraphs"


@case("nested_types_101_levels")
def _(d):
    return info(write(d, "m.onnx", wire.nested_sequence_type(101))), "101 types within types"


@case("empty_file")
def _(d):
    return info(write(d, "m.onnx", b"")), "no ir_version"


@case("random_bytes")
def _(d):
    return info(write(d, "m.onnx", np.random.default_rng(1).bytes(4096))), "not a valid ONNX"


@case("truncated_model")
def _(d):
    b = wire.model(wire.graph([wire.node("Relu", ["x"], ["y"])], outputs=[wire.value_info("y")]))
    return info(write(d, "m.onnx", b[:len(b) // 2])), "not a valid ONNX"


@case("length_past_end")
def _(d):  # a graph field that claims 2^62 bytes
    b = wire.field_varint(1, 8) + wire.varint((7 << 3) | 2) + wire.varint(1 << 62) + b"\0" * 16
    return info(write(d, "m.onnx", b)), "not a valid ONNX"


@case("model_is_a_folder")
def _(d):
    os.mkdir(os.path.join(d, "m.onnx"))
    return info(os.path.join(d, "m.onnx")), "not a regular file"


@case("model_is_a_fifo")
def _(d):
    os.mkfifo(os.path.join(d, "m.onnx"))
    return info(os.path.join(d, "m.onnx")), "not a regular file"


@case("model_is_a_device")
def _(d):
    return info("/dev/zero"), "not a regular file"


@case("model_missing")
def _(d):
    return info(os.path.join(d, "nothing.onnx")), "cannot open"


@case("ir_version_99")
def _(d):
    b = wire.model(wire.graph(outputs=[wire.value_info("y")]), ir_version=99)
    return info(write(d, "m.onnx", b)), "IR version 99"


@case("opset_999")
def _(d):
    return info(save_model(d, [], [vi("x")], [vi("x")], opset=999)), "opset 999"


@case("opset_imports_2000")
def _(d):
    b = wire.field_varint(1, 8) + b"".join(
        wire.field_bytes(8, wire.field_bytes(1, f"d{i}") + wire.field_varint(2, 1))
        for i in range(2000)) + wire.field_bytes(7, wire.graph())
    return info(write(d, "m.onnx", b)), "og_load_options.max_opsets"


@case("node_without_op_type")
def _(d):
    b = wire.model(wire.graph([wire.field_bytes(1, "x") + wire.field_bytes(2, "y")],
                              inputs=[wire.value_info("x", wire.tensor_type())],
                              outputs=[wire.value_info("y")]))
    return info(write(d, "m.onnx", b)), "has no op_type"


@case("cycle")
def _(d):
    n = [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])]
    return info(save_model(d, n, [], [vi("a")])), "cycle"


@case("dangling_input")
def _(d):
    return info(save_model(d, [helper.make_node("Relu", ["ghost"], ["y"])], [], [vi("y")])), \
        "ghost"


@case("two_producers")
def _(d):
    n = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])]
    return info(save_model(d, n, [vi("x", shape=[2])], [vi("y")])), "'y'"


@case("initializer_twice")
def _(d):
    t = numpy_helper.from_array(np.zeros(2, np.float32), "w")
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t, t])), \
        "defined twice"


@case("output_never_produced")
def _(d):
    return info(save_model(d, [], [vi("x", shape=[2])], [vi("nowhere")])), "nowhere"


@case("negative_dim_initializer")
def _(d):
    t = TensorProto(name="w", data_type=F32, dims=[-4])
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "negative dim"


@case("rank_9_initializer")
def _(d):
    t = numpy_helper.from_array(np.zeros([1] * 9, np.float32), "w")
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "rank 9"


@case("rank_9_value_info")
def _(d):
    return info(save_model(d, [helper.make_node("Relu", ["x"], ["y"])], [vi("x", shape=[1] * 9)],
                           [vi("y")])), "rank 9"


@case("raw_data_short")
def _(d):
    t = TensorProto(name="w", data_type=F32, dims=[1000], raw_data=b"\0" * 12)
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "needs 4000 bytes of data, has 12"


@case("dims_product_overflows")
def _(d):
    t = TensorProto(name="w", data_type=F32, dims=[1 << 40, 1 << 40], raw_data=b"")
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "overflows"


@case("float_data_count")
def _(d):
    t = TensorProto(name="w", data_type=F32, dims=[8], float_data=[1.0, 2.0])
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "needs 32 bytes of data, has 8"


@case("unknown_dtype")
def _(d):
    t = TensorProto(name="w", data_type=99, dims=[1], raw_data=b"\0" * 8)
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "element type 99"


@case("segmented_tensor")
def _(d):
    t = numpy_helper.from_array(np.zeros(2, np.float32), "w")
    t.segment.begin, t.segment.end = 0, 1
    return info(save_model(d, [helper.make_node("Relu", ["w"], ["y"])], [], [vi("y")], [t])), \
        "segmented"


@case("sparse_initializer")
def _(d):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x", shape=[2])],
                          [vi("y")])
    sp = g.sparse_initializer.add()
    sp.dims.extend([4])
    sp.values.CopyFrom(numpy_helper.from_array(np.ones(1, np.float32), "s"))
    sp.indices.CopyFrom(numpy_helper.from_array(np.zeros(1, np.int64), "i"))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    return info(write(d, "m.onnx", m.SerializeToString())), "sparse initializers"


@case("attribute_without_name")
def _(d):
    at = wire.field_varint(3, 1) + wire.field_varint(20, 2)
    n = wire.node("Relu", ["x"], ["y"], "r", [at])
    b = wire.model(wire.graph([n], inputs=[wire.value_info("x", wire.tensor_type())],
                              outputs=[wire.value_info("y")]))
    return info(write(d, "m.onnx", b)), "without a name"


@case("attribute_twice")
def _(d):
    n = helper.make_node("Softmax", ["x"], ["y"], axis=0)
    n.attribute.extend([helper.make_attribute("axis", 0)])
    return info(save_model(d, [n], [vi("x", shape=[2])], [vi("y")])), "twice"


@case("node_with_2000_inputs")
def _(d):
    # 2000 inputs are a real model's (Concat, Sum): the last one names nothing
    return info(save_model(d, [helper.make_node("Sum", ["x"] * 1999 + ["nowhere"], ["y"])],
                           [vi("x", shape=[2])], [vi("y")])), "no graph input"


@case("local_function_recursive")
def _(d):
    # a model-local function whose body calls itself: kept packed, never expanded
    g = helper.make_graph([helper.make_node("F", ["x"], ["y"], domain="local")], "g",
                          [vi("x", shape=[2])], [vi("y")])
    f = helper.make_function("local", "F", ["a"], ["b"],
                             [helper.make_node("F", ["a"], ["b"], domain="local")],
                             [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18),
                                            helper.make_opsetid("local", 1)], functions=[f])
    return run(d, write(d, "m.onnx", m.SerializeToString()), x=np.ones(2, np.float32)), \
        "not implemented"


@case("unknown_op_run")
def _(d):
    p = save_model(d, [helper.make_node("Frobnicate", ["x"], ["y"])], [vi("x", shape=[2])],
                   [vi("y")])
    return run(d, p, x=np.ones(2, np.float32)), "Frobnicate"


# ---- external data: escapes, special files, sizes ------------------------------------

def external_model(d, entries, dims=(4,)):
    t = TensorProto(name="w", data_type=F32, dims=list(dims), data_location=TensorProto.EXTERNAL)
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return save_model(d, [helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", shape=list(dims))],
                      [vi("y")], [t])


@case("external_dotdot")
def _(d):
    return info(external_model(d, [("location", "../SECRET")])), "escapes the model's folder"


@case("external_absolute")
def _(d):
    top = os.path.dirname(d)
    return info(external_model(d, [("location", os.path.join(top, "SECRET"))])), \
        "escapes the model's folder"


@case("external_nested_dotdot")
def _(d):
    os.mkdir(os.path.join(d, "sub"))
    return info(external_model(d, [("location", "sub/../../SECRET")])), \
        "escapes the model's folder"


@case("external_symlink_out")
def _(d):
    os.symlink(os.path.join(os.path.dirname(d), "SECRET"), os.path.join(d, "w.bin"))
    return info(external_model(d, [("location", "w.bin")])), "resolves outside"


@case("external_symlink_folder_out")
def _(d):
    os.symlink(os.path.dirname(d), os.path.join(d, "up"))
    return info(external_model(d, [("location", "up/SECRET")])), "resolves outside"


@case("external_drive_letter")
def _(d):
    return info(external_model(d, [("location", "C:\\SECRET")])), "escapes the model's folder"


@case("external_fifo")
def _(d):
    os.mkfifo(os.path.join(d, "w.bin"))
    return info(external_model(d, [("location", "w.bin")])), "not a regular file"


@case("external_dev_zero_link")
def _(d):
    os.symlink("/dev/zero", os.path.join(d, "w.bin"))
    return info(external_model(d, [("location", "w.bin")])), "resolves outside"


@case("external_folder")
def _(d):
    os.mkdir(os.path.join(d, "w.bin"))
    return info(external_model(d, [("location", "w.bin")])), "not a regular file"


@case("external_no_location")
def _(d):
    return info(external_model(d, [("offset", "0")])), "without a location"


@case("external_offset_junk")
def _(d):
    write(d, "w.bin", b"\0" * 64)
    return info(external_model(d, [("location", "w.bin"), ("offset", "12abc")])), \
        "not a non-negative decimal"


@case("external_offset_past_end")
def _(d):
    write(d, "w.bin", b"\0" * 16)
    return info(external_model(d, [("location", "w.bin"), ("offset", "4096")])), \
        "fewer than offset 4096"


@case("external_length_mismatch")
def _(d):
    write(d, "w.bin", b"\0" * 64)
    return info(external_model(d, [("location", "w.bin"), ("length", "8")])), \
        "does not fit its 16 bytes"


@case("external_declared_1tib")
def _(d):
    write(d, "w.bin", b"\0" * 16)
    return info(external_model(d, [("location", "w.bin")], dims=(1 << 38,))), \
        "og_load_options.max_external_bytes"


@case("external_sparse_64gib_file")
def _(d):  # a sparse file as large as it claims: refused by the limit, never read
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.truncate(1 << 36)
    return info(external_model(d, [("location", "w.bin")], dims=(1 << 34,))), \
        "og_load_options.max_external_bytes"


# ---- shapes and sizes a model asks for ------------------------------------------------

@case("pad_int64_max")
def _(d):
    p = unary(d, "Pad", inits=[numpy_helper.from_array(np.array([I64_MAX, I64_MAX]), "pads")])
    return run(d, p, x=np.ones(4, np.float32)), "on axis 0 of size 4"


@case("tile_2_62")
def _(d):
    p = unary(d, "Tile", inits=[numpy_helper.from_array(np.array([2**62]), "repeats")])
    return run(d, p, x=np.ones(4, np.float32)), "overflows int64"


@case("range_whole_int64")
def _(d):
    n = helper.make_node("Range", ["s", "l", "dl"], ["y"])
    inits = [numpy_helper.from_array(np.array(v, np.int64), k)
             for k, v in (("s", I64_MIN), ("l", I64_MAX), ("dl", 1))]
    return run(d, save_model(d, [n], [], [vi("y", I64)], inits)), "is too long"


@case("constant_of_shape_1_6e9")
def _(d):
    n = helper.make_node("ConstantOfShape", ["s"], ["y"])
    p = save_model(d, [n], [], [vi("y")], [numpy_helper.from_array(np.array([1600000000]), "s")])
    return run(d, p), "memory budget"


@case("constant_of_shape_overflow")
def _(d):
    n = helper.make_node("ConstantOfShape", ["s"], ["y"])
    p = save_model(d, [n], [], [vi("y")],
                   [numpy_helper.from_array(np.array([1 << 40, 1 << 40]), "s")])
    return run(d, p), "overflow"


@case("expand_to_4tib")
def _(d):
    p = unary(d, "Expand", x_shape=(1, 1),
              inits=[numpy_helper.from_array(np.array([1 << 20, 1 << 20]), "shape")])
    return run(d, p, x=np.ones((1, 1), np.float32)), "memory budget"


@case("reshape_count_mismatch")
def _(d):
    p = unary(d, "Reshape", inits=[numpy_helper.from_array(np.array([3, -1]), "shape")])
    return run(d, p, x=np.ones(4, np.float32)), "Reshape"


@case("reshape_two_minus_ones")
def _(d):
    p = unary(d, "Reshape", inits=[numpy_helper.from_array(np.array([-1, -1]), "shape")])
    return run(d, p, x=np.ones(4, np.float32)), "-1"


@case("resize_scale_1e30")
def _(d):
    n = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    p = save_model(d, [n], [vi("x", shape=[1, 1, 2, 2])], [vi("y")],
                   [numpy_helper.from_array(np.array([1, 1, 1e30, 1e30], np.float32), "scales")])
    return run(d, p, x=np.ones((1, 1, 2, 2), np.float32)), "Resize"


@case("resize_scale_nan")
def _(d):
    n = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    p = save_model(d, [n], [vi("x", shape=[1, 1, 2, 2])], [vi("y")],
                   [numpy_helper.from_array(np.array([1, 1, np.nan, 2], np.float32), "scales")])
    return run(d, p, x=np.ones((1, 1, 2, 2), np.float32)), "Resize"


@case("onehot_depth_2_62")
def _(d):
    n = helper.make_node("OneHot", ["i", "depth", "values"], ["y"])
    inits = [numpy_helper.from_array(np.array(2**62), "depth"),
             numpy_helper.from_array(np.array([0, 1], np.float32), "values")]
    p = save_model(d, [n], [vi("i", I64, [2])], [vi("y")], inits)
    return run(d, p, i=np.zeros(2, np.int64)), "OneHot"


@case("topk_k_2_62")
def _(d):
    p = unary(d, "TopK", inits=[numpy_helper.from_array(np.array([2**62]), "k")])
    return run(d, p, x=np.ones(4, np.float32)), "TopK"


@case("pool_declared_2_61")
def _(d):
    p = unary(d, "MaxPool", {"kernel_shape": [2]}, x_shape=(1, 1, 1 << 61))
    return info(p), "above 2^60"


@case("conv_huge_declared_dims")
def _(d):
    n = helper.make_node("Conv", ["x", "w"], ["y"], dilations=[1 << 31])
    p = save_model(d, [n], [vi("x", shape=[1, 1, 1 << 62]), vi("w", shape=[1, 1, 1 << 62])],
                   [vi("y")])
    return info(p), "above"


@case("maxpool_kernel_2_32")
def _(d):
    p = unary(d, "MaxPool", {"kernel_shape": [1 << 32]}, x_shape=(1, 1, 4))
    return run(d, p, x=np.ones((1, 1, 4), np.float32)), "kernel_shape"


@case("conv_kernel_larger_than_input")
def _(d):
    n = helper.make_node("Conv", ["x", "w"], ["y"])
    p = save_model(d, [n], [vi("x", shape=[1, 1, 4])], [vi("y")],
                   [numpy_helper.from_array(np.ones((1, 1, 9), np.float32), "w")])
    return run(d, p, x=np.ones((1, 1, 4), np.float32)), "larger than the padded input"


@case("gather_index_out_of_range")
def _(d):
    p = unary(d, "Gather", extra_inputs=[("i", I64)])
    return run(d, p, x=np.ones(4, np.float32), i=np.array([I64_MAX])), "out of range"


@case("slice_step_zero")
def _(d):
    n = helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])
    inits = [numpy_helper.from_array(np.array([v]), k) for k, v in
             (("s", I64_MIN), ("e", I64_MAX), ("a", 0), ("st", 0))]
    p = save_model(d, [n], [vi("x", shape=[4])], [vi("y")], inits)
    return run(d, p, x=np.arange(4, dtype=np.float32)), "Slice"


@case("concat_axis_100")
def _(d):
    n = helper.make_node("Concat", ["x", "x"], ["y"], axis=100)
    return run(d, save_model(d, [n], [vi("x", shape=[4])], [vi("y")]),
               x=np.ones(4, np.float32)), "axis"


@case("concat_declared_past_int64")
def _(d):
    n = helper.make_node("Concat", ["a", "b"], ["y"], axis=0)
    return info(save_model(d, [n], [vi("a", shape=[2**62]), vi("b", shape=[2**62])], [vi("y")])), \
        "sum past int64"


@case("expand_shape_input_of_18")
def _(d):  # found by fuzz_grad: a heap-buffer-overflow in the resolver
    n = helper.make_node("Expand", ["x", "shape"], ["y"])
    return info(save_model(d, [n], [vi("x", shape=[1, 3, 1]), vi("shape", I64, [18])],
                           [vi("y")], opset=9)), "rank 18, above the limit 8"


@case("split_sizes_past_int64")
def _(d):
    n = helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=0)
    return info(save_model(d, [n], [vi("x", shape=[4])], [vi("a"), vi("b")],
                           [numpy_helper.from_array(np.array([I64_MAX, 3]), "sp")], opset=13)), \
        "sum past int64"


@case("transpose_perm_repeated")
def _(d):
    p = unary(d, "Transpose", {"perm": [0, 0]}, x_shape=(2, 2))
    return run(d, p, x=np.ones((2, 2), np.float32)), "perm"


@case("split_negative_sizes")
def _(d):
    n = helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=0)
    p = save_model(d, [n], [vi("x", shape=[4])], [vi("a"), vi("b")],
                   [numpy_helper.from_array(np.array([6, -2]), "sp")])
    return run(d, p, x=np.ones(4, np.float32)), "Split"


@case("unsqueeze_axis_int64_min")
def _(d):
    p = unary(d, "Unsqueeze", inits=[numpy_helper.from_array(np.array([I64_MIN]), "axes")])
    return run(d, p, x=np.ones(4, np.float32)), "Unsqueeze"


@case("matmul_mismatch")
def _(d):
    n = helper.make_node("MatMul", ["a", "b"], ["y"])
    p = save_model(d, [n], [vi("a", shape=[2, 3]), vi("b", shape=[4, 5])], [vi("y")])
    return info(p), "MatMul"


@case("einsum_garbage")
def _(d):
    p = unary(d, "Einsum", {"equation": "ab,,->!!"}, x_shape=(2, 2))
    return run(d, p, x=np.ones((2, 2), np.float32)), "Einsum"


@case("cast_to_99")
def _(d):
    p = unary(d, "Cast", {"to": 99})
    return run(d, p, x=np.ones(4, np.float32)), "Cast"


@case("softmax_axis_100")
def _(d):
    p = unary(d, "Softmax", {"axis": 100})
    return run(d, p, x=np.ones(4, np.float32)), "axis"


@case("reduce_axis_int64_max")
def _(d):
    p = unary(d, "ReduceSum", inits=[numpy_helper.from_array(np.array([I64_MAX]), "axes")])
    return run(d, p, x=np.ones(4, np.float32)), "ReduceSum"


@case("grad_maxpool_107500_phases")
def _(d):  # found by fuzz_grad: the opset-12 MaxPool gradient unrolled one group per phase
    n = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[60, 80], dilations=[10, 10],
                         pads=[10, 20, 10, 20])
    p = save_model(d, [n], [vi("x", shape=[1, 1, 1000, 1000])], [vi("y")], opset=12)
    return ["grad", p, "--input", "x=" + npy(d, "x.npy", np.zeros((1, 1, 1000, 1000), np.float32)),
            "-o", os.path.join(d, "out")], "4096 is the limit"


@case("grad_avgpool_declared_2_59")
def _(d):  # the tap table's size would have wrapped a size_t
    n = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2], pads=[1, 1])
    p = save_model(d, [n], [vi("x", shape=[1, 1, 1 << 59])], [vi("y")])
    return ["export", p, "-o", os.path.join(d, "out")], "above 16777216"


# ---- inputs and data files ------------------------------------------------------------

def relu_model(d):
    return save_model(d, [helper.make_node("Relu", ["x"], ["y"])], [vi("x", shape=["n"])],
                      [vi("y")])


def npy_bytes(header, data=b"", version=1):
    h = header.encode()
    pad = (64 - (10 + len(h) + 1) % 64) % 64
    h += b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<H", len(h)) + h + data


@case("npy_shape_2_40_tiny_file")
def _(d):
    b = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }")
    return ["run", relu_model(d), "--input", "x=" + write(d, "x.npy", b), "-o",
            os.path.join(d, "out")], "truncated"


@case("npy_object_dtype")
def _(d):
    b = npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8)
    return ["run", relu_model(d), "--input", "x=" + write(d, "x.npy", b), "-o",
            os.path.join(d, "out")], "npy"


@case("npy_fortran")
def _(d):
    b = npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", b"\0" * 8)
    return ["run", relu_model(d), "--input", "x=" + write(d, "x.npy", b), "-o",
            os.path.join(d, "out")], "Fortran"


@case("npy_header_cut")
def _(d):
    b = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }")[:20]
    return ["run", relu_model(d), "--input", "x=" + write(d, "x.npy", b), "-o",
            os.path.join(d, "out")], "npy"


@case("npy_version_9")
def _(d):
    b = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8, 9)
    return ["run", relu_model(d), "--input", "x=" + write(d, "x.npy", b), "-o",
            os.path.join(d, "out")], "npy"


@case("npy_is_a_fifo")
def _(d):
    os.mkfifo(os.path.join(d, "x.npy"))
    return ["run", relu_model(d), "--input", "x=" + os.path.join(d, "x.npy"), "-o",
            os.path.join(d, "out")], "not a regular file"


@case("input_wrong_dtype")
def _(d):
    return run(d, relu_model(d), x=np.ones(2, np.int64)), "must be float32"


def linreg(d):
    src = os.path.join(os.path.dirname(__file__), "..", "data", "train", "linreg.onnx")
    shutil.copy(src, os.path.join(d, "m.onnx"))
    return os.path.join(d, "m.onnx")


def train(d, data, *extra):
    return ["train", linreg(d), "--data", data, "--loss", "mse", "-q", "-o",
            os.path.join(d, "t.onnx")] + list(extra)


def npz_with(d, members):
    path = os.path.join(d, "d.npz")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return path


def npy_of(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def zip64(path, members):
    """A zip archive of (name, method, uncompressed size, crc, data) members with zip64
    sizes and offsets, written by hand so that a member may claim any size."""
    out, central = bytearray(), bytearray()
    for name, method, usize, crc, data in members:
        nb = name.encode()
        extra = struct.pack("<HHQQ", 1, 16, usize, len(data))
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 45, 0, method, 0, 0, crc, 0xFFFFFFFF,
                           0xFFFFFFFF, len(nb), len(extra)) + nb + extra + data
        cextra = struct.pack("<HHQQQ", 1, 24, usize, len(data), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 45, 45, 0, method, 0, 0, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(nb), len(cextra), 0, 0, 0, 0,
                               0xFFFFFFFF) + nb + cextra
    cd_off, n = len(out), len(members)
    out += central
    eocd64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064b50, 44, 45, 45, 0, 0, n, n, len(central), cd_off)
    out += struct.pack("<IIQI", 0x07064b50, 0, eocd64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(path, "wb") as f:
        f.write(out)
    return path


@case("npz_inflates_to_3gib")
def _(d):
    """3 MB of deflate that really inflates to 3 GiB of zeros (a 1 MiB block of zeros
    compressed once after a full flush, repeated): refused by the dataset memory limit before
    a byte is inflated."""
    n = 3 * (1 << 30) // 4
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        hdr, {"descr": "<f4", "fortran_order": False, "shape": (n,)})
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(hdr.getvalue()) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    data = head + block * (n * 4 // (1 << 20)) + c.flush()
    y = npy_of(np.zeros(1, np.float32))
    path = zip64(os.path.join(d, "d.npz"),
                 [("X.npy", 8, n * 4 + len(hdr.getvalue()), 0, data),
                  ("y.npy", 0, len(y), zlib.crc32(y), y)])
    return train(d, path), "og_data_options.max_memory"


@case("npz_ratio_lie")
def _(d):
    path = npz_with(d, [("X.npy", npy_of(np.zeros((4, 3), np.float32))),
                        ("y.npy", npy_of(np.zeros((4, 1), np.float32)))])
    b = bytearray(open(path, "rb").read())
    cd = b.find(b"PK\x01\x02")
    b[cd + 24:cd + 28] = struct.pack("<I", 0x7FFFFFF0)
    write(d, "d.npz", bytes(b))
    return train(d, path), "cannot inflate"


@case("npz_crc_mismatch")
def _(d):
    path = npz_with(d, [("X.npy", npy_of(np.zeros((4, 3), np.float32))),
                        ("y.npy", npy_of(np.zeros((4, 1), np.float32)))])
    b = bytearray(open(path, "rb").read())
    cd = b.find(b"PK\x01\x02")
    b[cd + 16] ^= 1
    write(d, "d.npz", bytes(b))
    return train(d, path), "CRC mismatch"


@case("npz_not_a_zip")
def _(d):
    return train(d, write(d, "d.npz", b"PK" + b"\0" * 100)), "not a zip"


@case("csv_ragged")
def _(d):
    return train(d, write(d, "d.csv", b"a,b,c,y\n1,2,3,4\n1,2\n")), "line 3"


@case("csv_not_numbers")
def _(d):
    return train(d, write(d, "d.csv", b"a,b,c,y\n1,2,3,4\n1,zz,3,4\n")), "line 3"


@case("data_is_a_fifo")
def _(d):
    os.mkfifo(os.path.join(d, "d.csv"))
    return train(d, os.path.join(d, "d.csv")), "not a regular file"


# ---- checkpoints ----------------------------------------------------------------------

def good_data(d):
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    return npz_with(d, [("X.npy", npy_of(x)), ("y.npy", npy_of(x[:, :1].copy()))])


@case("checkpoint_garbage")
def _(d):
    ck = write(d, "c.ckpt", b"OGCKPT01" + b"\x55" * 200)
    return train(d, good_data(d), "--checkpoint", ck, "--resume"), "damaged"


@case("checkpoint_sparse_8gib")
def _(d):
    ck = os.path.join(d, "c.ckpt")
    with open(ck, "wb") as f:
        f.write(b"OGCKPT01")
        f.truncate(1 << 33)
    return train(d, good_data(d), "--checkpoint", ck, "--resume"), "not a checkpoint of this"


@case("checkpoint_is_a_fifo")
def _(d):
    os.mkfifo(os.path.join(d, "c.ckpt"))
    return train(d, good_data(d), "--checkpoint", os.path.join(d, "c.ckpt"), "--resume"), \
        "not a regular file"


@case("checkpoint_is_a_folder")
def _(d):
    os.mkdir(os.path.join(d, "c.ckpt"))
    return train(d, good_data(d), "--checkpoint", os.path.join(d, "c.ckpt"), "--resume"), \
        "is a folder"


# ---- the command line ---------------------------------------------------------------

@case("max_memory_junk", rc=2)
def _(d):
    return ["run", relu_model(d), "--max-memory", "12XB", "-o", d], "--max-memory"


@case("max_memory_too_small")
def _(d):
    return run(d, relu_model(d), x=np.ones(64, np.float32)) + ["--max-memory", "16"], \
        "memory budget"


# ---- running -------------------------------------------------------------------------

def strace_ok():
    try:
        return subprocess.run(["strace", "-f", "-e", "trace=openat", "-o", "/dev/null", "true"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    cli = os.path.abspath(sys.argv[1])
    if "--list" in sys.argv:
        for name, _, _ in CASES:
            print(name)
        print(len(CASES), "kinds")
        return 0
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    # LeakSanitizer cannot run under ptrace: sanitized builds check leaks, release builds
    # check which files are opened
    trace = not sanitized() and strace_ok()
    failures = []
    n = 0
    with tempfile.TemporaryDirectory() as top:
        write(top, "SECRET", b"never to be read by a model of a case folder\n")
        for name, want_rc, make in CASES:
            if only and name != only:
                continue
            n += 1
            d = os.path.join(top, name)
            os.mkdir(d)
            args, words = make(d)
            cmd = [cli] + args
            log = os.path.join(top, name + ".strace")
            if trace:
                cmd = ["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", log] + cmd
            rc, out = run_limited(cmd, timeout=30)
            problems = []
            if out == "hung":
                problems.append("hung (no answer in 30 s)")
            elif rc != want_rc:
                problems.append(f"exit status {rc}, wanted {want_rc}")
            if out != "hung" and words not in out:
                problems.append(f"no '{words}' in the message")
            if trace and os.path.exists(log):
                opened = [line for line in open(log) if "SECRET" in line]
                if opened:
                    problems.append("opened SECRET: " + opened[0].strip()[:120])
            lines = [x for x in out.strip().splitlines() if x.strip()]
            last = lines[-1][:150] if lines else ""
            print("ok  " if not problems else "FAIL", f"{name}: rc {rc} | {last}")
            if problems:
                failures.append(f"{name}: " + "; ".join(problems))
    for f in failures:
        print("FAIL:", f)
    print(f"{n} kinds{' (files opened: traced)' if trace else ''}: "
          f"{n - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
