"""Session keys: one spelling per conversation, and no chat id can forge another key."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from sessiondb import keys
from sessiondb.errors import InvalidInput

profiles = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,15}", fullmatch=True)
text = st.text(min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(profiles, text, text, text, st.none() | text)
def test_parsing_a_built_key_gives_back_every_component(profile, platform, chat_type, chat_id, thread):
    key = keys.build(profile, platform, chat_type, chat_id, thread)
    parsed = keys.parse(key)
    assert (parsed.profile, parsed.platform, parsed.chat_type, parsed.chat_id, parsed.thread) == (
        profile, platform, chat_type, chat_id, thread)
    assert str(parsed) == key


@settings(max_examples=200, deadline=None)
@given(text, text)
def test_no_chat_id_can_forge_another_conversations_key(chat_id, other):
    forged = keys.build("work", "telegram", "dm", chat_id)
    assert forged.count(":") == 4  # a chat id never adds a separator
    if chat_id != other:
        assert forged != keys.build("work", "telegram", "dm", other)
        assert forged != keys.build("work", "telegram", "dm", other, chat_id)


def test_a_chat_id_that_spells_a_thread_stays_a_chat_id():
    key = keys.build("main", "slack", "group", "C1:T9")
    assert key == "agent:main:slack:group:C1%3AT9"
    assert keys.parse(key).chat_id == "C1:T9" and keys.parse(key).thread is None


def test_the_default_profile_is_spelled_main():
    assert keys.build(None, "telegram", "dm", "1") == "agent:main:telegram:dm:1"
    assert keys.parse("agent:main:telegram:dm:1").is_default_profile


@pytest.mark.parametrize("bad", [
    "agent:main:telegram:dm",  # too few parts
    "agent:main:telegram:dm:1:2:3",  # too many
    "user:main:telegram:dm:1",  # wrong prefix
    "agent:main::dm:1",  # empty component
    "agent:main:telegram:dm:%3a",  # lower-case escape: not canonical
    "agent:main:telegram:dm:%61",  # an escape build never writes
    "agent:main:telegram:dm:50%",  # a bare percent
])
def test_keys_that_are_not_canonical_are_refused(bad):
    with pytest.raises(InvalidInput):
        keys.parse(bad)


def test_build_refuses_invalid_profiles_and_parse_reports_them():
    with pytest.raises(InvalidInput):
        keys.build("Not A Profile", "telegram", "dm", "1")
    parsed = keys.parse("agent:Bad%0Aname:telegram:dm:1")
    assert parsed.profile == "Bad\nname" and not parsed.profile_valid


def test_a_key_longer_than_a_session_key_may_be_is_refused():
    with pytest.raises(InvalidInput):
        keys.build("main", "telegram", "dm", "x" * 300)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("agent:main%3A0x\n-_"), max_size=40))
def test_any_text_parse_accepts_is_the_one_spelling_of_its_key(text):
    try:
        parsed = keys.parse(text)
    except InvalidInput:
        return
    assert str(parsed) == parsed.text == text
