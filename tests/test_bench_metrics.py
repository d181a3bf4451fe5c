"""The benchmarks' metric arithmetic and data handling, on tiny synthetic inputs."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import coderecall  # noqa: E402
import locomo  # noqa: E402
import longmemeval  # noqa: E402
from metrics import (all_at, hit_at, mean_scores, ndcg_at, question_scores, recall_at,  # noqa: E402
                     reciprocal_rank)


def test_an_oracle_ranking_scores_one_everywhere():
    gold = {"a", "b", "c"}
    scores = question_scores(["a", "b", "c", "x", "y"], gold, ks=[1, 5, 10])
    assert scores["R@5"] == scores["R@10"] == scores["Hit@1"] == scores["All@5"] == 1.0
    assert scores["MRR"] == 1.0 and scores["NDCG@10"] == pytest.approx(1.0)
    assert scores["R@1"] == pytest.approx(1 / 3) and scores["All@1"] == 0.0


def test_recall_is_fractional_and_hit_is_any():
    ranking = ["x", "a", "y", "z", "w", "b"]
    gold = {"a", "b"}
    assert recall_at(ranking, gold, 5) == 0.5
    assert recall_at(ranking, gold, 6) == 1.0
    assert hit_at(ranking, gold, 1) == 0.0 and hit_at(ranking, gold, 2) == 1.0
    assert all_at(ranking, gold, 5) == 0.0 and all_at(ranking, gold, 6) == 1.0


def test_reciprocal_rank_respects_the_cutoff():
    ranking = ["x", "y", "a"]
    assert reciprocal_rank(ranking, {"a"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(ranking, {"a"}, cutoff=2) == 0.0
    assert reciprocal_rank(ranking, {"q"}) == 0.0


def test_ndcg_against_hand_computation():
    # gold at ranks 2 and 4 of 2 gold items: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at(["x", "a", "y", "b"], {"a", "b"}, 10) == pytest.approx(expected)
    assert ndcg_at(["x", "y"], {"a"}, 10) == 0.0


def test_repeated_keys_count_once():
    # two memories standing for the same gold turn do not double the recall
    assert recall_at(["a", "a", "b"], {"a", "c"}, 2) == 0.5
    assert question_scores(["a", "a", "c"], {"a", "c"}, ks=[2])["R@2"] == 1.0


def test_means_over_questions():
    rows = [question_scores(["a"], {"a"}, ks=[1]), question_scores(["x"], {"a"}, ks=[1])]
    assert mean_scores(rows)["Hit@1"] == 0.5
    assert mean_scores([]) == {}


def test_locomo_evidence_is_normalized_as_the_spec_says():
    known = {"D8:6", "D9:17", "D30:5", "D1:2"}
    assert locomo.normalize_evidence(["D8:6; D9:17"], known) == (["D8:6", "D9:17"], 0)
    assert locomo.normalize_evidence(["D30:05", "D", "D:11:26", "D99:1"], known) == (["D30:5"], 3)
    assert locomo.normalize_evidence("D1:2 D1:2", known) == (["D1:2"], 0)
    assert locomo.session_time("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00"
    assert locomo.session_numbers({"session_2": [], "session_10": [{}], "session_3_date_time": "x",
                                   "session_1": [{}]}) == [1, 2, 10]


class _Memory:
    def __init__(self, tool_use_id=None, session_id="s1", source="capture"):
        self.metadata = {"tool_use_id": tool_use_id} if tool_use_id else {}
        self.session_id = session_id
        self.source = source


def test_coderecall_relevance_and_scores():
    gold = {"tool_use_ids": ["toolu_s2_03"], "sessions": ["s2"]}
    ranked = [_Memory("toolu_s1_01"), _Memory(session_id="s2", source="summary"), _Memory("toolu_s2_03", "s2")]
    scores = coderecall.score(ranked, gold)
    assert scores["Hit@1"] == 0.0 and scores["Hit@5"] == 1.0 and scores["MRR@10"] == 0.5
    assert scores["session Hit@5"] == 1.0
    # a non-summary memory of a gold session is not relevant by itself
    assert coderecall.score([_Memory("toolu_s2_99", "s2")], gold)["Hit@10"] == 0.0
    assert coderecall.substitute({"a": ["{PROJECT}/x", "in {PROJECT}"]}, "/p", "/t") == {"a": ["/p/x", "in {PROJECT}"]}


def test_longmemeval_levels_and_their_gold():
    item = {"haystack_session_ids": ["s1", "s2", "s3"], "haystack_dates": ["2023/05/20 (Sat) 10:44"] * 3,
            "answer_session_ids": ["s1", "s2"],
            "haystack_sessions": [
                [{"role": "user", "content": "I adopted a cat", "has_answer": True},
                 {"role": "assistant", "content": "Congratulations!"}, {"role": "user", "content": "Her name is Ada"}],
                [{"role": "user", "content": "Any tips?"}, {"role": "assistant", "content": "Feed her twice a day",
                                                            "has_answer": True}],
                [{"role": "user", "content": "   "}, {"role": "user", "content": "Unrelated"}]]}
    docs, gold = longmemeval.documents(item, "session")
    assert [doc[0] for doc in docs] == ["s1", "s2", "s3"] and gold == ["s1", "s2"]
    assert docs[0][3] == "I adopted a cat\nHer name is Ada"
    # LongMemEval's own gold: only answer sessions with a has_answer *user* turn.
    assert longmemeval.answer_sessions(item) == ["s1"]
    docs, gold = longmemeval.documents(item, "turn")
    assert [doc[0] for doc in docs] == ["s1#0", "s1#2", "s2#0", "s3#1"] and gold == ["s1#0"]
    assert {doc[1] for doc in docs} == {"s1", "s2", "s3"}
