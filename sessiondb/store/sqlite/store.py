"""SQLiteStore: the Store contract on an embedded SQLite file.

Input is validated here, on the caller's thread, before anything reaches the writer;
writes then run as units of work on the file's one writer (group commit), reads on a
pooled read connection. See store/contract.py for what each method promises.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

import apsw

from ... import home as homes
from ...errors import InvalidInput, StoreClosed
from ...model import (
    Message, Page, Session, Usage, check_label, check_metadata, check_timestamp, clean_title,
    new_session_id, prepare_messages,
)
from ..contract import MessageInput
from . import messages as message_rows, registry, sessions, usage
from .connect import DEFAULT_PATIENCE, check_durability, check_sqlite_version

T = TypeVar("T")
MAX_PAGE = 1000


class SQLiteStore:
    """A handle on one SQLite store file; many handles share the file's one writer."""

    def __init__(
        self,
        path: Path,
        *,
        profile: str | None = None,
        durability: str = "full",
        patience: float = DEFAULT_PATIENCE,
        vfs: str | None = None,
    ) -> None:
        check_sqlite_version(apsw.sqlite_lib_version())
        self._durability = check_durability(durability)
        if not (isinstance(patience, (int, float)) and patience >= 0):
            raise InvalidInput("patience must be a non-negative number of seconds")
        self._path = path
        self._profile = profile
        self._closed = threading.Event()
        self._file = registry.acquire(path, durability=durability, patience=float(patience), vfs=vfs)

    # --- the handle --------------------------------------------------------------------

    @property
    def profile(self) -> str | None:
        return self._profile

    @property
    def location(self) -> str:
        return str(self._path)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def journal_mode(self) -> str:
        return self._file.journal_mode

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        registry.release(self._file, self._durability)

    def __enter__(self) -> "SQLiteStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r}, profile={self._profile!r})"

    def _write(self, work: Callable[[apsw.Connection], T]) -> T:
        self._check_open()
        return self._file.writer.run(work)

    def _read(self, work: Callable[[apsw.Connection], T]) -> T:
        self._check_open()
        return self._file.read(work)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")

    # --- sessions ----------------------------------------------------------------------

    def create_session(
        self,
        source: str,
        *,
        session_id: str | None = None,
        title: str | None = None,
        profile: str | None = None,
        session_key: str | None = None,
        user_id: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        parent_session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        now = time.time()
        values = {
            "id": check_label(session_id, "session_id") or new_session_id(now),
            "source": check_label(source, "source", required=True),
            "profile": homes.validate_profile(profile) if profile is not None else self._profile,
            "session_key": check_label(session_key, "session_key"),
            "user_id": check_label(user_id, "user_id"),
            "chat_id": check_label(chat_id, "chat_id"),
            "chat_type": check_label(chat_type, "chat_type"),
            "thread_id": check_label(thread_id, "thread_id"),
            "title": clean_title(title),
            "model": check_label(model, "model"),
            "parent_session_id": check_label(parent_session_id, "parent_session_id"),
            "started_at": now,
            "metadata": check_metadata(metadata),
        }
        return self._write(partial(sessions.create, values=values))

    def get_session(self, session_id: str) -> Session:
        return self._read(partial(sessions.get, session_id=_sid(session_id)))

    def list_sessions(
        self,
        *,
        source: str | None = None,
        include_archived: bool = False,
        include_hidden: bool = False,
        pinned: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        return self._read(
            partial(
                sessions.list_page,
                source=check_label(source, "source"),
                include_archived=_flag(include_archived, "include_archived"),
                include_hidden=_flag(include_hidden, "include_hidden"),
                pinned=None if pinned is None else _flag(pinned, "pinned"),
                since=check_timestamp(since, "since"),
                until=check_timestamp(until, "until"),
                limit=_limit(limit),
                cursor=None if cursor is None else check_label(cursor, "cursor"),
            )
        )

    def end_session(self, session_id: str, reason: str) -> Session:
        reason = check_label(reason, "reason", required=True)
        return self._write(partial(sessions.end, session_id=_sid(session_id), reason=reason, now=time.time()))

    def reopen_session(self, session_id: str) -> Session:
        return self._write(partial(sessions.reopen, session_id=_sid(session_id)))

    def set_title(self, session_id: str, title: str | None) -> Session:
        return self._write(partial(sessions.set_title, session_id=_sid(session_id), title=clean_title(title)))

    def set_flags(
        self,
        session_id: str,
        *,
        pinned: bool | None = None,
        archived: bool | None = None,
        hidden: bool | None = None,
    ) -> Session:
        given = {"pinned": pinned, "archived": archived, "hidden": hidden}
        flags = {name: _flag(value, name) for name, value in given.items() if value is not None}
        return self._write(partial(sessions.set_flags, session_id=_sid(session_id), flags=flags))

    def update_metadata(self, session_id: str, patch: Mapping[str, Any]) -> Session:
        check_metadata(patch)
        return self._write(partial(sessions.update_metadata, session_id=_sid(session_id), patch=dict(patch)))

    def delete_session(self, session_id: str) -> None:
        self._write(partial(sessions.delete, session_id=_sid(session_id)))

    # --- messages ----------------------------------------------------------------------

    def append(self, session_id: str, messages: MessageInput | Iterable[MessageInput]) -> list[Message]:
        batch = prepare_messages(messages)
        return self._write(partial(message_rows.append, session_id=_sid(session_id), batch=batch, now=time.time()))

    def transcript(
        self,
        session_id: str,
        *,
        include_compacted: bool = False,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
        order: str = "asc",
    ) -> list[Message]:
        return self._read(
            partial(
                message_rows.transcript,
                session_id=_sid(session_id),
                include_compacted=_flag(include_compacted, "include_compacted"),
                limit=None if limit is None else _count(limit, "limit"),
                before=None if before is None else _count(before, "before"),
                after=None if after is None else _count(after, "after"),
                order=order,
            )
        )

    # --- usage -------------------------------------------------------------------------

    def record_usage(
        self,
        session_id: str,
        *,
        model: str,
        provider: str = "",
        task: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        key = (
            check_label(model, "model", required=True),
            check_label(provider, "provider") or "",
            check_label(task, "task") or "",
        )
        amounts: dict[str, float] = {
            "input_tokens": _count(input_tokens, "input_tokens"),
            "output_tokens": _count(output_tokens, "output_tokens"),
            "cache_read_tokens": _count(cache_read_tokens, "cache_read_tokens"),
            "cache_write_tokens": _count(cache_write_tokens, "cache_write_tokens"),
            "reasoning_tokens": _count(reasoning_tokens, "reasoning_tokens"),
            "cost_usd": _cost(cost_usd),
        }
        self._write(partial(usage.record, session_id=_sid(session_id), key=key, amounts=amounts))

    def usage(self, session_id: str) -> Usage:
        return self._read(partial(usage.total, session_id=_sid(session_id)))


# --- argument checks shared by the methods above ---------------------------------------


def _sid(session_id: Any) -> str:
    return check_label(session_id, "session_id", required=True)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false, not {value!r}")
    return value


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be a non-negative integer, not {value!r}")
    return value


def _limit(value: Any) -> int:
    value = _count(value, "limit")
    if not 1 <= value <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
    return value


def _cost(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise InvalidInput(f"cost_usd must be a non-negative number, not {value!r}")
    return float(value)
