"""Store.verify() on a profile's schema: every invariant the contract promises, checked
by queries in one snapshot, each naming what broke. The server keeps its pages sound
(checksums, WAL); what is checked here is sessiondb's own logic."""

from __future__ import annotations

import psycopg

from ...model import COMPRESSION, VerifyReport

# (what the invariant is, a query returning one row per offender: its description)
_CHECKS = (
    ("a uid is stored once across a compression lineage", f"""
        WITH RECURSIVE root(id, root, depth) AS (
            SELECT id, id, 0 FROM sessions WHERE parent_relation IS DISTINCT FROM '{COMPRESSION}'
                OR parent_session_id IS NULL
            UNION ALL
            SELECT s.id, root.root, root.depth + 1 FROM root
            JOIN sessions AS s ON s.parent_session_id = root.id AND s.parent_relation = '{COMPRESSION}'
            WHERE root.depth < 1000
        )
        SELECT 'uid ' || m.uid || ' in ' || string_agg(DISTINCT m.session_id, ', ')
        FROM messages AS m JOIN root ON root.id = m.session_id
        GROUP BY root.root, m.uid HAVING count(*) > 1 LIMIT 20"""),
    ("a session's counters equal its active rows", """
        SELECT 'session ' || s.id || ' counts ' || s.message_count || ' messages and ' || s.tool_call_count
               || ' tool calls, its rows ' || coalesce(c.n, 0) || ' and ' || coalesce(c.calls, 0)
        FROM sessions AS s LEFT JOIN (
            SELECT session_id, count(*) AS n,
                   coalesce(sum(jsonb_array_length(json_value(tool_calls))) FILTER (WHERE tool_calls IS NOT NULL), 0)
                   AS calls
            FROM messages WHERE state = 'active' GROUP BY session_id) AS c ON c.session_id = s.id
        WHERE s.message_count <> coalesce(c.n, 0) OR s.tool_call_count <> coalesce(c.calls, 0) LIMIT 20"""),
    # A compaction's summary takes the seq of the newest row it replaces, and the rows it
    # keeps verbatim follow with the lower seq they had: a fall right after a row whose seq
    # another row of the session (or of the parent it was rotated from) shares is that head.
    ("seq never goes down in commit order", f"""
        SELECT 'session ' || session_id || ': message ' || id || ' has seq ' || seq || ' after ' || prev
        FROM (SELECT session_id, id, seq, lag(seq) OVER w AS prev, lag(id) OVER w AS prev_id
              FROM messages WHERE state = 'active' WINDOW w AS (PARTITION BY session_id ORDER BY id)) AS ordered
        WHERE seq < prev AND NOT EXISTS (
            SELECT 1 FROM messages AS o WHERE o.seq = ordered.prev AND o.id <> ordered.prev_id
              AND (o.session_id = ordered.session_id OR o.session_id = (
                   SELECT parent_session_id FROM sessions
                   WHERE id = ordered.session_id AND parent_relation = '{COMPRESSION}')))
        LIMIT 20"""),
    # A session ended with reason compression and no compression child is its own tip
    # (an import from a tool whose compaction keeps the parent's transcript): its rows are read.
    ("a session a rotation closed holds no active message", f"""
        SELECT 'session ' || s.id || ' was closed by compression into ' || min(c.id) || ' and still holds '
               || (SELECT count(*) FROM messages AS m WHERE m.session_id = s.id AND m.state = 'active')
               || ' active message(s), outside the live conversation: resume never reads them'
        FROM sessions AS s JOIN sessions AS c ON c.parent_session_id = s.id AND c.parent_relation = '{COMPRESSION}'
        WHERE s.end_reason = '{COMPRESSION}'
          AND EXISTS (SELECT 1 FROM messages AS m WHERE m.session_id = s.id AND m.state = 'active')
        GROUP BY s.id LIMIT 20"""),
    ("the search words of every row are its text's", """
        SELECT 'message ' || id || ' carries stale search words' FROM messages
        WHERE words IS DISTINCT FROM message_words(role, content, parts) LIMIT 20"""),
    ("every search index is valid", """
        SELECT 'index ' || c.relname || ' is not valid' FROM pg_index AS i
        JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_class AS t ON t.oid = i.indrelid
        WHERE t.relname = 'messages' AND t.relnamespace = current_schema()::regnamespace
          AND NOT (i.indisvalid AND i.indisready)"""),
    ("a lease's watermark and token are ones the store handed out", """
        SELECT 'the lease on ' || l.session_id || ' has watermark ' || l.watermark || ' and token ' || l.token
        FROM compaction_leases AS l
        WHERE l.watermark > coalesce((SELECT max(id) FROM messages), 0)
           OR l.token > (SELECT last_value FROM compaction_token) OR l.expires_at < l.acquired_at
        LIMIT 20"""),
    ("no row outlives its session (the foreign keys hold)", """
        SELECT 'constraint ' || conname || ' on ' || conrelid::regclass || ' is not validated'
        FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
          AND NOT convalidated"""),
)


#: Recall's stems (migration 0011), checked where the schema has them: a store of an older
#: release, examined by the doctor before its next open migrates it, has none yet.
_STEMS = ("the recall stems of every row are its text's", """
    SELECT 'message ' || id || ' carries stale recall stems' FROM messages
    WHERE stems IS DISTINCT FROM message_stems(role, content, parts) LIMIT 20""")

#: Every check, the counts, the database's character classification and whether the schema
#: has stems, in one statement: one round trip to the server (two with stems).
_ALL = " UNION ALL ".join(
    [f"(SELECT {i}, offender FROM ({query}) AS found(offender))" for i, (_, query) in enumerate(_CHECKS)]
    + ["(SELECT -1, (SELECT count(*) FROM sessions) || ' ' || (SELECT count(*) FROM messages) || ' ' "
       "|| (SELECT count(*) FROM compaction_leases))", "(SELECT -2, current_setting('lc_ctype'))",
       "(SELECT -3, to_regprocedure('message_stems(text, text, text)')::text)"])
_ASCII_ONLY = ("C", "POSIX")  # the locales in which the server lower-cases ASCII letters only


def verify(conn: psycopg.Connection) -> VerifyReport:
    problems: list[str] = []
    checked: dict[str, int] = {}
    notes: list[str] = []
    for check, offender in conn.execute(_ALL):
        if check == -1:
            checked = dict(zip(("sessions", "messages", "leases"), map(int, offender.split())))
        elif check == -2:
            if offender.upper() in _ASCII_ONLY:
                notes.append(
                    f"the database's LC_CTYPE is {offender}, so the server folds the case of ASCII letters only: "
                    "a search for 'москва' misses 'Москва'; create a database with a UTF-8 locale "
                    "(CREATE DATABASE ... LC_CTYPE 'C.UTF-8' TEMPLATE template0) and move the store there "
                    "(sessiondb migrate --from URL --to URL)")
        elif check == -3:
            if offender is not None:
                problems += [f"{_STEMS[0]}: {row[0]}" for row in conn.execute(_STEMS[1])]
        else:
            problems.append(f"{_CHECKS[check][0]}: {offender}")
    return VerifyReport(problems=problems, checked=checked, notes=notes)
