"""Turn records for every backend: the checked calls of the contract's turns section.

A mixin of CheckedStore, like transfer.py. The end reason is checked against the guidance
table, and the outcome is read from it, so a stored record can never pair a reason with
another outcome than the one its sentence describes (S-50). Failed-edit receipts (S-52)
are checked whole and stored as canonical JSON.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any, Callable, Iterable, Mapping

from .. import guidance
from ..errors import InvalidInput
from ..model import Turn, dump_json
from ..inputs import check_label, check_limit, check_nonnegative, check_session_ref, check_unicode, new_uid
from . import commands as cmd
from . import turn_rows
from .backend import Backend

MAX_RECEIPTS = 1000  # failed edits one turn keeps (a runaway tool loop is not a receipt)
MAX_TEXT = 4000  # characters of an error's text kept in a turn or a receipt
_RECEIPT_FIELDS = {"path", "error", "mtime_ns", "size"}


class Turns:
    """The turn methods of CheckedStore."""

    _clock: Callable[[], float]
    _open: Callable[[], Backend]  # CheckedStore's: the backend, or StoreClosed

    def begin_turn(self, session_id: str, *, turn_id: str | None = None, user_uid: str | None = None,
                   cwd: str | None = None) -> Turn:
        return self._open().write(partial(turn_rows.begin, command=cmd.BeginTurn(
            id=check_label(turn_id, "turn_id") or new_uid(),
            session_id=check_session_ref(session_id),
            user_uid=check_label(user_uid, "user_uid"),
            cwd=_directory(cwd),
            started_at=self._clock(),
        )))

    def end_turn(self, turn_id: str, reason: str, *, detail: str | None = None,
                 receipts: Iterable[Mapping[str, Any]] = (), continued_by: str | None = None) -> Turn:
        return self._open().write(partial(turn_rows.end, command=cmd.EndTurn(
            id=check_label(turn_id, "turn_id", required=True),
            outcome=guidance.turn_outcome(reason),
            reason=reason,
            detail=_text(detail, "detail"),
            receipts=dump_json(_receipts(receipts), "receipts"),
            continued_by=check_label(continued_by, "continued_by"),
            ended_at=self._clock(),
        )))

    def get_turn(self, turn_id: str) -> Turn:
        return self._open().read(partial(turn_rows.get, turn_id=check_label(turn_id, "turn_id", required=True)))

    def turns(self, session_id: str, *, limit: int = 100) -> list[Turn]:
        return self._open().read(partial(turn_rows.of_session, session_id=check_session_ref(session_id),
                                         limit=check_limit(limit)))


def _directory(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not os.path.isabs(value) or "\x00" in value:
        raise InvalidInput(f"cwd must be an absolute directory path, not {value!r}")
    return check_unicode(os.path.normpath(value), "cwd")


def _text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}")
    return check_unicode(value, what)[:MAX_TEXT]


def _receipts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInput("receipts must be a list of failed edits (mappings of path, error, mtime_ns, size)")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or set(item) != _RECEIPT_FIELDS:
            raise InvalidInput(f"receipt {i} must give exactly path, error, mtime_ns and size")
        path = item["path"]
        if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
            raise InvalidInput(f"receipt {i}: path must be the absolute path the tool resolved, not {path!r}")
        for name in ("mtime_ns", "size"):
            if item[name] is not None:
                check_nonnegative(item[name], f"receipt {i}: {name}")
        out.append({"path": check_unicode(path, f"receipt {i}: path"),
                    "error": _text(item["error"], f"receipt {i}: error") or "",
                    "mtime_ns": item["mtime_ns"], "size": item["size"]})
    if len(out) > MAX_RECEIPTS:
        raise InvalidInput(f"a turn keeps at most {MAX_RECEIPTS} failed edits, not {len(out)}")
    return out
