"""sessiondb through its public API; mode is the durability ('full', the default, or 'normal')."""

from __future__ import annotations

import apsw

import sessiondb


class Adapter:
    def __init__(self, path: str, mode: str) -> None:
        self.path = path
        self.durability = "full" if mode == "default" else mode
        self.store = sessiondb.open_store(path, durability=self.durability)

    def info(self) -> dict:
        from importlib import metadata
        return {"version": metadata.version("sessiondb"), "sqlite": apsw.sqlite_lib_version(),
                "library": f"APSW {apsw.apsw_version()}",
                "durability": ("WAL, synced after each commit, outside the write lock (durability='full')"
                               if self.durability == "full" else "WAL, synchronous=NORMAL (durability='normal')")}

    def new_session(self, name: str) -> str:
        return self.store.create_session("bench", title=name).id

    def append(self, sid: str, role: str, text: str) -> None:
        self.store.append(sid, {"role": role, "content": text})

    def bulk(self, sid: str, rows: list[tuple[str, str]]) -> None:
        self.store.append(sid, [{"role": r, "content": t} for r, t in rows])

    def load(self, sid: str) -> list:
        return self.store.resume(sid)

    def search(self, query: str) -> list:
        return self.store.search(query)

    def checkpoint(self) -> None:
        self.store.search("checkpoint")  # the index caught up, so its bytes are all counted
        self.store.close()
        conn = apsw.Connection(self.path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()

    def close(self) -> None:
        self.store.close()
