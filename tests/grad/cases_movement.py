"""Gradient cases of the movement rules: Concat, Split, Slice, Pad, Tile, Expand, Trilu,
CumSum and Einsum, at the opsets where their forms change (attributes vs inputs)."""
import numpy as np
from helpers import model, node, rand

I64 = np.int64
BIG = np.iinfo(np.int64).max
SMALL = np.iinfo(np.int64).min


def ints(*v):
    return np.array(v, I64)


def dynamic(m, name, axis):
    """make dim `axis` of graph input `name` symbolic (and forget inferred shapes)"""
    del m.graph.value_info[:]
    for i in m.graph.input:
        if i.name == name:
            i.type.tensor_type.shape.dim[axis].dim_param = "n"
    for o in m.graph.output:
        for k, d in enumerate(o.type.tensor_type.shape.dim):
            d.dim_param = "o%d" % k
    return m


def cases():
    out = []

    def add(name, nodes, inputs, outputs, weights=None, opset=17, consts=None):
        out.append((name, model(nodes, inputs, outputs, weights, opset, consts), inputs))

    # Concat: an input and two weights, positive and negative axes, old and new opsets
    a, w1, w2 = rand(2, 3, 4), rand(2, 1, 4), rand(2, 2, 4)
    for opset, axis in ((7, 1), (11, -2), (13, 1)):
        add("concat_v%d_axis%d" % (opset, axis),
            [node("Concat", ["a", "w1", "w2"], ["y"], axis=axis)], {"a": a}, ["y"],
            {"w1": w1, "w2": w2}, opset)
    b = rand(3, 2)
    add("concat_last", [node("Concat", ["b", "b2"], ["y"], axis=-1)], {"b": b}, ["y"],
        {"b2": rand(3, 3)}, 13)
    m = model([node("Concat", ["a", "w2", "a"], ["y"], axis=1)], {"a": a}, ["y"], {"w2": w2},
              13)
    out.append(("concat_dynamic_v13", dynamic(m, "a", 1), {"a": a}))

    # Split: attribute sizes (11), input sizes (13), num_outputs (18), unused outputs
    x = rand(2, 6, 3)
    add("split_v11_attr", [node("Split", ["x"], ["y0", "y1", "y2"], axis=1, split=[1, 2, 3])],
        {"x": x}, ["y0", "y1", "y2"], opset=11)
    add("split_v11_equal_neg", [node("Split", ["x"], ["y0", "y1"], axis=-2)], {"x": x},
        ["y0", "y1"], opset=11)
    add("split_v13_input", [node("Split", ["x", "s"], ["y0", "y1", "y2"], axis=-1)],
        {"x": x}, ["y0", "y1", "y2"], opset=13, consts={"s": ints(1, 1, 1)})
    add("split_v13_unused", [node("Split", ["x", "s"], ["y0", "y1", "y2"], axis=1)],
        {"x": x}, ["y0", "y2"], opset=13, consts={"s": ints(2, 3, 1)})
    add("split_v18_num_outputs", [node("Split", ["x"], ["y0", "y1", "y2"], axis=1,
                                       num_outputs=3)], {"x": x}, ["y1"], opset=18)
    add("split_v7_unused", [node("Split", ["x"], ["y0", "y1"], axis=0)], {"x": x}, ["y1"],
        opset=7)

    # Slice: attribute form (9), inputs (10, 13) with steps, negative steps and axes
    x = rand(4, 5, 6)
    add("slice_v9_attr", [node("Slice", ["x"], ["y"], starts=[1, -4], ends=[3, 1000],
                               axes=[0, 2])], {"x": x}, ["y"], opset=9)
    add("slice_v9_noaxes", [node("Slice", ["x"], ["y"], starts=[-3, 1], ends=[-1, 4])],
        {"x": x}, ["y"], opset=9)
    for opset in (10, 13):
        add("slice_v%d_step1" % opset, [node("Slice", ["x", "s", "e", "a"], ["y"])], {"x": x},
            ["y"], opset=opset, consts={"s": ints(1, 0), "e": ints(BIG, -2), "a": ints(-1, 1)})
    add("slice_v13_step2", [node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, ["y"],
        opset=13, consts={"s": ints(0, 1), "e": ints(6, 5), "a": ints(2, 1), "t": ints(2, 3)})
    add("slice_v13_neg1", [node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, ["y"],
        opset=13, consts={"s": ints(-1), "e": ints(SMALL), "a": ints(-1), "t": ints(-1)})
    add("slice_v13_neg2", [node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, ["y"],
        opset=13, consts={"s": ints(4, 3), "e": ints(0, -100), "a": ints(1, 0),
                          "t": ints(-2, -3)})
    add("slice_v10_mixed", [node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, ["y"],
        opset=10, consts={"s": ints(2, 0, 5), "e": ints(-100, 4, 0), "a": ints(0, 1, 2),
                          "t": ints(-1, 3, -2)})
    m = model([node("Slice", ["x", "s", "e", "a"], ["y"])], {"x": x}, ["y"], opset=13,
              consts={"s": ints(1), "e": ints(5), "a": ints(2)})
    out.append(("slice_dynamic_batch", dynamic(m, "x", 0), {"x": x}))

    # runtime bounds (graph inputs) and a dynamic sliced dim: the index-grid scatter path
    add("slice_runtime_v13", [node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
        {"x": x, "s": ints(-1, 0), "e": ints(0, 5), "a": ints(1, 2), "t": ints(-2, 2)}, ["y"],
        opset=13)
    add("slice_runtime_v11", [node("Slice", ["x", "s", "e"], ["y"])],
        {"x": x, "s": ints(1, 2), "e": ints(3, -1)}, ["y"], opset=11)
    m = model([node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, ["y"], opset=13,
              consts={"s": ints(-2), "e": ints(0), "a": ints(2), "t": ints(-1)})
    out.append(("slice_dynamic_axis", dynamic(m, "x", 2), {"x": x}))

    # Pad: constant (attribute form 10, inputs 13 with a trained value, axes 18, crops),
    # edge, reflect, wrap
    x = rand(3, 4, 5)
    add("pad_v10_const", [node("Pad", ["x"], ["y"], pads=[1, 0, 2, 0, 3, 1], value=0.5)],
        {"x": x}, ["y"], opset=10)
    add("pad_v13_const_value", [node("Pad", ["x", "p", "v"], ["y"])], {"x": x}, ["y"],
        {"v": np.array(0.7, np.float32)}, opset=13, consts={"p": ints(0, 2, 1, 1, 0, 2)})
    add("pad_v13_crop", [node("Pad", ["x", "p"], ["y"])], {"x": x}, ["y"], opset=13,
        consts={"p": ints(-1, 2, 0, 1, -1, -2)})
    add("pad_v18_axes", [node("Pad", ["x", "p", "", "a"], ["y"])], {"x": x}, ["y"], opset=18,
        consts={"p": ints(1, 2, 2, 0), "a": ints(-1, 0)})
    for mode in ("edge", "reflect"):
        add("pad_v10_%s" % mode, [node("Pad", ["x"], ["y"], mode=mode,
                                       pads=[1, 0, 2, 2, 0, 1])], {"x": x}, ["y"], opset=10)
        add("pad_v13_%s" % mode, [node("Pad", ["x", "p"], ["y"], mode=mode)], {"x": x}, ["y"],
            opset=13, consts={"p": ints(0, 3, 1, 0, 2, 4)})
    add("pad_v9_reflect", [node("Pad", ["x"], ["y"], mode="reflect", pads=[2, 1, 0, 0, 3, 4])],
        {"x": x}, ["y"], opset=9)
    add("pad_v7_edge", [node("Pad", ["x"], ["y"], mode="edge", pads=[0, 2, 1, 3, 0, 0])],
        {"x": x}, ["y"], opset=7)
    add("pad_runtime_const", [node("Pad", ["x", "p", "v"], ["y"])],
        {"x": x, "p": ints(1, -1, 2, 0, 2, -2)}, ["y"], {"v": np.array(0.3, np.float32)},
        opset=13)
    add("pad_runtime_reflect", [node("Pad", ["x", "p"], ["y"], mode="reflect")],
        {"x": x, "p": ints(1, 0, 2, 2, 1, 3)}, ["y"], opset=16)
    add("pad_v19_wrap_big", [node("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": x}, ["y"],
        opset=19, consts={"p": ints(0, 5, 0, 0, 9, 0)})
    m = model([node("Pad", ["x", "p"], ["y"], mode="edge")], {"x": x}, ["y"], opset=17,
              consts={"p": ints(0, 1, 2, 0, 1, 1)})
    out.append(("pad_dynamic_edge", dynamic(m, "x", 1), {"x": x}))
    add("pad_v19_wrap", [node("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": x}, ["y"],
        opset=19, consts={"p": ints(1, 4, 2, 2, 0, 5)})

    # Tile, Expand
    x = rand(2, 3, 2)
    for opset in (7, 13):
        add("tile_v%d" % opset, [node("Tile", ["x", "r"], ["y"])], {"x": x}, ["y"],
            opset=opset, consts={"r": ints(2, 1, 3)})
    m = model([node("Tile", ["x", "r"], ["y"])], {"x": x}, ["y"], opset=13,
              consts={"r": ints(1, 2, 2)})
    out.append(("tile_dynamic", dynamic(m, "x", 0), {"x": x}))
    add("tile_runtime_v16", [node("Tile", ["x", "r"], ["y"])], {"x": x, "r": ints(3, 1, 2)},
        ["y"], opset=16)
    for opset in (8, 13):
        add("expand_v%d" % opset, [node("Expand", ["x", "s"], ["y"])], {"x": rand(3, 1)},
            ["y"], opset=opset, consts={"s": ints(2, 3, 4)})
    add("expand_same_rank", [node("Expand", ["x", "s"], ["y"])], {"x": rand(1, 4, 1)}, ["y"],
        opset=13, consts={"s": ints(3, 1, 2)})

    # Trilu, CumSum
    x = rand(2, 4, 5)
    for upper in (0, 1):
        add("trilu_upper%d" % upper, [node("Trilu", ["x"], ["y"], upper=upper)], {"x": x},
            ["y"], opset=14)
        add("trilu_upper%d_k" % upper, [node("Trilu", ["x", "k"], ["y"], upper=upper)],
            {"x": x}, ["y"], opset=14, consts={"k": np.array(-1 if upper else 2, I64)})
    for opset in (11, 14):
        for ex in (0, 1):
            for rev in (0, 1):
                ax = 1 if rev else -1
                add("cumsum_v%d_ex%d_rev%d" % (opset, ex, rev),
                    [node("CumSum", ["x", "a"], ["y"], exclusive=ex, reverse=rev)], {"x": x},
                    ["y"], opset=opset, consts={"a": np.array(ax, I64)})
    add("cumsum_axis_i32", [node("CumSum", ["x", "a"], ["y"])], {"x": x}, ["y"], opset=14,
        consts={"a": np.array(0, np.int32)})

    # Einsum
    for tag, eq, shapes in (
            ("matmul", "ij,jk->ik", ((3, 4), (4, 2))),
            ("batched", "bij,bkj->bki", ((2, 3, 4), (2, 2, 4))),
            ("implicit", "ij,jk", ((3, 4), (4, 2))),
            ("transpose", "ijk->kij", ((2, 3, 4),)),
            ("rowsum", "ij->i", ((3, 4),)),
            ("outer", "i,j->ij", ((3,), (4,))),
            ("dot", "ij,ij->", ((3, 4), (3, 4))),
            ("three", "ij,jk,kl->li", ((2, 3), (3, 4), (4, 2))),
            ("sumonly", "ijk,j->i", ((2, 3, 4), (3,))),
            ("ellipsis", "...ij,...jk->...ik", ((2, 3, 4), (2, 4, 2))),
            ("ellipsis_mid", "i...j,jk->k...i", ((3, 2, 2, 4), (4, 3))),
            ("ellipsis_implicit", "b...j,jb", ((2, 3, 4), (4, 2))),
            ("upper", "Ab,bC->CA", ((3, 4), (4, 2)))):
        names = ["a%d" % i for i in range(len(shapes))]
        arrs = {n: rand(*s) for n, s in zip(names, shapes)}
        inputs = {names[0]: arrs[names[0]]}
        weights = {n: arrs[n] for n in names[1:]}
        add("einsum_" + tag, [node("Einsum", names, ["y"], equation=eq)], inputs, ["y"],
            weights, opset=12 if tag == "matmul" else 13)

    # Einsum: diagonals (a subscript repeated in one term) and ellipses that broadcast or
    # are summed away; opset 12 (Unsqueeze/ReduceSum axes as attributes) and 13
    for tag, eq, shapes, opset in (
            ("diag", "ii->i", ((3, 3),), 12),
            ("trace", "ii->", ((3, 3),), 13),
            ("trace_implicit", "ii", ((3, 3),), 12),
            ("diag_batch", "bii,bj->bj", ((2, 3, 3), (2, 4)), 13),
            ("diag_triple", "iii->i", ((3, 3, 3),), 13),
            ("diag_shared", "ii,i->i", ((3, 3), (3,)), 12),
            ("diag_two", "iijj,ij->ji", ((2, 2, 3, 3), (2, 3)), 13),
            ("diag_mid", "ijik->kj", ((3, 2, 3, 4),), 13),
            ("diag_ellipsis", "...ii->...i", ((2, 3, 3),), 13),
            ("diag_other", "ij,jj->ij", ((3, 4), (4, 4)), 12),
            ("bcast", "...ij,...jk->...ik", ((2, 1, 3, 4), (1, 3, 4, 2)), 13),
            ("bcast_v12", "...ij,...jk->...ik", ((2, 1, 3, 4), (1, 3, 4, 2)), 12),
            ("bcast_mid", "i...j,j...k->k...i", ((3, 2, 1, 4), (4, 1, 3, 2)), 13),
            ("bcast_implicit", "...ij,...jk", ((1, 3, 4), (2, 4, 2)), 13),
            ("bcast_letter", "ij,jk->ik", ((3, 1), (3, 2)), 13),
            ("ell_summed", "...ij->ij", ((2, 3, 4),), 13),
            ("ell_summed_v12", "...ij->ij", ((2, 3, 4),), 12),
            ("ell_summed_two", "...ij,...jk->ik", ((2, 1, 3, 4), (1, 3, 4, 2)), 13),
            ("ell_summed_mid", "i...j->ji", ((3, 2, 2, 4),), 13)):
        names = ["a%d" % i for i in range(len(shapes))]
        arrs = {n: rand(*s) for n, s in zip(names, shapes)}
        inputs = {names[0]: arrs[names[0]]}
        weights = {n: arrs[n] for n in names[1:]}
        add("einsum_" + tag, [node("Einsum", names, ["y"], equation=eq)], inputs, ["y"],
            weights, opset=opset)
    # ellipses with symbolic dims: x0's batch dims [n, 1] against x1's [1, m]; at opset 13
    # the broadcast axes are found at run time
    for tag, syms in (("sym_same", ("n", "n")), ("sym_other", ("n", "m"))):
        a0, a1 = rand(2, 1, 3, 4), rand(1, 2, 4, 2)
        m = model([node("Einsum", ["a0", "a1"], ["y"], equation="...ij,...jk->...ik")],
                  {"a0": a0, "a1": a1}, ["y"], opset=13)
        del m.graph.value_info[:]
        for i, (inp, axis) in enumerate(((m.graph.input[0], 0), (m.graph.input[1], 1))):
            inp.type.tensor_type.shape.dim[axis].dim_param = syms[i]
        for k, d in enumerate(m.graph.output[0].type.tensor_type.shape.dim):
            d.dim_param = "o%d" % k
        out.append(("einsum_bcast_" + tag, m, {"a0": a0, "a1": a1}))
    return out
