"""model.message_of makes the Message every store read and append returns, without the
frozen dataclass's __init__: what it makes must be that Message in every way a caller sees."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from sessiondb.model import MESSAGE_FIELDS, Message, message_of

VALUES = (7, "s1", "u1", 3, "assistant", [{"type": "text", "text": "hi"}], [{"id": "c1"}], "c0", "grep",
          "thought", "stop", 12, 1700000000.5, "note", "active")


def test_message_of_is_the_message_its_constructor_makes():
    made, built = message_of(VALUES), Message(*VALUES)
    assert made == built and repr(made) == repr(built)
    plain = (*VALUES[:5], "hi", None, *VALUES[7:])  # text content: hashable, as a dataclass field must be
    assert hash(message_of(plain)) == hash(Message(*plain))
    assert made.to_dict() == built.to_dict() == dict(zip(MESSAGE_FIELDS, VALUES))
    assert pickle.loads(pickle.dumps(made)) == built and copy.deepcopy(made) == built
    assert dataclasses.replace(made, seq=4) == dataclasses.replace(built, seq=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 4  # type: ignore[misc]


def test_message_of_refuses_a_missing_or_extra_value():
    for values in (VALUES[:-1], (*VALUES, "extra")):
        with pytest.raises(ValueError):
            message_of(values)
