"""How every adapter gets its store: handed in and left open, or opened and owned."""

from __future__ import annotations

import asyncio

import pytest

import sessiondb
from sessiondb.adapters.binding import StoreBinding


def test_an_opened_store_is_owned_and_closed(tmp_path):
    binding = StoreBinding(location=tmp_path / "state.db")
    session = binding.sync.create_session("cli")
    assert asyncio.run(binding.call("get_session", session.id)).id == session.id
    binding.close()
    with pytest.raises(sessiondb.StoreClosed):
        binding.sync.get_session(session.id)


def test_a_handed_in_store_stays_open(tmp_path):
    with sessiondb.open_store(tmp_path / "state.db") as store:
        StoreBinding(store=store).close()
        assert store.create_session("cli").id
        StoreBinding(store=sessiondb.AsyncStore(store)).close()
        assert store.create_session("cli").id


def test_a_store_and_a_place_to_open_one_is_refused(tmp_path):
    with sessiondb.open_store(tmp_path / "state.db") as store:
        with pytest.raises(sessiondb.InvalidInput, match="not both"):
            StoreBinding(store=store, location=tmp_path / "other.db")
        with pytest.raises(sessiondb.InvalidInput, match="must be a sessiondb Store"):
            StoreBinding(store=object())
