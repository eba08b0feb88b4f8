"""A writer process for the safety tests: holds a store open and appends on command.

    python live_writer.py HOME PROFILE

Prints `ready <session id>` once the store is open, then for each line `append UID` on
stdin appends one message and prints one JSON line: {"ok": true} or the refusal's
{"ok": false, "cause", "spooled_to", "guidance"}. `checkpoint [MODE]` checkpoints the WAL (TRUNCATE unless MODE says otherwise); `close` closes the store handle the process began with;
`reopen` opens (and closes) a second handle on the store; `fresh UID` opens a new handle,
lists its sessions' titles and appends UID in a new session there; `search WORDS` prints
{"ok": true, "uids": [...]} or the refusal.
"""

import json
import sys
from pathlib import Path

import sessiondb
from sessiondb.guidance import for_error

home, profile = sys.argv[1], sys.argv[2]
store = sessiondb.open_store(home=home, profile=profile)
session = store.create_session("gateway", session_id="live")
store.append(session.id, {"uid": "first", "role": "user", "content": "before anything happened"})
print("ready", session.id, flush=True)
for line in sys.stdin:
    command, _, arg = line.strip().partition(" ")
    if command == "append":
        try:
            store.append(session.id, {"uid": arg, "role": "user", "content": f"message {arg}"})
            reply = {"ok": True}
        except sessiondb.SessionDBError as exc:
            advice = for_error(exc, db_path=Path(store.location), profile=store.profile)
            reply = {"ok": False, "cause": exc.cause.value, "spooled_to": getattr(exc, "spooled_to", None),
                     "error": str(exc), "guidance": advice.message}
    elif command == "reopen":
        try:
            sessiondb.open_store(home=home, profile=profile).close()
            reply = {"ok": True}
        except sessiondb.SessionDBError as exc:
            reply = {"ok": False, "cause": exc.cause.value, "error": str(exc)}
    elif command == "search":
        try:
            reply = {"ok": True, "uids": [h.uid for h in store.search(arg, limit=100)]}
        except sessiondb.SessionDBError as exc:
            reply = {"ok": False, "cause": exc.cause.value, "error": str(exc)}
    elif command == "fresh":
        try:
            with sessiondb.open_store(home=home, profile=profile) as fresh:
                sessions = fresh.list_sessions(limit=1000).items
                titles = sorted(s.title or s.id for s in sessions)
                fresh.append(fresh.create_session("cli").id, {"uid": arg, "role": "user", "content": "new"})
            reply = {"ok": True, "titles": titles}
        except sessiondb.SessionDBError as exc:
            reply = {"ok": False, "cause": exc.cause.value, "error": str(exc)}
    elif command == "close":
        store.close()
        reply = {"ok": True}
    elif command == "checkpoint":
        mode = arg or "TRUNCATE"
        store.backend._file.writer.run(lambda c: c.execute(f"PRAGMA wal_checkpoint({mode})").fetchall(), in_transaction=False)
        reply = {"ok": True}
    else:
        reply = {"ok": False, "error": f"unknown command {command}"}
    print(json.dumps(reply), flush=True)
