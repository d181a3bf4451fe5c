"""The offline model, its checks, and switching to a second configured model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy
import pytest

from ccmemory import embeddings, memories, projects, search, vectors
from ccmemory.embedding_text import MAX_READ_CHARS, MIN_CONTEXT_CHARS, context_before, sentence_spans
from ccmemory.embeddings import ModelSpec
from testing.models import tiny_model


def test_builtin_model_files_verify_and_nothing_is_downloaded(home, embedder):
    assert embeddings.check_builtin_files() == []
    assert embedder.model_id == embeddings.BUILTIN_MODEL_ID
    assert embedder.dims == 384
    vector = numpy.frombuffer(embedder.embed_query("hello world"), dtype=numpy.float32)
    assert vector.shape == (384,)
    assert float(numpy.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-3)
    fresh = embeddings.Embedder(embeddings.ModelSpec())  # queries made side by side are each what one alone gets
    wanted = ["postgres version", "hello world", "postgres version"]
    assert fresh.embed_queries(wanted) == [embedder.embed_query(text) for text in wanted]


def test_a_tampered_tokenizer_is_refused(home, monkeypatch, tmp_path):
    fake_package = tmp_path / "pkg"
    (fake_package / "model_files").mkdir(parents=True)
    for name in [*embeddings.BUNDLED_FILES, embeddings.FAST_GRAPH_FILE]:
        (fake_package / "model_files" / name).write_text("{}")
    monkeypatch.setattr(embeddings, "__file__", str(fake_package / "embeddings.py"))
    problems = embeddings.check_builtin_files()
    assert len(problems) == len(embeddings.BUNDLED_FILES) + 1
    assert all("sha256" in problem for problem in problems)
    with pytest.raises(embeddings.ModelError, match="failed verification"):
        embeddings.builtin_model_dir()


def test_builtin_vectors_do_not_depend_on_batch_order_or_neighbours(home, embedder):
    texts = ["We moved to PostgreSQL 17", "ok", "The deploy script retries three times before paging someone "
             "on call, then rolls back the release and posts the failing step to the channel."] * 2 + ["x " * 400]
    together = embedder.embed(texts)
    assert embedder.embed(texts[::-1])[::-1] == together
    assert [embedder.embed([text])[0] for text in texts] == together
    assert together[0] == together[3]


def test_the_model_folders_of_removed_installs_are_dropped(home, tmp_path):
    models = home / "models"
    gone, elsewhere, unstamped = (models / f"all-MiniLM-L6-v2-int8-8199be6f-{name}" for name in ("gone", "live", "old"))
    live_onnx = tmp_path / "other-install" / "model.onnx"
    live_onnx.parent.mkdir()
    live_onnx.write_bytes(b"onnx")
    for folder, onnx in ((gone, tmp_path / "removed" / "model.onnx"), (elsewhere, live_onnx)):
        folder.mkdir(parents=True)
        (folder / "verified").write_text(f"{onnx}|4|0")
    unstamped.mkdir()
    (unstamped / "model.onnx").symlink_to(tmp_path / "removed-too" / "model.onnx")
    assembling = models / "all-MiniLM-L6-v2-int8-8199be6f-assembling"  # another process is writing it: no stamp, no link
    assembling.mkdir()
    (assembling / "tokenizer.json").write_text("{}")
    kept = embeddings.builtin_model_dir()
    assert sorted(path.name for path in models.iterdir() if path.is_dir()) == sorted(
        [kept.name, elsewhere.name, assembling.name])


def test_calls_side_by_side_give_the_vectors_of_calls_in_sequence(home):
    texts = [f"Turn {number}: we moved the nightly backup to {number} a.m. " * (1 + number % 5) for number in range(12)]
    contexts = [None if number % 3 == 0 else f"When does backup {number} run?" for number in range(12)]
    folder = embeddings.builtin_model_dir()
    side_by_side = embeddings._OnnxEncoder(folder, 2)
    together = side_by_side.encode(texts, contexts)
    assert side_by_side.encode(texts[::-1], contexts[::-1])[::-1] == together
    in_sequence = embeddings._OnnxEncoder(folder, None, parallel_calls=False).encode(texts, contexts)
    for one, other in zip(together, in_sequence):
        assert numpy.abs(numpy.frombuffer(one, numpy.float32) - numpy.frombuffer(other, numpy.float32)).max() < 1e-5


def test_the_fast_graph_reads_the_shipped_weights_and_keeps_todays_vectors(home, embedder):
    onnx = pytest.importorskip("onnx")
    graph = onnx.ModelProto.FromString(embeddings.fast_graph())
    shipped_size = embeddings.builtin_onnx_path().stat().st_size
    for tensor in graph.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            where = {entry.key: entry.value for entry in tensor.external_data}
            assert where["location"] == "model.onnx"
            assert int(where["offset"]) + int(where["length"]) <= shipped_size
        else:
            assert len(tensor.raw_data) < 1024, tensor.name
    texts = ["We moved to PostgreSQL 17", "Edited src/app/db.py: the pool now closes idle connections after 30 s",
             "What did Caroline research? Adoption agencies."]
    today = embeddings._OnnxEncoder(embeddings.builtin_model_dir(), None, graph=b"").encode(texts)
    for old, new in zip(today, embedder.embed(texts)):
        cosine = float(numpy.dot(numpy.frombuffer(old, numpy.float32), numpy.frombuffer(new, numpy.float32)))
        assert cosine > 0.98


def test_the_compact_graph_is_what_the_script_builds_and_gives_the_exported_graphs_vectors(home, monkeypatch):
    pytest.importorskip("onnx")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "scripts"))
    import quantize_model

    shipped = quantize_model.shipped_bytes()
    compact, _ = quantize_model.build(shipped=shipped)
    assert hashlib.sha256(compact).hexdigest() == embeddings.FAST_GRAPH_SHA256
    exported, _ = quantize_model.build(shipped=shipped, compact=False)
    texts = ["ok", "We moved to PostgreSQL 17", "Edited src/app/db.py: the pool now closes idle connections after "
             "30 s " * 12, "x " * 400]
    contexts = [None, "Which database do we run?", None, None]
    folder = embeddings.builtin_model_dir()
    new, old = (embeddings._OnnxEncoder(folder, 1, graph=graph).encode(texts, contexts) for graph in (compact, exported))
    cosines = [float(numpy.dot(numpy.frombuffer(a, numpy.float32), numpy.frombuffer(b, numpy.float32)))
               for a, b in zip(new, old)]
    assert min(cosines) > 0.99 and sum(cosines) / len(cosines) > 0.997, cosines


def test_the_configured_model_comes_from_config_json(home):
    assert embeddings.configured_spec().is_builtin
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"embedding": {"model": "BAAI/bge-small-en-v1.5"}}))
    spec = embeddings.configured_spec()
    assert spec == ModelSpec(name="BAAI/bge-small-en-v1.5") and spec.model_id == "BAAI/bge-small-en-v1.5"


def test_a_second_configured_model_re_embeds_everything_and_never_mixes(vdb, project_dir, embedder, tmp_path):
    pytest.importorskip("onnx")
    project = projects.project_id(vdb, project_dir)
    texts = ["Builds run on GitHub Actions", "Secrets live in Vault", "The API is versioned under /v2"]
    made = [memories.add(vdb, project_id=project, content=text) for text in texts]
    assert embeddings.embed_pending(vdb, embedder) == 3
    assert search.search(vdb, "where are secrets kept", project_id=project, mode="semantic",
                         embedder=embedder, limit=1)[0].memory.id == made[1].id

    second = embeddings.Embedder(ModelSpec(name=embeddings.DEFAULT_MODEL, path=str(tiny_model(tmp_path / "tiny", 32))))
    assert second.model_id != embedder.model_id and second.dims == 32
    assert embeddings.pending_count(vdb, second.model_id) == 3
    assert embeddings.embed_pending(vdb, second) == 3
    stored = vdb.rows("SELECT m.model_id, length(e.vector) AS size FROM memory_embeddings e "
                      "JOIN embedding_models m ON m.id = e.model")
    assert stored == [{"model_id": second.model_id, "size": 32}] * 3  # int8: one byte per dimension
    assert vdb.scalar("SELECT value FROM meta WHERE key = 'vector_index:memory'") == f"{second.model_id}|32"
    assert vdb.scalar("SELECT COUNT(*) FROM memory_vec") == 3
    hits = search.search(vdb, "Vault", project_id=project, mode="semantic", embedder=second, limit=3)
    assert {hit.memory.id for hit in hits} <= {memory.id for memory in made}

    assert embeddings.pending_count(vdb, embedder.model_id) == 3
    assert embeddings.embed_pending(vdb, embedder) == 3
    assert {row["model_id"] for row in vdb.rows("SELECT m.model_id FROM memory_embeddings e "
                                                "JOIN embedding_models m ON m.id = e.model")} == {embedder.model_id}


def test_content_change_makes_a_memory_pending_again(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    memory = memories.add(vdb, project_id=project, content="first wording")
    embeddings.embed_pending(vdb, embedder)
    assert embeddings.pending_count(vdb, embedder.model_id) == 0
    with vdb.transaction():
        vdb.execute("UPDATE memories SET content = 'second wording' WHERE id = ?", (memory.id,))
    assert embeddings.pending_count(vdb, embedder.model_id) == 1
    assert embeddings.embed_pending(vdb, embedder) == 1
    assert vdb.scalar("SELECT COUNT(*) FROM memory_vec") == 1


def test_length_batches_group_similar_lengths_under_the_token_budget():
    lengths = [250, 12, 30, 250, 14, 90, 11, 240]
    batches = embeddings.length_batches(lengths, max_tokens=512, max_items=3)
    assert sorted(index for batch in batches for index in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 3 and len(batch) * max(lengths[i] for i in batch) <= 512
    assert [lengths[i] for i in batches[0]] == [11, 12, 14]


def test_an_observation_is_embedded_from_its_request_and_changed_lines(vdb, project_dir, tmp_path):
    from ccmemory import sessions
    from ccmemory.embedding_text import condensed

    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Fix the retry delay of the uploader"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {}}]}},
    ]
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    project = projects.project_id(vdb, project_dir)
    sessions.ensure(vdb, "s1", project, transcript_path=str(transcript))
    content = "Edited up.py\n- def retry():\n-     delay = 1\n+ def retry():\n+     delay = 5"
    memories.add(vdb, project_id=project, content=content, session_id="s1", source="capture",
                 metadata={"tool_use_id": "toolu_1"})
    rows = vdb.rows("SELECT m.seq, m.content, m.source, m.metadata, s.transcript_path FROM memories m "
                    "JOIN sessions s ON s.id = m.session_id")
    text = embeddings.texts_to_embed(rows, {})[0]
    assert text == "Request: Fix the retry delay of the uploader\n" + condensed(content)
    assert text.splitlines()[1:] == ["Edited up.py", "def retry():", "-     delay = 1", "+     delay = 5"]


def test_memories_that_are_not_captured_tool_calls_are_embedded_as_written():
    long_summary = "Session summary\nDecisions:\n" + "\n".join(f"- decision {n}" for n in range(30))
    rows = [{"content": long_summary, "source": "summary"}, {"content": "Anna: hi", "source": "manual"}]
    assert embeddings.texts_to_embed(rows, {}) == [long_summary, "Anna: hi"]



NOTE = ("Ben: Hey Anna! Long time no talk, how is the studio going? Last week was wild, fashion editors "
        "noticed my sketches. Anyway, the kids are fine.")


def test_a_memory_someone_wrote_gets_a_vector_per_sentence_and_a_captured_call_none(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    note = memories.add(vdb, project_id=project, content=NOTE)
    single = memories.add(vdb, project_id=project, content="Builds run on GitHub Actions.")
    call = memories.add(vdb, project_id=project, content="Bash: pytest -q. All tests pass. Ran in 3 s.",
                        source="capture")
    assert embeddings.embed_pending(vdb, embedder) == 3
    counts = {row["item_seq"]: row["parts"] for row in vdb.rows(
        "SELECT item_seq, COUNT(*) AS parts FROM memory_embeddings GROUP BY item_seq")}
    seq = {memory.id: vdb.scalar("SELECT seq FROM memories WHERE id = ?", (memory.id,)) for memory in (note, single, call)}
    assert counts == {seq[note.id]: 5, seq[single.id]: 1, seq[call.id]: 1}  # "Ben: Hey Anna!" has three words
    # The note's own vector is the one it always had; a sentence's is its word pieces' mean as read in the note.
    stored = vdb.rows("SELECT part, vector FROM memory_embeddings WHERE item_seq = ? ORDER BY part", (seq[note.id],))
    spans = sentence_spans(NOTE)
    made = embedder.embed([NOTE] * 5, None, [None, *spans])
    assert [row["vector"] for row in stored] == [vectors.quantize(vector) for vector in made]
    assert made[0] == embedder.embed([NOTE])[0]
    start, end = spans[2]
    alone = numpy.frombuffer(embedder.embed([NOTE[start:end]])[0], numpy.float32)
    within = numpy.frombuffer(made[3], numpy.float32)
    assert 0.5 < float(alone @ within) < 0.99  # the sentence, coloured by the rest of the note
    # A question about one sentence is nearer its vector than the note's own, and search scores the best.
    hits = search.search(vdb, "Who noticed the sketches?", project_id=project, mode="semantic", limit=1)
    assert hits[0].memory.id == note.id


def test_sentences_are_cut_at_their_ends_and_short_ones_get_no_vector():
    text = "Wow! The deploy uses file.py and version 3.5 now.\nThen the cache warms up  \n\n  e.g. ok. Yes"
    assert [text[start:end] for start, end in sentence_spans(text)] == [
        "The deploy uses file.py and version 3.5 now.", "Then the cache warms up"]
    assert sentence_spans("One sentence only, said once.") == []
    assert sentence_spans("Thanks, Gina! Sure! Ok.") == []


def test_a_text_the_model_fails_on_is_reported_and_the_rest_embedded(vdb, project_dir, tmp_path):
    pytest.importorskip("onnx")
    project = projects.project_id(vdb, project_dir)
    short = embeddings.Embedder(ModelSpec(path=str(tiny_model(tmp_path / "short", 8, max_positions=32))))
    texts = ["Builds run on GitHub Actions", "word " * 200, "Secrets live in Vault", "The API is versioned"]
    made = [memories.add(vdb, project_id=project, content=text) for text in texts]
    with pytest.raises(Exception):  # noqa: B017 - whatever the model runtime raises on an over-long input
        embeddings.embed_pending(vdb, short)
    failures: list[tuple[str, int]] = []
    done = embeddings.embed_pending(vdb, short, on_error=lambda kind, row, exc: failures.append((kind, row["seq"])))
    assert done == 3
    assert failures == [("memory", vdb.scalar("SELECT seq FROM memories WHERE id = ?", (made[1].id,)))]
    assert [row["id"] for row in vdb.rows("SELECT id FROM memories WHERE needs_embedding = 1")] == [made[1].id]
    assert embeddings.pending_count(vdb, short.model_id) == 1  # left for a later run, not marked done


def test_a_models_query_and_document_prefixes_go_before_what_it_embeds(home, tmp_path):
    pytest.importorskip("onnx")
    folder = str(tiny_model(tmp_path / "tiny", 32))
    plain = embeddings.Embedder(ModelSpec(name=embeddings.DEFAULT_MODEL, path=folder))
    settings = {"model": embeddings.DEFAULT_MODEL, "path": folder, "query_prefix": "query: ",
                "document_prefix": "passage: "}
    e5_like = embeddings.Embedder(ModelSpec.from_settings(settings))
    assert e5_like.spec.query_prefix == "query: " and e5_like.spec.document_prefix == "passage: "
    assert e5_like.embed(["We moved to PostgreSQL 17"]) == plain.embed(["passage: We moved to PostgreSQL 17"])
    assert e5_like.embed_query("postgres version") == plain.embed(["query: postgres version"])[0]
    # A sentence's span moves with the prefix that leads its text, and not when a context leads instead.
    text, shift = "We moved to PostgreSQL 17. The old cluster is gone now.", len("passage: ")
    assert e5_like.embed([text, text], [None, "Where is the database?"], [(27, 55), (27, 55)]) == plain.embed(
        ["passage: " + text, text], [None, "passage: Where is the database?"], [(27 + shift, 55 + shift), (27, 55)])
    assert e5_like.model_id != plain.model_id  # vectors of other input texts are another model's
    assert not ModelSpec(query_prefix="query: ").is_builtin


def test_a_local_folder_runs_on_ccmemorys_encoder_as_the_shipped_graph_does(home, tmp_path):
    import shutil

    folder = tmp_path / "my-model"
    folder.mkdir()
    for name in embeddings.FOLDER_FILES:  # the built-in model's own files, copied (its model.onnx is a link)
        shutil.copyfile(embeddings.builtin_model_dir() / name, folder / name)
    local = embeddings.Embedder(ModelSpec.from_settings({"path": str(folder)}))
    assert isinstance(local._encoder, embeddings._OnnxEncoder)  # not fastembed: nothing to download or name
    assert local.model_id.startswith("folder@") and local.dims == 384
    texts = ["We moved to PostgreSQL 17", "x " * 400]
    shipped = embeddings._OnnxEncoder(embeddings.builtin_model_dir(), None, graph=b"")
    assert local.embed(texts) == shipped.encode(texts)  # same pooling, normalisation and 256-token cut


def test_a_folder_models_id_follows_its_files_not_its_place(vdb, project_dir, tmp_path):
    pytest.importorskip("onnx")
    import os
    import shutil

    project = projects.project_id(vdb, project_dir)
    for text in ("Builds run on GitHub Actions", "Secrets live in Vault"):
        memories.add(vdb, project_id=project, content=text)
    folder = tiny_model(tmp_path / "tiny", 16)
    first = embeddings.Embedder(ModelSpec(path=str(folder)))
    assert embeddings.embed_pending(vdb, first) == 2 and embeddings.pending_count(vdb, first.model_id) == 0

    os.utime(folder / "model.onnx")  # touched, same bytes
    shutil.copytree(folder, tmp_path / "moved")
    assert ModelSpec(path=str(folder)).model_id == first.model_id
    assert ModelSpec(path=str(tmp_path / "moved")).model_id == first.model_id

    shutil.rmtree(folder)
    tiny_model(folder, 24)  # another model in the same place
    second = embeddings.Embedder(ModelSpec(path=str(folder)))
    assert second.model_id != first.model_id and second.dims == 24
    assert embeddings.pending_count(vdb, second.model_id) == 2  # re-embedded, never mixed
    assert embeddings.embed_pending(vdb, second) == 2
    assert {row["size"] for row in vdb.rows("SELECT length(vector) AS size FROM memory_embeddings")} == {24}


def test_a_folder_that_is_incomplete_or_leads_out_of_itself_is_refused(home, tmp_path):
    pytest.importorskip("onnx")
    outside = tiny_model(tmp_path / "elsewhere", 8)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "tokenizer.json").write_bytes((outside / "tokenizer.json").read_bytes())
    (linked / "model.onnx").symlink_to(outside / "model.onnx")
    incomplete = tmp_path / "incomplete"
    incomplete.mkdir()
    (incomplete / "model.onnx").write_bytes((outside / "model.onnx").read_bytes())
    for path, problem in ((linked, "model.onnx leads out of the folder"), (incomplete, "has no tokenizer.json"),
                          (tmp_path / "absent", "is not a folder")):
        spec = ModelSpec(path=str(path))
        with pytest.raises(embeddings.ModelError, match=problem) as refused:
            embeddings.Embedder(spec)
        assert "model.onnx and tokenizer.json" in str(refused.value)
        assert "ccmemory config unset embedding.path" in str(refused.value)
        assert spec.model_id.startswith("folder@unusable-")  # no vector has it: all pending, nothing mixed
    linked_folder = tmp_path / "folder-link"
    linked_folder.symlink_to(outside, target_is_directory=True)  # the folder itself may be a link
    assert embeddings.Embedder(ModelSpec(path=str(linked_folder))).dims == 8


def test_doctor_names_an_unusable_model_folder(home, project_dir, tmp_path):
    from testing.cli import invoke

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"embedding": {"path": str(tmp_path / "nowhere")}}))
    result = invoke(home, project_dir, "doctor")
    assert "is not a folder" in result.stdout and "ccmemory config unset embedding.path" in result.stdout


def _stored_cosine(db, seq: int, query: bytes) -> float:
    vector = numpy.frombuffer(db.scalar("SELECT vector FROM memory_embeddings WHERE item_seq = ? AND part = 0", (seq,)),
                              dtype=numpy.int8).astype(numpy.float32)
    wanted = numpy.frombuffer(query, dtype=numpy.float32)
    return float(vector @ wanted / (numpy.linalg.norm(vector) * numpy.linalg.norm(wanted)))


def test_a_conversation_turn_is_embedded_after_the_question_it_answers(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    when = "2026-05-01T10:00:00Z"
    memories.add(vdb, project_id=project, content="Anna: Where did you go on holiday last summer?",
                 session_id="chat", source="import", created_at=when)
    answer = memories.add(vdb, project_id=project, content="Ben: Lisbon! We rode the old yellow trams every day.",
                          session_id="chat", source="import", created_at=when)
    alone = memories.add(vdb, project_id=project, content="Ben: Lisbon! We rode the old yellow trams every day.",
                         session_id="other", source="import", created_at=when)
    later = memories.add(vdb, project_id=project, content="Ben: Lisbon! We rode the old yellow trams every day!",
                         session_id="chat", source="import", created_at="2026-05-01T13:00:00Z")
    embeddings.embed_pending(vdb, embedder)
    question = embedder.embed_query("Where did Ben spend his vacation?")
    seq = {memory.id: memory.seq for memory in memories.by_seq(vdb, range(1, 10)).values()}
    in_context, standalone = _stored_cosine(vdb, seq[answer.id], question), _stored_cosine(vdb, seq[alone.id], question)
    assert in_context > standalone + 0.02, (in_context, standalone)
    # Hours later the session has moved on: the turn before is not its context.
    assert _stored_cosine(vdb, seq[later.id], question) < in_context - 0.02
    assert embeddings.previous_turns(vdb, [seq[answer.id], seq[alone.id], seq[later.id]]) == {
        seq[answer.id]: "Anna: Where did you go on holiday last summer?"}


def test_a_turn_is_read_after_the_start_of_the_turn_before_as_much_as_fits_beside_it():
    before = "Anna:  Where did you go\non holiday? " + " ".join(f"detail{number}" for number in range(100))
    turn = "Ben: Lisbon! We rode the old yellow trams every day."
    context = context_before(before, turn)
    assert context.startswith("Anna: Where did you go on holiday? detail0 detail1")  # whitespace collapsed
    assert len(context) + len(turn) <= MAX_READ_CHARS < len(context) + len(turn) + len(" detail99")
    assert context.split()[-1] in " ".join(before.split()).split()  # cut at a word's end
    assert context_before("Anna: Where?", turn) == "Anna: Where?"
    # A turn that leaves no room for a few words of context is read alone: it says what it is about itself.
    long_turn = "Ben: " + "we rode the trams and walked the hills " * 8
    assert len(long_turn) > MAX_READ_CHARS - MIN_CONTEXT_CHARS
    assert context_before(before, long_turn) == ""


def test_a_long_turn_in_a_session_gets_the_vector_it_gets_alone(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    when = "2026-05-01T10:00:00Z"
    memories.add(vdb, project_id=project, content="Anna: Where did you go on holiday last summer?",
                 session_id="chat", source="import", created_at=when)
    content = "Ben: Lisbon, for two weeks. " + "We rode the old yellow trams and walked up to the castle. " * 5
    turn = memories.add(vdb, project_id=project, content=content, session_id="chat", source="import", created_at=when)
    embeddings.embed_pending(vdb, embedder)
    seq = vdb.scalar("SELECT seq FROM memories WHERE id = ?", (turn.id,))
    stored = vdb.scalar("SELECT vector FROM memory_embeddings WHERE item_seq = ? AND part = 0", (seq,))
    assert stored == vectors.quantize(embedder.embed([content])[0])


def test_captured_calls_and_summaries_are_not_embedded_with_the_memory_before_them(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    when = "2026-05-01T10:00:00Z"
    memories.add(vdb, project_id=project, content="Anna: what should we cache?", session_id="s", source="import",
                 created_at=when)
    call = memories.add(vdb, project_id=project, content="Edited cache.py: an LRU of 512 entries", session_id="s",
                        source="capture", created_at=when)
    summary = memories.add(vdb, project_id=project, content="Session summary: added an LRU cache", session_id="s",
                           source="summary", created_at=when)
    seqs = [memory.seq for memory in memories.by_seq(vdb, range(1, 10)).values() if memory.id in (call.id, summary.id)]
    assert embeddings.previous_turns(vdb, seqs) == {}


def test_a_turn_is_read_once_after_the_end_of_the_turn_before_as_much_as_fits(embedder):
    encoder = embedder._encoder
    turn = "Ben: Lisbon! We rode the old yellow trams every day."
    context = " ".join(f"word{number}" for number in range(600)) + " Where did you go on holiday?"
    alone = encoder._tokenizer.encode(turn)
    joined, spans, start = encoder._reads([turn], [context])[0]
    assert len(joined.ids) <= embeddings.MAX_TOKENS
    assert joined.offsets[spans[1][0]][0] == start  # where the turn starts in what was read
    (first, end), (own_first, own_end) = spans
    assert (first, end) == (0, len(joined.ids))
    # The turn is pooled whole, on its own word pieces; the context kept is its end (the question).
    assert joined.ids[own_first:own_end] == alone.ids[1:-1]
    assert encoder._tokenizer.decode(joined.ids[:own_first]).endswith("where did you go on holiday?")
    with_context, without = embedder.embed([turn, turn], [context, None])
    assert with_context != without and without == embedder.embed([turn])[0]
    # Read in one batch, each text is read as it would be alone.
    texts, contexts = [turn, "ok", turn * 30, "Yes, last Tuesday!"], [context, None, "Where?", "When was it?"]
    together = encoder._reads(texts, contexts)
    for index, (encoding, pooled, start) in enumerate(together):
        one = encoder._reads([texts[index]], [contexts[index]])[0]
        assert (encoding.ids, pooled, start) == (one[0].ids, one[1], one[2])


def test_a_turn_that_fills_the_window_alone_is_embedded_as_it_is(embedder):
    turn = "Ben: " + "we rode the trams and walked the hills every single day " * 40
    assert embedder.embed([turn], ["Anna: Where did you go on holiday?"]) == embedder.embed([turn])


def test_a_model_fastembed_runs_gets_a_turns_two_embeddings_summed(home, tmp_path):
    # fastembed pools whole inputs; offline, a folder of the built-in model's files stands in for a named model.
    folder = tmp_path / "named-model"
    folder.mkdir()
    for source in embeddings.builtin_model_dir().iterdir():
        if source.is_file():
            (folder / ("model_optimized.onnx" if source.name == "model.onnx" else source.name)).symlink_to(source)
    named = embeddings.Embedder(ModelSpec(name="BAAI/bge-small-en-v1.5", path=str(folder)))
    turn, context = "Ben: Lisbon! We rode the old yellow trams every day.", "Anna: Where did you go on holiday?"
    alone, together = (numpy.frombuffer(vector, dtype=numpy.float32) for vector in named.embed([turn, f"{context}\n{turn}"]))
    expected = alone / numpy.linalg.norm(alone) + together / numpy.linalg.norm(together)
    made = numpy.frombuffer(named.embed([turn], [context])[0], dtype=numpy.float32)
    assert numpy.allclose(made, expected / numpy.linalg.norm(expected), atol=1e-5)
    # Its windows are counted in the word pieces of the tokenizer fastembed loaded for it.
    assert named._own_tokenizer == folder / "tokenizer.json"
    # It cannot pool a sentence out of a pass, so a turn gets no sentence vectors from it.
    assert not named.pools_spans
    with pytest.raises(ValueError, match="pools whole inputs"):
        named.embed([turn], [context], [(5, 12)])
