"""Rows.recent and the `folded` condition (store/rows.py) on every backend: the listing's
order and bounds, and a title's match in another case of ASCII letters."""

from __future__ import annotations

import pytest

from sessiondb.store.rows import folded


@pytest.fixture
def rows_of(store):
    """write(work) / read(work) on this test's store's backend."""
    return store.backend


def _session(sid: str, started: float, active: float | None = None, **columns):
    return {"id": sid, "source": "cli", "started_at": started, "metadata": "{}", **columns} | (
        {} if active is None else {"last_activity_at": active})


# (id, started_at, last_activity_at): activity is the last, or the start before any
SESSIONS = [("a", 100.0, None), ("b", 50.0, 160.0), ("c", 160.0, None), ("d", 10.0, 30.0), ("e", 120.0, 179.5)]
ORDER = ["e", "c", "b", "a", "d"]  # activity 179.5, 160 (c > b by id), 160, 100, 30


@pytest.fixture
def stored(rows_of):
    rows_of.write(lambda rows: rows.insert("sessions", [_session(s, t, a, pinned=int(s in "ce"))
                                                        for s, t, a in SESSIONS]))
    return rows_of


def _ids(rows_of, where=None, **options):
    return [r["id"] for r in rows_of.read(lambda rows: rows.recent(where or {}, limit=options.pop("limit", 10),
                                                                   **options))]


def test_recent_orders_by_activity_then_id_newest_first_with_every_column(stored):
    assert _ids(stored) == ORDER
    first = stored.read(lambda rows: rows.recent(limit=1))
    assert len(first) == 1 and first[0]["id"] == "e" and first[0]["last_activity_at"] == 179.5
    assert set(first[0]) >= {"title", "metadata", "pinned", "parent_relation"}


def test_recent_bounds_the_activity_time_since_inclusive_until_exclusive(stored):
    assert _ids(stored, since=160.0) == ["e", "c", "b"]
    assert _ids(stored, until=160.0) == ["a", "d"]
    assert _ids(stored, since=100.0, until=179.5) == ["c", "b", "a"]


def test_recent_starts_past_a_position_and_keeps_its_conditions(stored):
    assert _ids(stored, after=(160.0, "c")) == ["b", "a", "d"]
    assert _ids(stored, after=(160.0, "b")) == ["a", "d"]
    assert _ids(stored, after=(179.5, "e"), limit=2) == ["c", "b"]
    assert _ids(stored, {"pinned": 1}) == ["e", "c"]
    assert _ids(stored, {"pinned": 0}, after=(170.0, "z")) == ["b", "a", "d"]


def test_folded_ignores_the_case_of_ascii_letters_only(rows_of):
    titles = {"s1": "Trip to Kyoto", "s2": "Été", "s3": "trip_to"}
    rows_of.write(lambda rows: rows.insert("sessions", [_session(s, 1.0, title=t) for s, t in titles.items()]))

    def found(text):
        return sorted(r["id"] for r in rows_of.read(lambda rows: rows.select("sessions", {"title": folded(text)},
                                                                              columns=["id"])))

    assert found("TRIP TO KYOTO") == ["s1"]
    assert found("trip to kyoto") == ["s1"]
    assert found("ÉTé") == ["s2"] and found("ÉTÉ") == [] and found("éTé") == []
    assert found("TRIP%TO") == [] and found("TRIP_TO") == ["s3"]  # no pattern characters
