"""Retention rules, legal holds and prune for every backend: the checked calls of the
contract's policy section (a mixin of CheckedStore, like turns.py); what they do is
retention.py's."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from ..errors import InvalidInput
from ..inputs import check_flag, check_label, check_session_ref
from ..model import Hold, MaintenanceReport, Policies, Policy, PolicyReport
from . import commands as cmd
from . import retention
from .backend import Backend

MAX_PERIOD = 200 * 365 * 86400.0  # seconds: a period longer than this is a mistake, not a rule
MAX_KEEP = 10**9
MAX_REASON = 1000  # characters of a hold's reason


def _period(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_PERIOD:
        raise InvalidInput(f"{name} must be a number of seconds above 0 and at most {MAX_PERIOD:,.0f} "
                           f"(200 years), not {value!r}")
    return float(value)


class PolicyCalls:
    """The retention methods of CheckedStore."""

    _clock: Callable[[], float]
    _open: Callable[[], Backend]  # CheckedStore's: the backend, or StoreClosed

    def policy(self) -> Policies:
        return self._open().read(retention.policies)

    def set_policy(self, *, source: str | None = None, inactive_after: float | None = None,
                   keep_last: int | None = None, compacted_after: float | None = None,
                   never_active_after: float | None = None, force: bool = False) -> Policy:
        if keep_last is not None and (isinstance(keep_last, bool) or not isinstance(keep_last, int)
                                      or not 1 <= keep_last <= MAX_KEEP):
            raise InvalidInput(f"keep_last must be a whole number of conversations from 1, not {keep_last!r}")
        policy = Policy(source=check_label(source, "source"),
                        inactive_after=_period(inactive_after, "inactive_after"), keep_last=keep_last,
                        compacted_after=_period(compacted_after, "compacted_after"),
                        never_active_after=_period(never_active_after, "never_active_after"))
        if all(getattr(policy, rule) is None for rule in
               ("inactive_after", "keep_last", "compacted_after", "never_active_after")):
            raise InvalidInput("say what to keep: inactive_after, keep_last, compacted_after or never_active_after "
                               "(clear_policy removes the rules)")
        return self._open().write(partial(retention.set_rules, policy=policy, now=self._clock(),
                                          force=check_flag(force, "force")))

    def clear_policy(self, *, source: str | None = None) -> bool:
        return self._open().write(partial(retention.remove, key=retention.rules_key(check_label(source, "source"))))

    def hold(self, *, user_id: str | None = None, session_id: str | None = None, reason: str) -> Hold:
        hold = Hold(*_held(user_id, session_id), reason=_reason(reason), placed_at=self._clock())
        self._open().write(partial(retention.put, key=retention.hold_key(hold.user_id, hold.session_id),
                                   value=hold.to_dict(), now=hold.placed_at))
        return hold

    def release_hold(self, *, user_id: str | None = None, session_id: str | None = None) -> bool:
        return self._open().write(partial(retention.remove, key=retention.hold_key(*_held(user_id, session_id))))

    def apply_policy(self, *, dry_run: bool = True, force: bool = False) -> PolicyReport:
        return retention.apply(self._open(), now=self._clock(), dry_run=check_flag(dry_run, "dry_run"),
                               force=check_flag(force, "force"))

    def prune(self, *, older_than: float | None = None, never_active: bool = False, include_pinned: bool = False,
              include_archived: bool = False, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        now = self._clock()
        if older_than is not None and (isinstance(older_than, bool) or not isinstance(older_than, (int, float))
                                       or not 0 <= older_than < float("inf")):
            raise InvalidInput(f"older_than must be a number of seconds from 0, not {older_than!r}")
        if older_than is None and not check_flag(never_active, "never_active"):
            raise InvalidInput("say what to prune: older_than (seconds), never_active=True, or both")
        check_flag(force, "force")  # accepted as before: a prune runs beside other processes, never refused
        command = cmd.Prune(
            inactive_before=None if older_than is None else now - older_than,
            never_active_before=now - retention.NEVER_ACTIVE_FLOOR if never_active else None,
            include_pinned=check_flag(include_pinned, "include_pinned"),
            include_archived=check_flag(include_archived, "include_archived"), dry_run=check_flag(dry_run, "dry_run"))
        backend = self._open()
        before = backend.footprint()[0]
        taken = retention.prune(backend, command)
        return MaintenanceReport("prune", command.dry_run, before, backend.footprint()[0], sessions=taken)


def _held(user_id: Any, session_id: Any) -> tuple[str | None, str | None]:
    if (user_id is None) == (session_id is None):
        raise InvalidInput("a hold names one user_id or one session_id")
    return check_label(user_id, "user_id"), None if session_id is None else check_session_ref(session_id)


def _reason(reason: Any) -> str:
    text = check_label(reason, "reason", required=True)
    if not text.strip() or len(text) > MAX_REASON:
        raise InvalidInput(f"a hold says why, in at most {MAX_REASON} characters")
    return text

