"""Usage accounting through the public Store contract: per (model, provider, task) rows,
totals that are the sum of the rows, validation, persistence."""

from __future__ import annotations

import pytest

from sessiondb import InvalidInput, NotFound

COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


@pytest.fixture
def sid(store):
    return store.create_session("cli").id


def row_for(usage, model, provider="", task=""):
    [row] = [r for r in usage.rows if (r.model, r.provider, r.task) == (model, provider, task)]
    return row


def test_a_session_without_usage_reports_zeros(store, sid):
    u = store.usage(sid)
    assert u.session_id == sid
    assert u.rows == ()
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens) == (0,) * 5
    assert u.cost_usd == 0 and u.calls == 0


def test_usage_accumulates_per_model_provider_and_task(store, sid):
    store.record_usage(sid, model="gpt-x", provider="openai", input_tokens=100, output_tokens=10, cost_usd=0.25)
    store.record_usage(sid, model="gpt-x", provider="openai", input_tokens=50, output_tokens=5,
                       cache_read_tokens=7, cache_write_tokens=3, reasoning_tokens=2, cost_usd=0.5)
    u = store.usage(sid)
    assert len(u.rows) == 1
    row = row_for(u, "gpt-x", "openai")
    assert (row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens, row.reasoning_tokens) == (
        150, 15, 7, 3, 2)
    assert row.cost_usd == pytest.approx(0.75)
    assert row.calls == 2


def test_a_record_of_several_calls_counts_them_all(store, sid):
    # A whole run's sums, recorded at once, are the same row its calls recorded one by one make.
    store.record_usage(sid, model="gpt-x", input_tokens=40, output_tokens=9, cost_usd=0.5, calls=3)
    store.record_usage(sid, model="gpt-x", input_tokens=2, output_tokens=1)
    row = row_for(store.usage(sid), "gpt-x", "")
    assert (row.calls, row.input_tokens, row.output_tokens, row.cost_usd) == (4, 42, 10, 0.5)
    assert store.usage(sid).calls == 4


def test_each_model_provider_and_task_gets_its_own_row(store, sid):
    keys = [
        ("gpt-x", "openai", ""),
        ("gpt-x", "azure", ""),
        ("gpt-x", "openai", "summary"),
        ("claude", "anthropic", "title"),
        ("claude", "", ""),
    ]
    for i, (model, provider, task) in enumerate(keys):
        store.record_usage(sid, model=model, provider=provider, task=task, input_tokens=i + 1)
    u = store.usage(sid)
    assert sorted((r.model, r.provider, r.task) for r in u.rows) == sorted(keys)
    for i, key in enumerate(keys):
        assert row_for(u, *key).input_tokens == i + 1
        assert row_for(u, *key).calls == 1


def test_the_totals_are_the_sums_of_the_rows(store, sid):
    calls = [
        dict(model="a", provider="p", input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4,
             reasoning_tokens=5, cost_usd=0.1),
        dict(model="a", provider="p", input_tokens=10, output_tokens=20, cost_usd=0.2),
        dict(model="b", task="title", input_tokens=100, reasoning_tokens=50, cost_usd=0.3),
        dict(model="c", cache_read_tokens=1000, cost_usd=0.0),
    ]
    for call in calls:
        store.record_usage(sid, **call)
    u = store.usage(sid)
    for name in COUNTERS:
        assert getattr(u, name) == sum(c.get(name, 0) for c in calls) == sum(getattr(r, name) for r in u.rows)
    assert u.cost_usd == pytest.approx(0.6)
    assert u.calls == 4 == sum(r.calls for r in u.rows)


def test_provider_and_task_default_to_empty(store, sid):
    store.record_usage(sid, model="m")
    store.record_usage(sid, model="m", provider="", task="")
    [row] = store.usage(sid).rows
    assert (row.provider, row.task, row.calls) == ("", "", 2)


def test_usage_is_per_session(store, sid):
    other = store.create_session("cli").id
    store.record_usage(sid, model="m", input_tokens=5)
    store.record_usage(other, model="m", input_tokens=7)
    assert store.usage(sid).input_tokens == 5
    assert store.usage(other).input_tokens == 7


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"model": None},
        {"model": 5},
        {"model": "m", "provider": 3},
        {"model": "m", "task": ["t"]},
        {"model": "m", "input_tokens": -1},
        {"model": "m", "output_tokens": 1.5},
        {"model": "m", "cache_read_tokens": "10"},
        {"model": "m", "reasoning_tokens": True},
        {"model": "m", "cache_write_tokens": float("nan")},
        {"model": "m", "cost_usd": -0.01},
        {"model": "m", "cost_usd": float("nan")},
        {"model": "m", "cost_usd": float("inf")},
        {"model": "m", "cost_usd": "0.1"},
        {"model": "m", "cost_usd": True},
        {"model": "m", "calls": 0},
        {"model": "m", "calls": -2},
        {"model": "m", "calls": True},
        {"model": "m", "calls": 2.0},
        {"model": "m", "calls": 10**16},
    ],
)
def test_bad_usage_raises_invalid_input_and_records_nothing(store, sid, kwargs):
    store.record_usage(sid, model="m", input_tokens=1)
    before = store.usage(sid)
    with pytest.raises(InvalidInput):
        store.record_usage(sid, **kwargs)
    assert store.usage(sid) == before


def test_usage_for_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.record_usage("ghost", model="m", input_tokens=1)
    with pytest.raises(NotFound):
        store.usage("ghost")


def test_usage_survives_reopening_the_store(store, sid, open_backend):
    store.record_usage(sid, model="m", provider="p", task="t", input_tokens=9, output_tokens=8, cost_usd=1.25)
    before = store.usage(sid)
    store.close()
    again = open_backend()
    assert again.usage(sid) == before
    again.record_usage(sid, model="m", provider="p", task="t", input_tokens=1)
    assert again.usage(sid).input_tokens == 10
    assert again.usage(sid).calls == 2


def test_small_costs_add_up_without_drift(store, sid):
    for _ in range(100):
        store.record_usage(sid, model="m", cost_usd=0.001)
    assert store.usage(sid).cost_usd == pytest.approx(0.1, abs=1e-9)
