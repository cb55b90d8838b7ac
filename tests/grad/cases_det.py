"""Gradient cases of Det (src/grad/linalg.c): 1x1, 2x2, batched 3x3 and 4x4, a singular
matrix (whose gradient, the cofactor matrix, is still defined), with opsets 11 and 13 (the
Unsqueeze forms), also against PyTorch's autograd of torch.linalg.det."""
from helpers import model, node, rand


def cases():
    out = []
    torch = {"fn": "det"}
    for tag, shape, opset in (("1x1", (3, 1, 1), 13), ("2x2", (2, 2), 11), ("3x3_batch", (2, 3, 3, 3), 13),
                              ("4x4", (4, 4), 13)):
        x = rand(*shape)
        out.append(("det_" + tag, model([node("Det", ["x"], ["y"])], {"x": x}, ["y"], opset=opset),
                    {"x": x}, torch))
    s = rand(3, 3)
    s[2] = 2 * s[0] - s[1]  # rank 2
    out.append(("det_singular", model([node("Det", ["x"], ["y"])], {"x": s}, ["y"], opset=13),
                {"x": s}, torch))
    # a weight through Det: y = det(x·w)
    x = rand(2, 3, 3)
    out.append(("det_weight", model([node("MatMul", ["x", "w"], ["m"]), node("Det", ["m"], ["y"])],
                                    {"x": x}, ["y"], {"w": rand(3, 3)}, opset=13), {"x": x}))
    return out
