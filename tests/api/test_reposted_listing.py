"""What the API lists can be posted back (S-44): re-posting a session's message listing,
every field as served, stores nothing, against a real `sessiondb serve` process."""

from __future__ import annotations


def test_reposting_the_message_listing_stores_nothing(api):
    s = api.post("/api/sessions", json={"source": "cli", "title": "listing posted back"}).json()
    url = f"/api/sessions/{s['id']}/transcript"
    append = f"/api/sessions/{s['id']}/append"
    api.post(append, json={"messages": [
        {"role": "user", "content": "what changed?"},
        {"role": "assistant", "content": [{"type": "text", "text": "two files"}],
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "diff", "arguments": "{}"}}]},
        {"role": "tool", "content": "a.py b.py", "tool_call_id": "c1", "tool_name": "diff"},
    ]}).raise_for_status()
    listed = api.get(url).json()["items"]
    reposted = api.post(append, json={"messages": listed})
    assert reposted.status_code == 200, reposted.text
    assert [(m["id"], m["uid"]) for m in reposted.json()["items"]] == [(m["id"], m["uid"]) for m in listed]
    assert api.get(url).json()["items"] == listed
    assert api.get(f"/api/sessions/{s['id']}").json()["message_count"] == 3
