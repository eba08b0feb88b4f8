"""One small adapter per system compared by bench/compare.py; each runs in its own process.

An adapter is a class `Adapter(path, mode)` with: new_session(name) -> id, append(id, role,
text), bulk(id, [(role, text)]), load(id) -> list, search(query) -> list (or None when the
system has no full-text search), checkpoint(), close(), and `info()` describing the
system's version, SQLite version and durability. peers/run.py drives the workloads.
"""
