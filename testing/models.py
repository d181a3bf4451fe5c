"""Real (tiny) ONNX text models for tests that need a second model, or one with a limit the built-in lacks."""

from __future__ import annotations

from pathlib import Path

import numpy

from ccmemory import embeddings


def tiny_model(folder: Path, dims: int, *, max_positions: int | None = None) -> Path:
    """A token-embedding table fastembed mean-pools, with the built-in model's tokenizer files.

    With ``max_positions``, each token also adds a position embedding from a
    table of that many rows, as BERT-style models do, so a text longer than
    that makes onnxruntime fail while shorter texts embed: a model that fails
    on some texts only.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = numpy.random.default_rng(7)
    initializers = [numpy_helper.from_array(rng.standard_normal((30522, dims)).astype(numpy.float32), "table")]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["tokens" if max_positions else "last_hidden_state"],
                              axis=0)]
    if max_positions:
        initializers += [
            numpy_helper.from_array(rng.standard_normal((max_positions, dims)).astype(numpy.float32), "positions"),
            numpy_helper.from_array(numpy.array([1], dtype=numpy.int64), "one"),
            numpy_helper.from_array(numpy.array(0, dtype=numpy.int64), "zero"),
            numpy_helper.from_array(numpy.array(1, dtype=numpy.int64), "step"),
        ]
        nodes += [
            helper.make_node("Shape", ["input_ids"], ["shape"]),
            helper.make_node("Gather", ["shape", "one"], ["length_1d"], axis=0),
            helper.make_node("Squeeze", ["length_1d"], ["length"]),
            helper.make_node("Range", ["zero", "length", "step"], ["position_ids"]),
            helper.make_node("Gather", ["positions", "position_ids"], ["by_position"], axis=0),
            helper.make_node("Add", ["tokens", "by_position"], ["last_hidden_state"]),
        ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", dims])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True)
    onnx.save(model, folder / "model.onnx")
    bundled = Path(embeddings.__file__).parent / "model_files"
    for name in embeddings.BUNDLED_FILES:
        (folder / name).write_bytes((bundled / name).read_bytes())
    return folder
