"""Recall by meaning, on every backend (S-54): with an embedder, a question finds the message
that answers it in other words; the vectors are derived data, caught up before a recall,
computed again when deleted, never another embedder's, and never in a write's way.
The embedder here is a small deterministic one (words grouped into concepts), so what is
near is known."""

from __future__ import annotations

import re
import zlib

import pytest

from sessiondb import InvalidInput
from sessiondb.embedding import EmbedderFailed, Space

CONCEPTS = {
    "dog": 0, "puppy": 0, "buddy": 0, "pet": 0,
    "violin": 1, "music": 1, "instrument": 1, "plays": 1,
    "hiking": 2, "alps": 2, "mountain": 2, "trip": 2,
}


class Concepts:
    """A word's concept is one dimension (CONCEPTS), any other word one of the rest by its hash."""

    name, revision, dimensions = "concepts", "1", 16

    def __init__(self) -> None:
        self.calls = 0
        self.failing = False

    def embed(self, texts):
        self.calls += 1
        if self.failing:
            raise RuntimeError("the model server is down")
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in re.findall(r"\w+", text.lower()):
                dimension = CONCEPTS.get(word)
                if dimension is None:
                    dimension, weight = 3 + zlib.crc32(word.encode()) % (self.dimensions - 3), 0.2
                else:
                    weight = 1.0
                vector[dimension] += weight
            vectors.append(vector)
        return vectors


class Renamed(Concepts):
    revision = "2"


def uids(hits):
    return [h.uid for h in hits]


@pytest.fixture
def embedder():
    return Concepts()


@pytest.fixture
def meaning_store(open_backend, embedder):
    return open_backend(embedder=embedder)


@pytest.fixture
def chat(meaning_store):
    s = meaning_store.create_session("telegram")
    meaning_store.append(s.id, [
        {"uid": "puppy", "role": "user", "content": "I adopted a puppy last week"},
        {"uid": "violin", "role": "user", "content": "My sister plays the violin"},
        {"uid": "alps", "role": "assistant", "content": "We went hiking in the Alps"},
        {"uid": "lunch", "role": "user", "content": "Lunch is at noon, as always."},
    ])
    return s


def test_a_message_that_shares_no_word_with_the_question_is_recalled_by_its_meaning(meaning_store, chat):
    hits = meaning_store.recall("Which pet do I have?")
    assert hits[0].uid == "puppy" and hits[0].found_by == "meaning" and hits[0].note is None
    assert meaning_store.search("pet") == []  # the words alone find nothing


def test_a_message_both_legs_find_says_so(meaning_store, chat):
    hit = meaning_store.recall("the violin")[0]
    assert (hit.uid, hit.found_by) == ("violin", "words and meaning")


def test_every_acknowledged_message_is_recalled_at_once(meaning_store, chat):
    for i in range(30):
        meaning_store.append(chat.id, {"uid": f"m{i}", "role": "user", "content": f"note {i}"})
    meaning_store.append(chat.id, {"uid": "last", "role": "user", "content": "our dog barks"})
    assert set(uids(meaning_store.recall("puppy", limit=2))) == {"puppy", "last"}  # "dog": by meaning


def test_without_an_embedder_recall_is_lexical_and_each_hit_says_so(open_backend, chat):
    plain = open_backend(name="plain")
    s = plain.create_session("cli")
    plain.append(s.id, {"uid": "v", "role": "user", "content": "the violin"})
    hit = plain.recall("violin")[0]
    assert hit.found_by == "words" and "without an embedder" in hit.note


def test_an_embedder_that_fails_never_fails_a_write_and_recall_turns_lexical(meaning_store, chat, embedder):
    embedder.failing = True
    meaning_store.append(chat.id, {"uid": "more", "role": "user", "content": "another violin lesson"})
    hits = meaning_store.recall("violin")
    assert set(uids(hits)) == {"violin", "more"}
    assert all(h.found_by == "words" and "model server is down" in h.note for h in hits)
    embedder.failing = False
    hits = meaning_store.recall("instrument")
    assert set(uids(hits[:2])) == {"violin", "more"} and hits[0].note is None


def test_vectors_of_another_embedder_are_refused_until_computed_again(open_backend, meaning_store, chat):
    meaning_store.recall("pet")  # vectors computed by Concepts revision 1
    meaning_store.close()
    other = open_backend(embedder=Renamed())
    hits = other.recall("violin")
    assert uids(hits) == ["violin"] and "rebuild" in hits[0].note
    assert Space.of(Concepts()).key in hits[0].note
    assert other.rebuild_vectors() == 4
    hit = other.recall("Which pet do I have?")[0]
    assert (hit.uid, hit.note) == ("puppy", None)


def test_a_rebuild_needs_an_embedder_and_a_failing_one_leaves_recall_lexical(open_backend, meaning_store, chat,
                                                                             embedder):
    with pytest.raises(InvalidInput, match="needs an embedder"):
        open_backend(name="plain").rebuild_vectors()
    embedder.failing = True
    with pytest.raises(EmbedderFailed, match="model server is down"):
        meaning_store.rebuild_vectors()
    hits = meaning_store.recall("violin")
    assert uids(hits) == ["violin"] and "model server is down" in hits[0].note
    embedder.failing = False
    assert meaning_store.rebuild_vectors() == 4


def test_rewound_messages_are_never_recalled_and_deleted_ones_leave_the_vectors(meaning_store, chat):
    assert "violin" in uids(meaning_store.recall("instrument"))
    puppy = next(m for m in meaning_store.transcript(chat.id) if m.uid == "puppy")
    meaning_store.rewind(chat.id, puppy.id)
    assert "violin" not in uids(meaning_store.recall("instrument"))
    meaning_store.delete_session(chat.id)
    assert meaning_store.recall("Which pet do I have?") == []
