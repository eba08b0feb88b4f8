"""Text PostgreSQL cannot hold as it is (NUL) comes back exactly as it was given."""

from __future__ import annotations

import sessiondb


def test_nul_and_the_escape_character_survive_append_read_export_and_search(pg_url, pg_schema):
    tricky = ["a\x00b", "\ufffe0", "\ufffe\x00\ufffe", "plain"]
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        s = store.create_session("cli")
        stored = store.append(s.id, [{"uid": f"u{i}", "role": "user", "content": t, "reasoning": t}
                                     for i, t in enumerate(tricky)])
        assert [m.content for m in stored] == tricky
        assert [(m.content, m.reasoning) for m in store.transcript(s.id)] == [(t, t) for t in tricky]
        exported = [r["message"]["content"] for r in store.export() if r["type"] == "message"]
        assert exported == tricky
        assert store.append(s.id, {"uid": "u0", "role": "user", "content": "a\x00b", "reasoning": "a\x00b"})[0].id \
            == stored[0].id  # the same message again: stored once
        assert [h.uid for h in store.search("plain")] == ["u3"]
