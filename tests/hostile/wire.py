"""A minimal protobuf wire-format writer, for hostile models the onnx package cannot build
(its own serializer and parser stop at 100 nested messages).  Field numbers are onnx.proto's."""


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((num << 3) | 2) + varint(len(data)) + data


# ModelProto
def model(graph, opset=17, ir_version=8):
    opset_msg = field_bytes(1, "") + field_varint(2, opset)
    return field_varint(1, ir_version) + field_bytes(8, opset_msg) + field_bytes(7, graph)


# GraphProto: node 1, name 2, input 11, output 12
def graph(nodes=(), name="g", inputs=(), outputs=()):
    out = b"".join(field_bytes(1, n) for n in nodes) + field_bytes(2, name)
    out += b"".join(field_bytes(11, v) for v in inputs)
    out += b"".join(field_bytes(12, v) for v in outputs)
    return out


# NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
def node(op, inputs, outputs, name="", attrs=()):
    out = b"".join(field_bytes(1, i) for i in inputs) + b"".join(field_bytes(2, o) for o in outputs)
    out += field_bytes(3, name) + field_bytes(4, op)
    return out + b"".join(field_bytes(5, a) for a in attrs)


# AttributeProto: name 1, g 6, type 20 (GRAPH = 5)
def graph_attr(name, g):
    return field_bytes(1, name) + field_bytes(6, g) + field_varint(20, 5)


# TypeProto: tensor_type 1 (elem_type 1), sequence_type 4 (elem_type 1)
def tensor_type(elem=1):
    return field_bytes(1, field_varint(1, elem))


def sequence_type(elem_type):
    return field_bytes(4, field_bytes(1, elem_type))


# ValueInfoProto: name 1, type 2
def value_info(name, type_proto=None):
    return field_bytes(1, name) + (field_bytes(2, type_proto) if type_proto is not None else b"")


def nested_if(depth):
    """A model whose If nodes nest `depth` subgraphs deep (then_branch inside then_branch)."""
    y = value_info("y", tensor_type())
    g = graph([node("Constant", [], ["y"], "leaf")], "leaf", outputs=[y])
    for i in range(depth):
        n = node("If", ["c"], ["y"], f"if{i}",
                 [graph_attr("then_branch", g), graph_attr("else_branch", g if i == 0 else b"")])
        g = graph([n], f"g{i}", outputs=[y])
    c = value_info("c", field_bytes(1, field_varint(1, 9)))
    top = graph([node("If", ["c"], ["y"], "top", [graph_attr("then_branch", g),
                                                  graph_attr("else_branch", g)])],
                "top", inputs=[c], outputs=[y])
    return model(top)


def nested_sequence_type(depth):
    """A model whose input x is seq(seq(...(tensor(float))...)) `depth` levels deep."""
    t = tensor_type()
    for _ in range(depth):
        t = sequence_type(t)
    x = value_info("x", t)
    y = value_info("y", tensor_type())
    return model(graph([node("Identity", ["x"], ["y"], "id")], "g", inputs=[x], outputs=[y]))
