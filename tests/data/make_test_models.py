#!/usr/bin/env python3
"""Write the test models of tests/data (checked in; rerun after changing this script):

- roundtrip.onnx: a model with metadata, value_info, doc strings, symbolic dims, several
  initializer types and attribute kinds, for load -> save -> load tests;
- bad/*.onnx: malformed or invalid models, each with the status onnxgrad must return
  (listed in bad/expected.txt as `file STATUS`)."""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
bad = os.path.join(here, "bad")
os.makedirs(bad, exist_ok=True)


def model(nodes, inputs, outputs, inits=(), opset=17, ir=8, value_info=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def raw_tensor(name, dims, data, dtype=TensorProto.FLOAT):
    """A TensorProto built field by field, so that it may be inconsistent on purpose."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = data
    return t


def fvi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


# ---- round trip -------------------------------------------------------------------------
rt = model(
    [helper.make_node("Add", ["x", "b"], ["y0"], name="add", doc_string="adds the bias"),
     helper.make_node("Relu", ["y0"], ["y1"], name="relu"),
     helper.make_node("Transpose", ["y1"], ["y"], name="tr", perm=[1, 0]),
     helper.make_node("Identity", ["i64"], ["i"], name="id")],
    [fvi("x", ["batch", 3])],
    [fvi("y", [3, "batch"]), fvi("i", [2], TensorProto.INT64)],
    [numpy_helper.from_array(np.array([1.5, -2.0, 3.25], np.float32), "b"),
     numpy_helper.from_array(np.array([7, -9], np.int64), "i64")],
    value_info=[fvi("y0", ["batch", 3])])
rt.graph.doc_string = "round-trip fixture"
rt.producer_name = "onnxgrad-tests"
rt.producer_version = "1"
rt.model_version = 3
rt.doc_string = "model doc"
helper.set_model_props(rt, {"author": "onnxgrad", "purpose": "round trip"})
rt.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
onnx.checker.check_model(rt)
onnx.save(rt, os.path.join(here, "roundtrip.onnx"))

# ---- bad models -------------------------------------------------------------------------
expected = []


def save_bad(name, m, status):
    onnx.save(m, os.path.join(bad, name))
    expected.append((name, status))


def save_bytes(name, data, status):
    with open(os.path.join(bad, name), "wb") as f:
        f.write(data)
    expected.append((name, status))


good = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [fvi("x", [2])], [fvi("y", [2])])
gb = good.SerializeToString()
save_bytes("empty.onnx", b"", "OG_ERR_PARSE")
save_bytes("truncated.onnx", gb[: len(gb) // 2], "OG_ERR_PARSE")
save_bytes("random.onnx", bytes(np.random.default_rng(1).integers(0, 256, 512, dtype=np.uint8)),
           "OG_ERR_PARSE")
# field 7 (graph) sent as a varint instead of a length-delimited message
save_bytes("wire_type.onnx", b"\x08\x08" + b"\x38\x05", "OG_ERR_PARSE")
save_bad("cycle.onnx", model([helper.make_node("Relu", ["x", ], ["a"], name="r0"),
                              helper.make_node("Add", ["a", "c"], ["b"], name="add"),
                              helper.make_node("Relu", ["b"], ["c"], name="r1")],
                             [fvi("x", [2])], [fvi("b", [2])]), "OG_ERR_MODEL")
save_bad("dangling.onnx", model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
                                [fvi("x", [2])], [fvi("y", [2])]), "OG_ERR_MODEL")
save_bad("output_not_produced.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                           [fvi("x", [2])], [fvi("z", [2])]), "OG_ERR_MODEL")
save_bad("produced_twice.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r0"),
                                       helper.make_node("Relu", ["x"], ["y"], name="r1")],
                                      [fvi("x", [2])], [fvi("y", [2])]), "OG_ERR_MODEL")
short = raw_tensor("w", [10], np.zeros(3, np.float32).tobytes())
save_bad("missing_init_data.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                         [fvi("x", [10])], [fvi("y", [10])], [short]), "OG_ERR_MODEL")
huge = raw_tensor("w", [1 << 40, 1 << 40], b"")
save_bad("absurd_dims.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                   [fvi("x", [2])], [fvi("y", [2])], [huge]), "OG_ERR_MODEL")
neg = raw_tensor("w", [-3], b"")
save_bad("negative_dim.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                    [fvi("x", [2])], [fvi("y", [2])], [neg]), "OG_ERR_MODEL")
deep = raw_tensor("w", [1] * 12, np.zeros(1, np.float32).tobytes())
save_bad("rank_too_large.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                                      [fvi("x", [1])], [fvi("y", [1])], [deep]), "OG_ERR_UNSUPPORTED")
save_bad("type_mismatch.onnx", model([helper.make_node("Add", ["x", "k"], ["y"], name="add")],
                                     [fvi("x", [2])], [fvi("y", [2])],
                                     [numpy_helper.from_array(np.array([1, 2], np.int64), "k")]),
         "OG_ERR_TYPE")
save_bad("unknown_op.onnx", model([helper.make_node("FooBar", ["x"], ["y"], name="foo")],
                                  [fvi("x", [2])], [fvi("y", [2])]), "OG_ERR_UNSUPPORTED")
save_bad("unknown_domain_op.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")],
               [fvi("x", [2])], [fvi("y", [2])]), "OG_ERR_MODEL")
save_bad("opset_too_new.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                     [fvi("x", [2])], [fvi("y", [2])], opset=30), "OG_ERR_UNSUPPORTED")
save_bad("ir_version_too_old.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                          [fvi("x", [2])], [fvi("y", [2])], ir=2), "OG_ERR_UNSUPPORTED")
for name, loc in (("external_escape.onnx", "../../../etc/passwd"),
                  ("external_absolute.onnx", "/etc/passwd")):
    t = raw_tensor("w", [2], b"")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", loc
    save_bad(name, model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                         [fvi("x", [2])], [fvi("y", [2])], [t]), "OG_ERR_MODEL")
save_bad("wrong_arity.onnx", model([helper.make_node("Add", ["x"], ["y"], name="add")],
                                   [fvi("x", [2])], [fvi("y", [2])]), "OG_ERR_MODEL")
save_bad("duplicate_initializer.onnx",
         model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [fvi("x", [2])],
               [fvi("y", [2])], [numpy_helper.from_array(np.ones(2, np.float32), "w"),
                                 numpy_helper.from_array(np.ones(2, np.float32), "w")]),
         "OG_ERR_MODEL")
save_bad("bad_shape_static.onnx",
         model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [fvi("x", [3])],
               [fvi("y", [3])], [numpy_helper.from_array(np.ones(2, np.float32), "w")]),
         "OG_ERR_SHAPE")

# opsets below 7: forms the load-time upgrade (src/onnx/upgrade.c) cannot rewrite
save_bad("opset_zero.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                  [fvi("x", [2])], [fvi("y", [2])], opset=0, ir=3), "OG_ERR_UNSUPPORTED")
save_bad("old_axis_rank_unknown.onnx",
         model([helper.make_node("Relu", ["x"], ["r"], name="r"),
                helper.make_node("Add", ["r", "b"], ["y"], name="add", broadcast=1, axis=0)],
               [fvi("x", [2, 3]), fvi("b", [2])], [fvi("y", [2, 3])], opset=6, ir=3), "OG_ERR_UNSUPPORTED")
save_bad("old_axis_misfit.onnx",
         model([helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=1)],
               [fvi("x", [2, 3]), fvi("b", [3, 4])], [fvi("y", [2, 3])], opset=6, ir=3), "OG_ERR_MODEL")
save_bad("old_tile1.onnx",
         model([helper.make_node("Tile", ["x", "t", "a"], ["y"], name="tile")],
               [fvi("x", [2, 3]), fvi("t", [], TensorProto.INT64), fvi("a", [], TensorProto.INT64)],
               [fvi("y", [2, 6])], opset=1, ir=3), "OG_ERR_UNSUPPORTED")
save_bad("old_split_input.onnx",
         model([helper.make_node("Split", ["x", "s"], ["y", "z"], name="split", axis=0)],
               [fvi("x", [4]), fvi("s", [2], TensorProto.INT64)], [fvi("y", [1]), fvi("z", [3])],
               opset=1, ir=3), "OG_ERR_UNSUPPORTED")
save_bad("old_cast_name.onnx",
         model([helper.make_node("Cast", ["x"], ["y"], name="cast", to="NOPE")],
               [fvi("x", [2])], [fvi("y", [2])], opset=1, ir=3), "OG_ERR_MODEL")

with open(os.path.join(bad, "expected.txt"), "w") as f:
    for name, status in expected:
        f.write("%s %s\n" % (name, status))

# external data that stays inside the folder: loads fine
ext = os.path.join(here, "external")
os.makedirs(ext, exist_ok=True)
w = np.arange(4, dtype=np.float32)
with open(os.path.join(ext, "weights.bin"), "wb") as f:
    f.write(b"\0" * 8 + w.tobytes())
t = raw_tensor("w", [4], b"")
t.ClearField("raw_data")
t.data_location = TensorProto.EXTERNAL
for k, v in (("location", "weights.bin"), ("offset", "8"), ("length", "16")):
    e = t.external_data.add()
    e.key, e.value = k, v
onnx.save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [fvi("x", [4])],
                [fvi("y", [4])], [t]), os.path.join(ext, "model.onnx"))
print("wrote tests/data")
