"""Session keys: the grammar `agent:<profile>:<platform>:<chat_type>:<chat_id>[:<thread>]`.

A key names a conversation on a messaging platform and, through its profile, the store
that owns it (S-30). The default profile is spelled `main`. Every component is escaped
before it is joined: `%`, `:` and control characters become `%XX` (UTF-8 bytes, upper-case
hex), so a chat id can never contain a separator and forge another key. Parsing accepts
only the canonical spelling (every `%XX` must be one that `build` would have written), so
one conversation has exactly one key string.

`build` validates the profile name; `parse` accepts any escaped profile text and says
whether it is a valid name (`SessionKey.profile_valid`): a gateway keeps writes for an
unresolvable owner waiting instead of refusing them (S-31). A gateway parses a key once,
at its door (`as_key`), and hands the typed `SessionKey` on; `SessionKey.text` is the
canonical string that routes, spool records and session rows store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import InvalidInput
from .home import DEFAULT_PROFILE, validate_profile

PREFIX = "agent"
#: A key is stored as a session's `session_key`, a label of at most 200 characters.
MAX_KEY_LENGTH = 200

_ESCAPED = re.compile(r"[%:\x00-\x1f\x7f]")
_PERCENT = re.compile(r"%([0-9A-F]{2})")


@dataclass(frozen=True)
class SessionKey:
    """A parsed key; components are unescaped text, `text` their canonical spelling."""

    profile: str
    platform: str
    chat_type: str
    chat_id: str
    thread: str | None = None
    text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Derived, never given: a key's string cannot disagree with its components.
        object.__setattr__(self, "text", _join(self.profile, self.platform, self.chat_type, self.chat_id,
                                               self.thread))

    @property
    def profile_valid(self) -> bool:
        try:
            validate_profile(self.profile)
        except InvalidInput:
            return False
        return True

    @property
    def is_default_profile(self) -> bool:
        return self.profile == DEFAULT_PROFILE

    @property
    def peer(self) -> tuple[str, str, str]:
        """The peer tuple (platform, chat_type, chat_id): the same for every bot in a DM."""
        return (self.platform, self.chat_type, self.chat_id)

    def __str__(self) -> str:
        return self.text


def escape(component: str) -> str:
    """`component` with `%`, `:` and control characters percent-encoded."""
    return _ESCAPED.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), component)


def unescape(text: str, what: str = "component") -> str:
    """The inverse of `escape`; refuses anything `escape` would not have written."""
    out = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), text)
    if escape(out) != text:
        raise InvalidInput(f"the key's {what} {text!r} is not canonically escaped")
    return out


def _component(value: object, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"the key's {what} must be text, not {type(value).__name__}")
    if not value:
        raise InvalidInput(f"the key's {what} must not be empty")
    return value


def _join(profile: str, platform: str, chat_type: str, chat_id: str, thread: str | None) -> str:
    parts = (profile, platform, chat_type, chat_id) if thread is None else (profile, platform, chat_type, chat_id,
                                                                            thread)
    return ":".join((PREFIX, *map(escape, parts)))


def build(profile: str | None, platform: str, chat_type: str, chat_id: str, thread: str | None = None) -> str:
    """The key of a conversation; `profile` None means the default profile (`main`)."""
    profile = DEFAULT_PROFILE if profile is None else validate_profile(profile)
    key = _join(profile, _component(platform, "platform"), _component(chat_type, "chat type"),
                _component(chat_id, "chat id"), _component(thread, "thread", required=False))
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"the key is {len(key)} characters once escaped; the limit is {MAX_KEY_LENGTH}")
    return key


def parse(key: str) -> SessionKey:
    """The components of a key, or InvalidInput naming what is wrong with it."""
    if not isinstance(key, str):
        raise InvalidInput(f"a session key must be text, not {type(key).__name__}")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"a session key is at most {MAX_KEY_LENGTH} characters")
    fields = key.split(":")
    if len(fields) not in (5, 6) or fields[0] != PREFIX:
        raise InvalidInput(
            f"{key!r} is not a session key: expected agent:<profile>:<platform>:<chat_type>:<chat_id>[:<thread>]"
        )
    names = ("profile", "platform", "chat type", "chat id", "thread")
    values = []
    for text, what in zip(fields[1:], names):
        if not text:
            raise InvalidInput(f"the key's {what} must not be empty")
        values.append(unescape(text, what))
    return SessionKey(*values)


def as_key(key: str | SessionKey) -> SessionKey:
    """`key` typed: a SessionKey as it is, a string parsed (InvalidInput if it is not a key)."""
    return key if isinstance(key, SessionKey) else parse(key)


def is_key(text: str) -> bool:
    try:
        parse(text)
    except InvalidInput:
        return False
    return True
