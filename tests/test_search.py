"""Hybrid search with the real offline model and sqlite-vec, and its keyword-only fallback."""

from __future__ import annotations

import re

import numpy
import pytest

from ccmemory import db as database
from ccmemory import embeddings, memories, projects, scopes, search, speakers, tokens, vectors
from ccmemory.errors import ValidationError
from ccmemory.vocabulary import CAPTURE_SOURCE

CORPUS = [
    "Login is handled by JWT bearer tokens that the auth middleware validates on every request",
    "The nightly build broke with ERR_CONN_4471 after the proxy upgrade",
    "Network timeouts from the proxy are retried three times with exponential backoff",
    "Connection errors to the upstream service are logged and surfaced as 502 responses",
    "Flaky network calls in CI are wrapped in a retry helper",
    "Database migrations run with alembic upgrade head before each deploy",
    "The cache layer is Redis with a five minute TTL",
    "Frontend state lives in a Zustand store",
    "Error budgets are tracked on the reliability dashboard",
    "Socket errors from the load balancer show up as connection resets",
    "Connection error codes ERR_CONN_4417 and ERR_CONN_4711 come from the proxy",
]


@pytest.fixture
def corpus(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    made = {text: memories.add(vdb, project_id=project, content=text) for text in CORPUS}
    assert embeddings.embed_pending(vdb, embedder) == len(CORPUS)
    return vdb, project, made


def _contents(hits):
    return [hit.memory.content for hit in hits]


def test_hybrid_finds_a_paraphrase_that_keyword_search_misses(corpus, embedder):
    db, project, _ = corpus
    query = "how do users prove who they are when signing in"
    keyword = search.search(db, query, project_id=project, mode="keyword", embedder=embedder)
    hybrid = search.search(db, query, project_id=project, mode="hybrid", embedder=embedder, limit=3)
    assert CORPUS[0] not in _contents(keyword)
    assert _contents(hybrid)[0] == CORPUS[0]


def test_hybrid_finds_an_exact_identifier_that_vector_search_misses(corpus, embedder):
    db, project, _ = corpus
    query = "ERR_CONN_4471"
    semantic = search.search(db, query, project_id=project, mode="semantic", embedder=embedder, limit=1)
    hybrid = search.search(db, query, project_id=project, mode="hybrid", embedder=embedder, limit=1)
    assert CORPUS[1] not in _contents(semantic)
    assert _contents(hybrid)[0] == CORPUS[1]


def test_results_are_sorted_limited_and_scored_from_zero_to_one(corpus, embedder):
    db, project, _ = corpus
    hits = search.search(db, "network errors and retries", project_id=project, embedder=embedder, limit=3)
    assert len(hits) == 3
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert len(search.search(db, "network errors and retries", project_id=project, embedder=embedder)) <= 5


def test_empty_query_is_an_error_and_no_match_is_an_empty_list(corpus, embedder):
    db, project, _ = corpus
    for query in ("", "   "):
        with pytest.raises(ValidationError, match="Query cannot be empty"):
            search.search(db, query, project_id=project, embedder=embedder)
    assert search.search(db, "zzzqqq xylophone", project_id=project, mode="keyword") == []
    with pytest.raises(ValidationError, match="mode"):
        search.search(db, "x", project_id=project, mode="fuzzy")
    with pytest.raises(ValidationError, match="Limit"):
        search.search(db, "x", project_id=project, limit=0)
    with pytest.raises(ValidationError, match="sector"):
        search.search(db, "x", project_id=project, sector="dreamy")


@pytest.mark.parametrize("query", ['"unbalanced', "a OR", "NEAR(", "col:umn", "*", "-x", "())(("])
def test_fts_syntax_in_queries_never_breaks_search(corpus, embedder, query):
    db, project, _ = corpus
    search.search(db, query, project_id=project, mode="keyword")
    search.search(db, query, project_id=project, embedder=embedder)


def test_superseded_hidden_by_default_and_marked_on_request(corpus, embedder):
    db, project, made = corpus
    old = made[CORPUS[6]]
    new = memories.add(db, project_id=project, content="The cache layer is Redis with a one hour TTL")
    embeddings.embed_pending(db, embedder)
    memories.supersede(db, old.id, new.id, project_id=None)
    default = search.search(db, "Redis cache TTL", project_id=project, embedder=embedder)
    assert old.id not in {hit.memory.id for hit in default}
    assert new.id in {hit.memory.id for hit in default}
    everything = search.search(db, "Redis cache TTL", project_id=project, embedder=embedder, include_superseded=True)
    marked = {hit.memory.id: hit for hit in everything}
    assert marked[old.id].superseded_by == new.id


def test_deleted_memories_never_appear(corpus, embedder):
    db, project, made = corpus
    memories.delete(db, made[CORPUS[7]].id, project_id=None)
    for mode in search.MODES:
        hits = search.search(db, "Zustand frontend store", project_id=project, mode=mode, embedder=embedder)
        assert CORPUS[7] not in _contents(hits)


def test_hard_deleted_memories_leave_the_vector_index(corpus, embedder):
    db, project, made = corpus
    memories.delete(db, made[CORPUS[7]].id, hard=True, project_id=None)
    embeddings.embed_pending(db, embedder)
    assert db.scalar("SELECT COUNT(*) FROM memory_vec") == len(CORPUS) - 1


def test_sector_filter_and_reference_counting(corpus, embedder):
    db, project, made = corpus
    preference = memories.add(db, project_id=project, content="The team prefers Redis over Memcached", sector="emotional")
    embeddings.embed_pending(db, embedder)
    hits = search.search(db, "Redis", project_id=project, sector="emotional", embedder=embedder)
    assert [hit.memory.id for hit in hits] == [preference.id]
    assert memories.get(db, preference.id, project_id=None).reference_count == 1
    search.search(db, "Redis", project_id=project, sector="emotional", embedder=embedder, track=False)
    assert memories.get(db, preference.id, project_id=None).reference_count == 1


def test_other_projects_are_never_searched(corpus, embedder, tmp_path):
    db, project, _ = corpus
    other = projects.project_id(db, tmp_path)
    memories.add(db, project_id=other, content="Kubernetes manifests live in deploy/k8s")
    embeddings.embed_pending(db, embedder)
    for mode in search.MODES:
        assert search.search(db, "Kubernetes manifests", project_id=project, mode=mode, embedder=embedder) == [] or \
            "Kubernetes" not in " ".join(_contents(search.search(db, "Kubernetes manifests", project_id=project,
                                                                  mode=mode, embedder=embedder)))


def test_keyword_only_fallback_when_vectors_cannot_load(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    memories.add(db, project_id=project, content="Deploys go through the release train on Thursdays")
    result = search.search_with_info(db, "release train", project_id=project, mode="hybrid")
    assert result.mode_used == "keyword"
    assert result.warnings and "keyword matches only" in result.warnings[0]
    assert [hit.memory.content for hit in result.hits] == ["Deploys go through the release train on Thursdays"]
    db.close()


def test_pending_memories_are_found_by_keywords_before_they_are_embedded(corpus, embedder):
    db, project, _ = corpus
    fresh = memories.add(db, project_id=project, content="Feature flags are served by Unleash")
    hits = search.search(db, "Unleash feature flags", project_id=project, embedder=embedder)
    assert hits[0].memory.id == fresh.id


def test_the_ranking_does_not_depend_on_the_limit(corpus, embedder):
    db, project, _ = corpus
    for number in range(60):
        memories.add(db, project_id=project, content=f"Note {number}: the proxy and the network were checked again")
    embeddings.embed_pending(db, embedder)
    for query in ("network errors and retries", "proxy connection error codes", "how is login handled"):
        for mode in search.MODES:
            wide = search.search(db, query, project_id=project, mode=mode, embedder=embedder, limit=50, track=False)
            for limit in (1, 5, 10):
                narrow = search.search(db, query, project_id=project, mode=mode, embedder=embedder, limit=limit,
                                       track=False)
                assert [h.memory.id for h in narrow] == [h.memory.id for h in wide[:limit]], (query, mode, limit)


def test_a_strong_keyword_match_is_not_buried_by_vector_neighbours(corpus, embedder):
    db, project, _ = corpus
    hits = search.search(db, "alembic upgrade head", project_id=project, embedder=embedder, limit=3)
    assert _contents(hits)[0] == CORPUS[5]


def test_keywords_are_stemmed(corpus, embedder):
    db, project, _ = corpus
    hits = search.search(db, "retrying wrapped calls", project_id=project, mode="keyword")
    assert _contents(hits)[0] == CORPUS[4]  # "wrapped in a retry helper", "Flaky network calls"
    assert search.stems(db, ["retrying", "parse_config_v2"]) == [["retri"], ["pars", "config", "v2"]]


def test_common_stemmed_words_are_skipped_in_a_large_store(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    for number in range(1100):
        memories.add(db, project_id=project, content=f"Running job {number} finished")
    rare = memories.add(db, project_id=project, content="The nightly runs hit the quota limit")
    rows = db.scalar("SELECT MAX(seq) FROM memories")
    # "runs" is stored as the stem "run", which most rows contain: only "quota" is kept
    assert search.fts_query("runs quota", db, "memories_vocab", rows) == '"quota"'
    assert search.search(db, "runs quota", project_id=project, mode="keyword")[0].memory.id == rare.id
    db.close()


def test_the_turn_next_to_a_match_comes_with_it(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    filler = ["Bob: The weather was lovely", "Anna: We walked along the river", "Bob: The museum was closed"]
    for text in filler:
        memories.add(db, project_id=project, content=text, created_at="2023-05-01T10:00:00", session_id="s1")
    memories.add(db, project_id=project, content="Bob: What did you bring to the potluck on Saturday?",
                 created_at="2023-05-08T13:56:00", session_id="s2")
    answer = memories.add(db, project_id=project, content="Anna: My grandmother's lasagna, everyone loved it",
                          created_at="2023-05-08T13:56:00", session_id="s2")
    alone = memories.add(db, project_id=project, content="Anna: lovely day", created_at="2023-05-08T13:56:00")
    for text in filler:
        memories.add(db, project_id=project, content=text, created_at="2023-05-20T10:00:00", session_id="s3")
    hits = search.search(db, "What did Anna bring to the potluck?", project_id=project, mode="keyword", limit=2)
    assert answer.id in [hit.memory.id for hit in hits]
    wide = search.search(db, "What did Anna bring to the potluck?", project_id=project, mode="keyword", limit=20)
    assert alone.id not in [hit.memory.id for hit in wide[:2]]  # no session, no neighbours
    db.close()


def test_the_reply_to_a_matching_question_comes_right_after_it(home, project_dir, monkeypatch):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)

    def turn(content: str, session: str, minute: int) -> memories.Memory:
        return memories.add(db, project_id=project, content=content, session_id=session,
                            created_at=f"2023-07-02T10:{minute:02d}:00")

    turn("Caroline: How was your weekend?", "talk", 0)
    turn("Caroline: Who performed at the birthday concert, then?", "talk", 1)
    reply = turn("Melanie: It was Matt Patterson, he is so talented!", "talk", 2)
    turn("Gina: Who performed at the birthday concert?", "notes", 0)
    same_speaker = turn("Gina: Also, I bought tickets for the jazz night", "notes", 1)
    turn("Ada: Who performed at the birthday concert, Claude?", "work", 0)
    call = memories.add(db, project_id=project, content="Bash: ls tickets/", session_id="work", source=CAPTURE_SOURCE,
                        created_at="2023-07-02T10:01:00")
    query = "Who performed at the birthday concert?"

    def scores() -> dict[str, float]:
        hits = search.search(db, query, project_id=project, mode="keyword", limit=10)
        return {hit.memory.id: hit.score for hit in hits}

    found = list(scores())
    assert found.index(reply.id) == 3  # after the three questions, though it shares no word with the query
    assert found.index(same_speaker.id) > found.index(reply.id)  # one person's next message is no reply
    with_rule = scores()
    monkeypatch.setattr(search, "REPLY_WEIGHT", search.NEIGHBOUR_WEIGHT)
    without = scores()
    assert list(without).index(reply.id) > list(without).index(same_speaker.id)
    assert without[call.id] == with_rule[call.id]  # a captured call after a question is no reply either
    db.close()


def test_a_turn_names_its_speaker_as_a_transcripts_line_does():
    assert speakers.speaker("Dr. Ada Lovelace: the engine runs") == "Dr. Ada Lovelace"
    assert speakers.speaker("Melanie: hi") == "Melanie"
    assert speakers.speaker("I think: yes") is None and speakers.speaker("note: x") is None
    assert speakers.speaker("Маша: привет") == "Маша" and speakers.speaker("Özil Mesut: hallo") == "Özil Mesut"
    assert search.query_names("Что купила Маша для Özil?") == []  # the names prior reads Latin capitals only
    assert search.query_names("Что купила Маша для Özil?", any_script=True) == ["что", "маша", "özil"]
    assert speakers.another_speaker("Caroline: What concert was it?", "Melanie: Matt Patterson!")
    assert not speakers.another_speaker("Caroline: What concert?", "Caroline: And when?")
    assert not speakers.another_speaker("What concert was it?", "It was Matt Patterson")  # speakers unknown


def test_a_question_is_read_by_meaning_without_the_names_of_the_speakers(vdb, project_dir, embedder, monkeypatch):
    """Every turn of Caroline's starts with her name: in the question's vector it pulls towards all of them alike,
    and the turns that name her again, while what is asked (research) finds the turn that answers."""
    project = projects.project_id(vdb, project_dir)
    turns = ["Caroline: Hey Melanie! So good to hear from you, Caroline is doing great!",
             "Melanie: Caroline, that's so cool! How are you?",
             "Caroline: Thanks Mel, Caroline appreciates it so much!",
             "Caroline: I've been looking into adoption agencies lately.",
             "Melanie: I went camping with the kids last weekend.",
             "Caroline: I'm going to a support group tomorrow evening.",
             "Melanie: Wow Caroline, you are amazing!",
             "Caroline: Caroline says hi to the kids!",
             "Melanie: Caroline, you inspire me every day.",
             "Caroline: Haha, Caroline is always up for a chat!",
             "Melanie: Take care, Caroline!",
             "Caroline: Talk soon, Mel! Caroline out."]
    made = [memories.add(vdb, project_id=project, content=text, session_id="chat",
                         created_at=f"2023-07-02T10:{minute:02d}:00") for minute, text in enumerate(turns)]
    memories.add(vdb, project_id=project, content="Bash: ls tickets/", session_id="work", source=CAPTURE_SOURCE)
    embeddings.embed_pending(vdb, embedder)
    query = "What did Caroline research?"

    def rank() -> int:
        hits = search.search(vdb, query, project_id=project, mode="semantic", embedder=embedder, limit=len(turns))
        return [hit.memory.id for hit in hits].index(made[3].id)

    assert rank() == 0
    monkeypatch.setattr(speakers, "named", lambda db, names, **where: [])
    assert rank() > 2
    monkeypatch.undo()
    query = "what did caroline research?"  # typed in lower case: its words are looked up as speakers
    assert rank() == 0
    monkeypatch.setattr(search, "lower_case_names", lambda text: [])
    assert rank() > 2
    monkeypatch.undo()
    assert search.lower_case_names("what did caroline's dog eat?") == ["caroline", "dog", "eat"]
    assert search.vector_query("what did mark mark on the map?", ["mark"], any_case=True) == "what did on the map?"
    # A hit's weakness is judged by its cosine to the question as asked (0.50 here), which the shorter text's
    # (0.27, under WEAK_COSINE) would understate: the turn has one of the question's five words.
    asked = "What did Caroline research about families and kids?"

    def weak() -> bool:
        hits = search.search(vdb, asked, project_id=project, mode="semantic", embedder=embedder, limit=len(turns))
        return next(hit.weak for hit in hits if hit.memory.id == made[3].id)

    assert not weak()
    monkeypatch.setattr(search, "whole_question_cosines", lambda *args: {})
    assert weak()
    monkeypatch.undo()
    seq = made[3].seq
    whole = search.whole_question_cosines(vdb, asked, [seq], embedder)[seq]
    [(_, distance)] = vectors.similarities(vdb, "memory", embedder.embed_query(search.vector_query(
        asked, ["caroline"])), [seq], model_id=embedder.model_id)
    assert whole > search.WEAK_COSINE > 1.0 - distance
    for minute, topic in enumerate(["Postgres", "Postgres", "Postgres", "Redis", "Redis", "Redis"]):
        memories.add(vdb, project_id=project, content=f"{topic}: note {minute} on the {topic} setup", session_id="notes",
                     created_at=f"2023-07-03T10:0{minute}:00")
    covered, params = scopes.condition("project", project, "m")
    assert speakers.named(vdb, ["caroline", "bash", "research", "melanie", "postgres", "redis"], covered=covered,
                          params=params) == ["caroline", "melanie"]  # a call starting "Bash: " is no turn, and notes
    # that start with their topic follow one another: they do not take turns
    assert search.vector_query("What did Caroline's and Melanie's kids do?", ["caroline", "melanie"]) == \
        "What did and kids do?"
    assert search.vector_query("Who is Caroline?", ["caroline"]) == "Who is Caroline?"  # nothing else asked
    assert search.vector_query("What did caroline paint?", []) == "What did caroline paint?"
    assert search.vector_query("What did Mark mark on the map?", ["mark"]) == "What did mark on the map?"
    (project_dir.parent / "elsewhere" / ".git").mkdir(parents=True)
    elsewhere = projects.project_id(vdb, project_dir.parent / "elsewhere")  # newer mentions not searched here
    for minute in range(60):
        memories.add(vdb, project_id=elsewhere, content=f"Told Caroline about ticket {minute}", session_id="other",
                     created_at=f"2023-07-04T10:{minute:02d}:00")
    assert speakers.named(vdb, ["caroline"], covered=covered, params=params) == ["caroline"]


def test_a_date_in_the_query_prefers_memories_of_that_date(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    for day in ("2023-04-30", "2023-05-08", "2023-06-02"):
        memories.add(db, project_id=project, content="Deployed the billing service", created_at=f"{day}T09:00")
    for query, day in (("billing deploy on 8 May 2023", "2023-05-08"), ("billing deploy in June 2023", "2023-06-02"),
                       ("what was deployed 2023-04-30", "2023-04-30")):
        hits = search.search(db, query, project_id=project, mode="keyword")
        assert hits[0].memory.created_at.startswith(day), query
    db.close()


def test_names_in_the_query_prefer_memories_that_name_them(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    memories.add(db, project_id=project, content="Melanie: I signed up for a pottery class")
    wanted = memories.add(db, project_id=project, content="Caroline: I signed up for a pottery class")
    hits = search.search(db, "Which class did Caroline sign up for?", project_id=project, mode="keyword")
    assert hits[0].memory.id == wanted.id
    assert search.query_names("What did Caroline and Mel's dog do after Pride?") == ["caroline", "mel", "pride"]
    walked, other = (memories.add(db, project_id=project, content=text) for text in
                     ("Melanie: I walked Caroline's dog", "Melanie: I walked the dog"))
    assert search.prior(walked, ["caroline"], None) > search.prior(other, ["caroline"], None)  # her dog names her


def test_what_a_session_did_outranks_a_later_session_that_asked_about_it(home, project_dir):
    from ccmemory import session_summary as summary

    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    did = memories.add(db, project_id=project, source="summary", salience=summary.SUMMARY_SALIENCE,
                       content="Request: Fix the login timeout\nDid: changed auth.py; ran pytest\n"
                               "Outcome: Raised the login timeout to 30 s")
    for when in ("once", "again"):
        memories.add(db, project_id=project, source="summary", salience=summary.LOOKED_ONLY_SALIENCE,
                     content=f"Request: Remind me {when} how we fixed the login timeout\n"
                             "Did: only looked, changed nothing\nOutcome: Raised the login timeout to 30 s")
    hits = search.search(db, "how did we fix the login timeout", project_id=project, mode="keyword")
    assert hits[0].memory.id == did.id
    db.close()


def test_one_session_does_not_fill_the_results(home, project_dir, monkeypatch):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    busy = [memories.add(db, project_id=project, source="capture", session_id="busy",
                         content=f"Edited retry.py in retry_helper\n- delay = {n}\n+ delay = backoff(retry_helper)",
                         created_at=f"2024-01-01T10:0{n}:00") for n in range(4)]
    other = memories.add(db, project_id=project, source="capture", session_id="other",
                         content="Edited retry.py in retry_helper\n- delay = 9\n+ delay = backoff(retry_helper, cap)",
                         created_at="2024-02-01T10:00:00")
    hits = search.search(db, "retry_helper backoff delay", project_id=project, mode="keyword", limit=3)
    assert [hit.memory.id for hit in hits[:2]] == [busy[0].id, other.id]
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    monkeypatch.setattr(search, "SAME_SESSION_DECAY", 0.0)
    unspread = search.search(db, "retry_helper backoff delay", project_id=project, mode="keyword", limit=3)
    assert other.id not in [hit.memory.id for hit in unspread]
    db.close()


def test_turns_of_one_conversation_are_not_spread(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    turns = [memories.add(db, project_id=project, session_id="talk", content=f"Anna: the potluck lasagna, part {n}",
                          created_at=f"2023-05-08T13:5{n}:00") for n in range(3)]
    memories.add(db, project_id=project, session_id="later", content="Bob: a potluck is fun",
                 created_at="2023-06-01T10:00:00")
    hits = search.search(db, "potluck lasagna", project_id=project, mode="keyword", limit=3)
    assert sorted(hit.memory.id for hit in hits) == sorted(turn.id for turn in turns)
    db.close()


def test_a_session_whose_actions_match_is_shown_by_its_summary_first(home, project_dir):
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)

    def session(name: str, tool: str, verb: str) -> object:
        for n in range(2):
            memories.add(db, project_id=project, source="capture", session_id=name, metadata={"tool": tool},
                         content=f"{verb} pager.py in tempfile_pager\n+ close the tempfile before unlink ({n})",
                         created_at=f"2024-03-0{1 if name == 'did' else 2}T10:0{n}:00")
        return memories.add(db, project_id=project, source="summary", session_id=name, salience=0.65,
                            content=f"Session summary\nRequest: task of session {name}\nDid: changed pager.py",
                            created_at=f"2024-03-0{1 if name == 'did' else 2}T10:09:00")

    did = session("did", "Edit", "Edited")
    looked = session("looked", "Read", "Read")
    hits = search.search(db, "tempfile pager unlink", project_id=project, mode="keyword", limit=10)
    ids = [hit.memory.id for hit in hits]
    assert ids[0] == did.id
    # Its summary names none of the words and look-ups lend it nothing (only a neighbour's small share).
    assert ids[-1] == looked.id
    db.close()



def test_a_long_memory_is_found_by_its_last_paragraph(vdb, project_dir, embedder):
    """Every window of a long memory is embedded: a question about its end finds it by meaning alone."""
    project = projects.project_id(vdb, project_dir)
    filler = " ".join(f"Step {n}: the build copies module {n} into the staging folder and checks its size."
                      for n in range(60))
    long = memories.add(vdb, project_id=project, content=filler + "\nFinally, the release is announced to "
                        "customers in a newsletter written by the marketing team.")
    for text in CORPUS:
        memories.add(vdb, project_id=project, content=text)
    embeddings.embed_pending(vdb, embedder)
    assert vdb.scalar("SELECT COUNT(*) FROM memory_embeddings WHERE item_seq = ?", (long.seq,)) > 3
    hits = search.search(vdb, "who tells clients about a new version", project_id=project, mode="semantic",
                         embedder=embedder, limit=3)
    assert hits[0].memory.id == long.id


def _trip_with_a_pet_paragraph() -> tuple[str, str]:
    """A long note: eight paragraphs planning a trip, and one about a sister's kitten in the middle of them."""
    places = ["castle", "cathedral", "old market", "tile museum", "botanical garden", "harbour", "lighthouse",
              "palace"]
    days = [f"Day {n} of the Lisbon trip: take tram {n + 10} up to the {place} in the morning.\n"
            f"Lunch is grilled sardines near the river, then a walk back along the {place} quarter.\n"
            f"Tickets for the {place} are cheaper online, so book them the evening before."
            for n, place in enumerate(places)]
    pet = ("My sister Ana adopted a grey kitten called Pixel last weekend.\n"
           "Pixel already sleeps on her keyboard and chases the cursor on the screen.\n"
           "She asked whether kittens need a vaccine before they go outside.\n"
           "The vet said Pixel should get the first shots at nine weeks and stay indoors until then.\n"
           "Ana bought a scratching post, a small bed and a feather toy, and the kitten ignores all three.")
    return "\n\n".join(days[:5] + [pet] + days[5:]), pet


def test_a_long_memory_is_found_by_a_paragraph_it_mentions_once(vdb, project_dir, embedder):
    """A paragraph in the middle of a long text about something else is a window of its own, not a sixth of
    one: a question about it finds the memory above short notes that are about pets in general."""
    project = projects.project_id(vdb, project_dir)
    text, pet = _trip_with_a_pet_paragraph()
    assert tokens.count(text[:text.index(pet)]) > tokens.CONTENT_TOKENS  # past the first vector
    long = memories.add(vdb, project_id=project, content=text)
    for note in ("Our office lets people bring dogs on Fridays",
                 "The neighbour's cat keeps sitting on the garden wall",
                 "Buy cat litter and kitten food at the pet shop on Saturday",
                 "My brother is moving to Porto in the spring", *CORPUS):
        memories.add(vdb, project_id=project, content=note)
    embeddings.embed_pending(vdb, embedder)
    hits = search.search(vdb, "what kind of pet did my sister adopt", project_id=project, mode="semantic",
                         embedder=embedder, limit=3)
    assert hits[0].memory.id == long.id


def test_the_windows_of_a_long_text_end_at_its_breaks_and_cover_it():
    """After the text whole, each window holds whole paragraphs (or lines, or sentences) of at most
    WINDOW_TOKENS word pieces, and together they hold all the text once, in order."""
    text, pet = _trip_with_a_pet_paragraph()
    found = tokens.windows(text)
    assert found[0] == text
    assert pet in found[1:]
    assert all(tokens.count(window) <= tokens.WINDOW_TOKENS for window in found[1:])
    assert "\n\n".join(found[1:]) == text
    long_line = " ".join(f"Sentence {n} says one more thing about the build." for n in range(60))
    lines = tokens.windows(long_line)[1:]
    assert len(lines) > 3 and all(window.endswith("build.") for window in lines)
    assert " ".join(lines) == long_line


def test_semantic_results_are_ranked_by_similarity_when_every_cosine_is_low(corpus, embedder):
    """No absolute cut-off: far-fetched queries still rank every candidate by cosine, best first, marked weak."""
    db, project, _ = corpus
    query = "quantum chromodynamics of gluon fields"
    vector = numpy.frombuffer(embedder.embed_query(query), dtype=numpy.float32)
    cosines = {text: float(numpy.frombuffer(embedder.embed([text])[0], dtype=numpy.float32) @ vector)
               for text in CORPUS}
    assert max(cosines.values()) < search.WEAK_COSINE
    hits = search.search(db, query, project_id=project, mode="semantic", embedder=embedder, limit=len(CORPUS))
    assert _contents(hits) == sorted(CORPUS, key=lambda text: -cosines[text])
    assert all(hit.weak for hit in hits)


def test_a_keyword_candidate_the_nearest_neighbours_missed_is_scored_on_the_vector_side(corpus, embedder,
                                                                                         monkeypatch):
    """The sign bits let only the nearest few vectors through to rescoring; a memory the keyword search found is
    scored exactly all the same, at least as the least similar of those rescored (0 once rescaled), so fusion never
    counts a keyword match as dissimilar just because the coarse pass left it out."""
    db, project, made = corpus
    monkeypatch.setattr(search, "CANDIDATES", 1)
    monkeypatch.setattr(search.vectors, "MIN_CANDIDATES", 1)
    query = "network errors and retries"
    finish = search.vector_ranking(db, "memory", query, project_id=project, embedder=embedder, warnings=[])
    nearest = dict(finish(()))
    outside = [memory for memory in made.values() if memory.seq not in nearest]
    assert len(nearest) < len(CORPUS) and outside
    vector = numpy.frombuffer(embedder.embed_query(query), dtype=numpy.float32)
    both = dict(finish([memory.seq for memory in outside]))
    assert {seq: both[seq] for seq in nearest} == nearest
    for memory in outside:
        exact = float(numpy.frombuffer(embedder.embed([memory.content])[0], dtype=numpy.float32) @ vector)
        assert both[memory.seq] == pytest.approx(max(exact, min(nearest.values())), abs=0.01)


ERRANDS = [
    "Garden notes: the tomatoes need staking, the basil bolted in the heat, users prove they watered, they mulch "
    "before signing off for the week",
    "Recipe for the team lunch: lentil soup with cumin, flatbread from the bakery, and users prove they like it when "
    "they ask for signing up again",
    "Holiday rota for December: the office closes on the 24th, users prove they booked leave and they finish by "
    "signing the sheet at reception",
    "The coffee machine on the second floor descales every Friday; users prove they cleaned the milk jug, they note "
    "it by signing the card",
    "Aquarium duty: the guppies eat flakes twice a day and the filter sponge is rinsed monthly; users prove they fed "
    "them, they log it by signing the clipboard",
    "Plant swap on Thursday in the kitchen: succulents, ferns and a lemon tree; users prove they brought a pot, they "
    "leave it after signing the list",
]


def test_a_memory_found_only_by_meaning_is_not_buried_by_common_word_matches(vdb, project_dir, embedder):
    """One side weak, the other strong: every keyword match shares the query's words as evenly as the next (a flat
    list), while one memory that shares none of them is clearly the nearest by meaning. Hybrid shows it in the top 5
    (a fixed 0.6 / 0.4 mix put it last: 0.4 at most against ~0.9 x 0.6 for each errand)."""
    project = projects.project_id(vdb, project_dir)
    login = memories.add(vdb, project_id=project, content=CORPUS[0])
    for text in ERRANDS:
        memories.add(vdb, project_id=project, content=text)
    embeddings.embed_pending(vdb, embedder)
    query = "how do users prove who they are when signing in"
    keyword = search.search(vdb, query, project_id=project, mode="keyword", limit=10, track=False)
    assert login.id not in [hit.memory.id for hit in keyword] and len(keyword) == len(ERRANDS)
    cosines = dict(search.vector_ranking(vdb, "memory", query, project_id=project, embedder=embedder,
                                         warnings=[])(()))
    assert cosines[login.seq] - max(c for seq, c in cosines.items() if seq != login.seq) > 0.1
    hybrid = search.search(vdb, query, project_id=project, embedder=embedder, limit=5, track=False)
    assert login.id in [hit.memory.id for hit in hybrid]


PROJECT_NOTES = [
    "The frontend uses React 18 with Vite.",
    "Redis is used as the session cache with a 30 minute TTL.",
    "Use ruff for linting and black for formatting.",
    "Bumped the package version to 2.4.1 before the release.",
    "Node version is pinned to 20 in .nvmrc.",
    "The API returns 429 when the rate limit is exceeded; clients retry with backoff.",
    "Docker images are built with multi-stage builds to keep them small.",
    "Logs are shipped to Loki via promtail.",
    "The staging server is reset every Sunday night.",
]


@pytest.mark.parametrize("query", ["what database do we use", "postgres version"])
def test_a_question_word_no_memory_holds_leaves_the_answer_to_meaning(vdb, project_dir, embedder, query):
    """A new user's few notes: no memory says "database" or "postgres", so every keyword match holds only the
    question's other word ("uses", "used", "version") and the memory that answers is found by meaning alone.
    The keyword side is weighed by how much of the question its words can match (search.keyword_reach), so that
    memory comes first; weighed by how its best stands out alone, three "use" notes or two "version" notes
    came before it."""
    project = projects.project_id(vdb, project_dir)
    answer = memories.add(vdb, project_id=project, content="We moved to PostgreSQL 17 last month because of the "
                                                            "logical replication improvements.")
    for text in PROJECT_NOTES:
        memories.add(vdb, project_id=project, content=text)
    embeddings.embed_pending(vdb, embedder)
    keyword = search.search(vdb, query, project_id=project, mode="keyword", limit=10, track=False)
    assert keyword and answer.id not in [hit.memory.id for hit in keyword]
    hits = search.search(vdb, query, project_id=project, embedder=embedder, limit=3, track=False)
    assert hits[0].memory.id == answer.id and not hits[0].weak


def test_keyword_reach_is_the_weight_of_the_question_words_some_memory_holds():
    frequency = {"database": 0, "use": 3, "cache": 1}
    weights = search.term_weights(frequency, 14)
    assert weights["database"] > weights["cache"] > weights["use"] > 0
    assert search.keyword_reach(weights, frequency) == pytest.approx(
        (weights["use"] + weights["cache"]) / sum(weights.values()))
    assert search.keyword_reach({"use": weights["use"]}, frequency) == 1.0
    assert search.keyword_reach({"database": weights["database"]}, frequency) == 0.0
    assert search.keyword_reach({}, frequency) == 1.0


def test_everyday_words_of_the_question_do_not_outweigh_the_word_that_matters(home, project_dir):
    """Coverage counts each query word by how rare it is in the store (its BM25 idf): memories holding most of the
    question's everyday words ("been", "like", "my", "need", "something", "any") but not its subject rank below one
    that names the subject only. Counted word for word, each of those errands covered 7 of the 11 words against the
    loaf's 1, and came second."""
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    for topic in ("gardening", "taxes", "a new laptop", "running shoes", "a trip to Lisbon", "guitar lessons"):
        memories.add(db, project_id=project, content=f"I've been thinking about {topic}; I like it but I need "
                                                     "something extra for my plans, any advice?")
    starter = memories.add(db, project_id=project, content="The sourdough starter doubled overnight after a feed of "
                                                           "rye flour.")
    loaf = memories.add(db, project_id=project, content="Baked a sourdough loaf with the kids this afternoon.")
    query = "I've been feeling like my sourdough starter needs something extra. Any advice?"
    hits = search.search(db, query, project_id=project, mode="keyword", limit=3, track=False)
    assert [hit.memory.id for hit in hits[:2]] == [starter.id, loaf.id]
    weights = search.term_weights(search.document_frequencies(db, "memories_vocab", search.query_terms(query)), 8)
    assert weights["sourdough"] > 3 * weights["my"] > 0
    db.close()


def test_a_long_memory_with_the_words_scattered_does_not_outrank_one_that_holds_them_together(home, project_dir):
    """Coverage counts a long memory by its best passage (search.PASSAGE_WORDS words): a long session about moving
    house that says "buy", "birthday", "cake" and "bakery" each in another part, and "buy" twice more, ranks below
    a session about work that tells of the birthday cake in one paragraph. Counted over the whole text, both held
    every word and the moving session's extra "buy" put it first."""
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    filler = ("We talked through the schedule for the next few weeks and what still has to happen first. "
              "Most of it is waiting on other people, so there is not much to do but check in now and then. ") * 4
    moving = memories.add(db, project_id=project, content=(
        f"I need to buy boxes and tape for the move. {filler}\n\nThe movers want to buy insurance. {filler}\n\n"
        f"My sister's birthday is the week after. {filler}\n\nThe new kitchen has room for a cake stand. {filler}\n\n"
        f"There is a bakery on the corner of the new street, and we may buy a sofa. {filler}"))
    work = memories.add(db, project_id=project, content=(
        f"The quarterly review went fine. {filler}\n\nFor my niece's birthday I went to buy a cake at the Rosewood "
        f"bakery; she loved it. {filler}\n\nThe team is hiring again. {filler}\n\nThe office moves floors. {filler}"))
    for topic in ("gardening", "taxes", "a new laptop"):
        memories.add(db, project_id=project, content=f"Notes about {topic}: nothing decided yet.")
    query = "Which bakery did I buy the birthday cake from?"
    hits = search.search(db, query, project_id=project, mode="keyword", limit=2, track=False)
    assert [hit.memory.id for hit in hits] == [work.id, moving.id]
    terms = search.query_terms(query)
    assert search.coverage(moving.content, terms) == 0.5 < search.coverage(work.content, terms) == 1.0
    short = "Bought a birthday cake at the bakery"
    assert search.coverage(short, terms) == 0.75  # a short memory is counted whole, as before
    db.close()


def test_a_question_word_counts_in_another_form_in_prose_and_only_as_written_in_code(home, project_dir):
    """Keyword coverage reads a person's words by stem, as the index does: "events" is found in "event",
    "volunteer" in "volunteered", so the charity drive that answers ranks above a shop that only repeats the
    question's words as written (counted as written, it covered two of three words against the drive's one and
    came first). A captured call's words are code and names ("typing" is not "type"), counted as written."""
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    for topic in ("gardening", "taxes", "a new laptop", "running shoes", "guitar lessons", "the school run"):
        memories.add(db, project_id=project, content=f"Some notes about {topic} for the week ahead.")
    drive = memories.add(db, project_id=project, content="Spent Saturday sorting books at the library's charity "
                                                         "drive event; we volunteered for five hours.")
    shop = memories.add(db, project_id=project, content="The charity shop on Elm Street needs someone to volunteer "
                                                        "on Sundays, and its charity raffle needs a volunteer too.")
    hits = search.search(db, "Which charity events did I volunteer at?", project_id=project, mode="keyword",
                         limit=2, track=False)
    assert [hit.memory.id for hit in hits] == [drive.id, shop.id]
    assert not hits[0].weak  # all three words, two of them in another form
    assert search.stem_aliases(db, ["events", "volunteer", "parse_config"],
                               [["event", "eventually", "volunteered", "volunteers", "parsing"]]) == {
        "event": "events", "volunteered": "volunteer", "volunteers": "volunteer"}

    text = "Fixed the typing of the option defaults in core.py"
    note = memories.add(db, project_id=project, content=text)
    call = memories.add(db, project_id=project, content=text, source=CAPTURE_SOURCE)
    sql = ("SELECT m.seq, bm25(memories_fts) AS rank, m.content AS text, m.source != ? AS prose FROM memories_fts "
           "JOIN memories m ON m.seq = memories_fts.rowid WHERE memories_fts MATCH ? ORDER BY rank")
    scores = dict(search.keyword_ranking(db, sql, [CAPTURE_SOURCE, '"option" OR "default" OR "type"'],
                                         ["option", "default", "type"]))
    assert scores[note.seq] == pytest.approx(1.0)  # best BM25, and all three words by stem
    assert scores[call.seq] == pytest.approx(search.COVERAGE_WEIGHT / 3 + 1 - search.COVERAGE_WEIGHT)  # "option" only
    db.close()


_LISBON = ("We finally took the trip to Lisbon in March. The flight left the airport at six in the morning, and the "
           "hotel in Alfama had lost our booking, so we waited in the lobby with all our luggage for two hours. "
           "After that it was wonderful: the yellow tram up the hill, custard tarts at the bakery by the river, "
           "fado in a tiny bar, and a boat ride along the coast. We bought tiles for the kitchen and a cork bag. "
           "On the way home the boarding gate changed twice and the airport was packed with school groups. "
           "The second day we rented bikes and rode west along the water to Belem, ate more custard tarts, and "
           "climbed the tower while a storm rolled in over the bridge. In the evening our friend Rita showed us "
           "her favourite viewpoint, where students played guitar and sold cold beer from a cooler, and we "
           "watched the lights come on across the river until the last tram. Next time we want to stay longer, "
           "take the train to Sintra for the palaces, and spend a lazy day on the beaches at Cascais.")
_ROME = ("Back from Rome on Sunday. The flight was two hours late, the airport shuttle never came, and the hotel "
         "gave us a room over the kitchen. Still, we walked everywhere: the Forum at sunrise, gelato every "
         "afternoon, a cooking class in Trastevere where we made pasta by hand, and a long dinner with Marco's "
         "cousins. My luggage came back with a broken wheel and the boarding passes are still in my coat pocket.")
_TRIPS_AND_OTHER_THINGS = [
    "The field trip to the science museum was moved to next Friday because of the bus strike.",
    "Trips to the gym are down to twice a week since the new project started.",
    "I tripped on the stairs at work and my knee still hurts when I climb.",
    "We planned a camping trip with the kids but the forecast said rain all weekend.",
    "The garden needs new soil, more tomatoes, and a fence the rabbits cannot dig under.",
    "Our book club is reading a novel about a lighthouse keeper and his daughter this month.",
    "I started learning the guitar again; my fingers hurt after twenty minutes of chords.",
]


def test_a_question_naming_a_thing_once_finds_the_other_long_memories_about_it(vdb, project_dir, embedder,
                                                                                 monkeypatch):
    """"How many trips" is said in one account of a journey; the other says flight, airport, hotel, luggage.
    The words that weigh most in the best hits are searched too, and lift it above a note that only says "trips"
    (keyword expansion). In this store of nine, no memory says "many" or "year", so keywords reach only part of
    the question (search.keyword_reach) and meaning has its say: third, and fourth without the expansion."""
    project = projects.project_id(vdb, project_dir)
    memories.add(vdb, project_id=project, content=_LISBON)
    rome = memories.add(vdb, project_id=project, content=_ROME)
    for text in _TRIPS_AND_OTHER_THINGS:
        memories.add(vdb, project_id=project, content=text)
    embeddings.embed_pending(vdb, embedder)
    question = "How many trips did I take this year?"

    def place() -> int:
        hits = search.search(vdb, question, project_id=project, embedder=embedder, limit=10, track=False)
        return [hit.memory.id for hit in hits].index(rome.id) + 1

    expanded = place()
    monkeypatch.setattr(search, "EXPANSION_WORDS", 0)
    assert expanded <= 3 and expanded < place()


def test_expansion_words_come_from_what_people_wrote_at_length(db, project_dir):
    """Words are drawn only from long hits that are not captured calls, summaries or knowledge, only words
    found in another memory too (Alfama, in no other memory, would find nothing), never the question's own."""
    project = projects.project_id(db, project_dir)
    lisbon = memories.add(db, project_id=project, content=_LISBON)
    short = memories.add(db, project_id=project, content=_TRIPS_AND_OTHER_THINGS[3])
    code = memories.add(db, project_id=project, source=CAPTURE_SOURCE, content=" ".join(
        f"Edited handler{n}.py: lambda self, value: return value or default when flag is false" for n in range(8)))
    memories.add(db, project_id=project, content=_ROME)
    memories.add(db, project_id=project, content="lambda functions return a default value when the flag is false")
    question = "How many trips did I take to Lisbon?"
    words = search.expansion_words(db, question, [(lisbon.seq, 0.9), (short.seq, 0.8), (code.seq, 0.7)])
    assert words and set(words) <= set(re.findall(r"\w+", _LISBON.lower()))
    assert not {"lambda", "return", "default", "flag", "false", "lisbon", "alfama", "sintra"} & set(words)
    assert search.expansion_words(db, question, [(short.seq, 0.9), (code.seq, 0.8)]) == []


def test_a_query_of_the_longest_length_is_searched_where_a_statement_binds_at_most_999_values(db, project_dir):
    """SQLite before 3.32 binds at most 999 values per statement; a 2,000-character query of distinct words
    needs more than that to stem and look up, so it is done in several statements (here the connection is
    set to that limit)."""
    import sqlite3

    db.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    project = projects.project_id(db, project_dir)
    words = [f"{chr(97 + n % 26)}{n // 26}" for n in range(700)]
    query = " ".join(words)[:search.MAX_QUERY_CHARS]
    assert 2 * len(search.query_terms(query)) > 999
    memory = memories.add(db, project_id=project, content=f"the build flag {words[400]} turns on tracing")
    memories.add(db, project_id=project, content=f"unrelated note about {words[3]} and {words[5]}")
    asked = search.query_terms(query)
    frequency = search.document_frequencies(db, "memories_vocab", asked)
    assert frequency[words[400]] == 1 and frequency[words[3]] == 1 and frequency[asked[-1]] == 0
    hits = search.search(db, query, project_id=project, mode="keyword", limit=5, track=False)
    assert memory.id in [hit.memory.id for hit in hits]


def test_neighbours_are_found_among_many_sessions_that_share_one_time(db, project, monkeypatch):
    """A chat imported with one date for many sessions ties all their turns: each turn's neighbours are still the
    turns next to it in its own session (by ``seq`` among the ties, then by time), the first and last have none
    on their open side, and only :data:`ccmemory.sessions.NEIGHBOUR_TIES` of the other sessions' ties are read."""
    from ccmemory import sessions

    when = "2025-03-01T00:00:00.000Z"
    added: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    for turn in range(4):
        for name in added:  # the sessions' turns interleave in storage order
            memory = memories.add(db, project_id=project, content=f"{name} turn {turn}", session_id=name,
                                  created_at=when)
            added[name].append(memory.seq)
    later = memories.add(db, project_id=project, content="a turn 4, a minute later", session_id="a",
                         created_at="2025-03-01T00:01:00.000Z")

    def neighbours(seq: int) -> tuple[int | None, int | None]:
        before, before_params = sessions.neighbour_sql("seq", before=True)
        after, after_params = sessions.neighbour_sql("seq", before=False)
        row = db.one(f"SELECT {before} AS before, {after} AS after FROM memories m WHERE m.seq = ?",
                     (*before_params, *after_params, seq))
        return row["before"], row["after"]

    for name, seqs in added.items():
        for index, seq in enumerate(seqs):
            expected_after = seqs[index + 1] if index + 1 < len(seqs) else (later.seq if name == "a" else None)
            assert neighbours(seq) == (seqs[index - 1] if index else None, expected_after), (name, index)
    assert neighbours(later.seq) == (added["a"][-1], None)
    monkeypatch.setattr(sessions, "NEIGHBOUR_TIES", 1)  # the next turn of b is two ties away: none is found
    assert neighbours(added["b"][0]) == (None, None)
