"""A backend serves a URL scheme by registering, in code or through an installed package's
entry point, and open_store opens it without sessiondb knowing it; an unknown scheme is
refused naming the ones that are served."""

from __future__ import annotations

import importlib.metadata

import pytest

import sessiondb
from sessiondb.store import locations
from sessiondb.store.memory import MemoryBackend


@pytest.fixture(autouse=True)
def registry(monkeypatch):
    """The registry as it was, after each test (registrations are process-wide)."""
    monkeypatch.setattr(locations, "BACKENDS", dict(locations.BACKENDS))
    monkeypatch.setattr(locations, "_discovered", False)


class Notebook:
    """A third party's backend: its own provider, here built on the memory backend's rows."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, str | None, dict]] = []

    def open_backend(self, target: str, *, profile: str | None, **options) -> MemoryBackend:
        self.opened.append((target, profile, options))
        return MemoryBackend(f"notebook-{target}", profile=profile)


def test_a_registered_scheme_opens_through_its_provider():
    notebook = Notebook()
    sessiondb.register_backend("notebook", notebook)
    with sessiondb.open_store("notebook://shelf/a", profile="work", durability="normal") as store:
        assert store.backend.location == "memory://notebook-notebook://shelf/a"
    assert notebook.opened == [("notebook://shelf/a", "work", {"durability": "normal", "patience": 30.0})]


def test_a_bare_opener_is_enough():
    sessiondb.register_backend("bare", lambda target, *, profile, **options: MemoryBackend("bare"))
    with sessiondb.open_store("bare://x") as store:
        store.backend.write(lambda rows: rows.insert("sessions", [{"id": "s", "source": "cli", "started_at": 1.0}]))
        assert store.backend.read(lambda rows: rows.count("sessions")) == {None: {"count": 1}}


def test_an_installed_package_registers_by_entry_point(monkeypatch):
    declared = importlib.metadata.EntryPoint(name="shelved", value="sessiondb.store.memory",
                                             group=locations.ENTRY_POINTS)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [declared] if group == locations.ENTRY_POINTS else [])
    assert "shelved" in locations.known_schemes()
    with sessiondb.open_store("shelved://box") as store:
        assert isinstance(store.backend, MemoryBackend) and store.backend.name == "box"


def test_a_registration_in_code_wins_over_an_entry_point_of_the_same_scheme(monkeypatch):
    notebook = Notebook()
    sessiondb.register_backend("shelved", notebook)
    declared = importlib.metadata.EntryPoint(name="shelved", value="sessiondb.store.memory",
                                             group=locations.ENTRY_POINTS)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [declared])
    assert "shelved" in locations.known_schemes()  # the installed packages were looked at
    sessiondb.open_store("shelved://box").close()
    assert [target for target, _, _ in notebook.opened] == ["shelved://box"]


def test_the_built_in_backends_register_the_same_way():
    assert {"sqlite", "postgresql", "postgres", "memory"} <= set(locations.known_schemes())
    assert isinstance(sessiondb.open_store("memory://built-in").backend, MemoryBackend)


def test_an_unknown_scheme_is_refused_naming_the_known_ones():
    with pytest.raises(sessiondb.InvalidInput) as refused:
        sessiondb.open_store("nowhere://x")
    message = str(refused.value)
    assert "nowhere:" in message and "memory:" in message and "postgresql:" in message
    assert "register_backend" in message


@pytest.mark.parametrize("scheme", ["", "x", "Upper", "1st", "has space", None])
def test_a_scheme_that_cannot_begin_a_location_is_refused(scheme):
    with pytest.raises(sessiondb.InvalidInput, match="scheme"):
        sessiondb.register_backend(scheme, Notebook())


def test_an_opener_that_cannot_open_is_refused():
    with pytest.raises(sessiondb.InvalidInput, match="opener"):
        sessiondb.register_backend("notebook", 42)
