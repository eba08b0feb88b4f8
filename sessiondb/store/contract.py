"""The Store contract: what every backend promises.

The contract tests in sessiondb/testing/contract/ run these promises against every backend through
one parametrised fixture. Times are seconds since the epoch (floats); an aware datetime
is accepted wherever a time is taken.

Errors: every method raises only sessiondb errors (sessiondb.errors). Bad input raises
InvalidInput and writes nothing; an unknown session raises NotFound.

`Store` is the core every backend has. What not every backend has is a capability of its
own (`Maintainable`, `Doctor`, `Salvageable`, the gateway's routing index), in
store/optional.py: ask with isinstance(); a store offers a capability's methods only when
its backend has it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, runtime_checkable

from ..model import (
    ForgetReceipt, Hold, ImportReport, Lease, MaintenanceReport, Message, Page, Policies, Policy, PolicyReport,
    SearchHit, Session,
    SpoolReport, StoreStats, Turn, Usage, VerifyReport,
)

MessageInput = Message | Mapping[str, Any]


@runtime_checkable
class Store(Protocol):
    """A handle on one profile's store. A context manager; `close()` is idempotent."""

    @property
    def profile(self) -> str | None:
        """The profile this store belongs to (None for the default profile)."""

    @property
    def location(self) -> str:
        """Where the store lives (a file path, or a server address without secrets)."""

    def close(self) -> None:
        """Release this handle. Other handles on the same store keep working."""

    def __enter__(self) -> "Store": ...

    def __exit__(self, *exc: object) -> None: ...

    # --- sessions ----------------------------------------------------------------------

    def create_session(
        self,
        source: str,
        *,
        session_id: str | None = None,
        title: str | None = None,
        profile: str | None = None,
        session_key: str | None = None,
        user_id: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        parent_session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_relation: str | None = None,
        started_at: float | None = None,
        hidden: bool = False,
    ) -> Session:
        """Create a session. `source` names the surface writing it (cli, gateway, desktop...).

        A title is sanitised (control characters removed, whitespace collapsed), at most
        100 characters, and unique among sessions (TitleConflict otherwise). `profile`
        defaults to the store's own profile. `parent_relation` (with a parent) says how
        the session continues it: 'compression' makes it the parent's continuation
        (followed by tip() and late writes, as if rotated by a compaction); 'branch',
        'reset', 'delegation' or any other label is recorded and never followed.
        `started_at` (seconds since the epoch or an aware datetime; default: now) is when
        the session began, for one brought in from elsewhere: an import gives its source's time.
        `hidden` creates it hidden (left out of default listings, as set_flags hides), in the
        same write: a session that is not a conversation (an SDK's shared state) is never
        listed, even by a reader between two calls; refused with a 'compression' parent,
        whose conversation's flags it has (S-41).
        """

    def get_session(self, session_id: str) -> Session:
        """The session, or NotFound."""

    def get_sessions(self, session_ids: Iterable[str]) -> dict[str, Session]:
        """The sessions of `session_ids` that exist, by id in the order asked, read at one
        moment: an id that names none is left out. At most 1,000 ids (InvalidInput beyond)."""

    def get_messages(self, message_ids: Iterable[int]) -> dict[int, Message]:
        """The messages of `message_ids` (each a message's `id`, as a search hit's
        `message_id` names it), in whatever sessions they are, by id in the order asked,
        read at one moment: an id that names no message, or a rewound one, is left out;
        compacted messages are read (their `state` says so). At most 1,000 ids."""

    def list_sessions(
        self,
        *,
        source: str | None = None,
        user_id: str | None = None,
        include_archived: bool = False,
        include_hidden: bool = False,
        pinned: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        """Sessions, most recently active first; pass the page's cursor back for the next.
        `user_id`: only that person's sessions (a scope: nobody else's, whatever they hold)."""

    def end_session(self, session_id: str, reason: str) -> Session:
        """Mark the session ended with a reason (the first end time is kept)."""

    def reopen_session(self, session_id: str) -> Session:
        """Clear the session's end."""

    def set_title(self, session_id: str, title: str | None) -> Session:
        """Set or clear (None or blank) the title; same rules as create_session."""

    def set_flags(
        self,
        session_id: str,
        *,
        pinned: bool | None = None,
        archived: bool | None = None,
        hidden: bool | None = None,
    ) -> Session:
        """Set the flags given (None leaves a flag as it is). Not user activity.

        Flags belong to the conversation: they apply, in one write, to every session of
        its compaction chain (the root and every session rotated out of it), whichever of
        them is named, so a listing never shows the ancestors of a hidden tip (S-41).
        Branches, resets and delegations are other conversations and keep their own.
        """

    def update_metadata(self, session_id: str, patch: Mapping[str, Any]) -> Session:
        """Merge `patch` into the metadata (None removes a key). Not user activity."""

    def delete_session(self, session_id: str, *, conversation: bool = False) -> list[str]:
        """Delete the session with its messages, usage and routing entries (a gateway routes
        the key anew); Conflict when a legal hold covers it (its own, or its user's: `hold`).

        With `conversation`, every session of its compression tree goes with it in the same
        unit of work (its root and every session a rotation continued any of them in,
        a rotation committed meanwhile included): a conversation is never left half deleted.
        Branches are conversations of their own and stay, parentless; a hold on any session
        of the tree refuses the whole delete. Returns the ids deleted: `session_id` first,
        then the others in id order."""

    # --- messages ----------------------------------------------------------------------

    def append(self, session_id: str, messages: MessageInput | Iterable[MessageInput]) -> list[Message]:
        """Store one message or many as one atomic batch, and return the stored rows.

        Idempotent by uid: a message whose uid is already stored in the session is not
        written again and its stored row is returned; the same uid with a different
        payload (role, content, tool calls, reasoning) raises MessageConflict and the
        whole batch is refused. A message without a uid gets one minted. Returns only
        once the batch is durable at the store's durability. A user or assistant message
        (not an internal notification) moves the session's last_activity_at.

        A session closed by a compaction's rotation (end reason 'compression') passes
        the batch to its live tip within the same write, and the returned rows carry
        the tip's id; when the tip has ended (closed by compaction or for any other
        reason) it raises CompressionClosed and writes nothing (S-05). A uid already stored earlier in the lineage is not stored again.

        Whatever a read returns is accepted back and stores nothing twice (S-01, S-44):
        Message rows from transcript(), resume()'s dicts (their uid rides on them as an
        attribute; a tool message's `name` is its tool_name), export records' messages
        and export_session()'s (their `parts` is list content; `id`, `session_id` and
        `seq` are assigned by the store and ignored).
        """


    def extend(self, session_id: str, build: Callable[..., Iterable[MessageInput]], *, newest: int = 1,
               create: Mapping[str, Any] | None = None, metadata: Mapping[str, Any] | None = None,
               metadata_of: Mapping[str, Mapping[str, Any]] | None = None) -> list[Message]:
        """Append what `build` makes of the conversation's end, in one unit of work.

        `build(root, newest, history)` gets the session `session_id` names (created with
        create_session's keyword arguments `create` if it does not exist), the tip's `newest`
        newest live messages (oldest first) and `history()`, a reader of every message of
        the lineage, compacted ones too. What it returns is stored at the tip as `append`
        stores a batch, after the messages it saw, with the tip's row locked meanwhile (an
        SDK call that is one operation is one store call). `build` may run again when the
        unit of work is retried and must only compute.

        `metadata`, a patch as update_metadata takes, is merged into the metadata of the
        session `session_id` names in the same unit of work: what an SDK keeps beside a
        message (a state change an event carries) lands with it or not at all (on a damaged
        store such a batch is refused, not spooled as an append's is). `metadata_of` maps
        the ids of at most 16 other stored sessions to a patch each, merged in the same unit
        of work: state an SDK shares between conversations (ADK's app and user state) lands
        with the event that changed it. A session it names that is not stored raises
        NotFound, one of the extended conversation's own (its compression tree) InvalidInput,
        and nothing is written. Its rows are locked after the conversation's, in id order: a
        session that extends of its own also write, or that other extends name from the
        other side, can meet a deadlock on PostgreSQL, which the store retries at a cost in
        latency; it suits sessions only ever patched, as ADK's state sessions are.
        """
    def flush(self, session_id: str, conversation: MessageInput | Iterable[MessageInput]) -> list[Message]:
        """Store what of an agent's whole conversation is not yet stored; return a row for each.

        The call for an agent that keeps its conversation as one list and hands all of it
        back after every turn (resumed, then added to, across compactions, rotations and
        retries). A message with an identity (a uid field, a Message, a resume() dict) is
        stored once by uid, as append() does, anywhere in the lineage. A message without
        one (resume()'s dicts after a JSON round trip, or copied into plain dicts) is
        matched by its role, content and tool fields and its position against the
        lineage's whole stored history (S-47): the list may start where the conversation
        starts (kept from before any number of compactions, skipping the summaries it never
        saw) or with a summary (resumed after one). The longest head of the list so matched
        is stored already; everything after it is new, even words said before. Rewound rows
        are never matched. The new messages are appended as one atomic batch; when there
        are none nothing is written. Bad input raises InvalidInput and writes nothing.
        """

    def transcript(
        self,
        session_id: str,
        *,
        include_compacted: bool = False,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
        order: str = "asc",
        tip: bool = False,
    ) -> list[Message]:
        """The session's messages in commit order ('desc': newest first).

        `before`/`after` are message ids (exclusive bounds) for paging. Compacted
        messages only with include_compacted; rewound messages never. With `tip`, the
        messages of `tip(session_id)`, found in the same snapshot as they are read: the
        live conversation in one call, which a rotation between two calls cannot split
        (each message's session_id names the tip). `before`/`after` bound ids in one
        session: page on in the session the first page names, not at the tip again.
        """

    # --- compaction and lineage ----------------------------------------------------------
    #
    # A compaction replaces the start of a conversation with a summary without losing or
    # duplicating a row. Appends are never blocked by one (S-02): a lease only keeps two
    # compactions of one session apart. Messages archived by a compaction keep their
    # state 'compacted': stored, exported and searchable, shown by
    # transcript(include_compacted=True). Rewound messages are kept but never searchable.

    def begin_compaction(self, session_id: str, *, holder: str | None = None, ttl: float = 300) -> Lease:
        """Take the session's compaction lease for `ttl` seconds (0 < ttl <= one week).

        The lease carries a fencing token and the watermark: the highest message id the
        session holds, read in the database as the lease is taken. The compaction covers
        the active messages up to it; anything appended later survives the commit. A
        session closed by rotation is leased at its live tip (lease.session_id names it).
        One live lease per session: a second caller gets CompactionBusy, unless the lease
        expired or its holder is provably dead on this host (same host, boot and PID
        namespace, and its PID gone or reused); any doubt waits for the TTL (S-07).
        `holder` is a label shown to whoever is refused.
        """

    def refresh_compaction(self, lease: Lease, ttl: float | None = None) -> Lease:
        """Extend a held lease to `ttl` seconds from now (default: its own TTL).

        LeaseLost if it expired, was released or was taken over.
        """

    def abort_compaction(self, lease: Lease) -> None:
        """Release the lease without writing anything; a lease already lost is a no-op."""

    def commit_compaction(
        self, lease: Lease, summary_messages: MessageInput | Iterable[MessageInput], *, mode: str = "in_place",
    ) -> Session:
        """Publish a compaction in one transaction, and release the lease (S-03).

        First checks that the lease is still held and unexpired: LeaseLost otherwise,
        and nothing is written. Then the session's active messages up to the watermark
        become 'compacted', the summary messages are stored, and every message stored
        above the watermark follows them, unchanged in every column but its id (the
        transcript reads summary, then that tail).

        mode "in_place" does this inside the session. mode "rotate" ends the session
        with reason 'compression' and moves the summary and the tail into a new child
        session (parent_session_id set, parent_relation 'compression', same key,
        profile, source and flags, title numbered "#2", "#3"...). Either way every
        message exists exactly once in the lineage (S-06).

        A summary message whose uid is already stored in the session is kept verbatim:
        moved to its place after the summary, not archived and not stored twice; it must
        be live (a rewound or compacted one raises MessageConflict, as does one with other
        content). Each uid comes once in a summary and every summary message is active,
        else InvalidInput; a refused summary writes nothing and the lease stays held.
        Summary messages take the seq of the newest message they replace. A compaction
        is not user activity: last_activity_at does not move (S-08). Returns the session
        that now holds the live conversation (the child, when rotated).
        """

    def compaction_lease(self, session_id: str) -> Lease | None:
        """The session's current lease row (live or expired), or None."""

    def lineage(self, session_id: str) -> list[Session]:
        """The conversation `session_id` belongs to, across rotations: root first, tip last.

        Only compression relations are followed; a branch's origin is its
        parent_session_id, not part of its lineage.
        """

    def tip(self, session_id: str) -> Session:
        """The session that continues `session_id` now: compression children are followed
        across any number of hops (bounded), preferring a continuation that is not
        ended. Branches, resets and delegations are not followed. A session with no
        compression child is its own tip.
        """

    def resume(self, session_id: str, *, max_messages: int = 20_000) -> list[dict[str, Any]]:
        """The tip's live conversation, ready to send to a model.

        One dict per active message in order: role and content, plus tool_calls,
        tool_call_id, name (a tool message's tool) and reasoning when present. Nothing
        internal among its keys (uids, ids, seq, state, timestamps, display kinds), so
        json.dumps and provider SDKs see only these; an internal notification is a plain
        user message (S-09). Each is a `ModelMessage`, a dict that carries the stored uid
        as its `uid` attribute: handing the list back to append() or flush() stores
        nothing twice (S-44). Above `max_messages` active messages
        it raises SessionTooLarge naming the limit and the streaming export
        (`sessiondb sessions export`); 0 disables the guard (S-42).
        """

    def rewind(self, session_id: str, to_message_id: int, *, through_message_id: int | None = None) -> int:
        """Undo the session's active messages after message `to_message_id` (0: all of them),
        and with `through_message_id` only those up to it (inclusive): an undo of the
        messages a caller read leaves in place what another writer appended after them.

        They become 'rewound': kept, restorable, never in transcripts or search.
        Returns how many. Not user activity.

        Like every write, one addressed to a session a compaction rotated acts on the session
        that continues it, so `rewind(session_id, 0)` undoes the live conversation whatever
        rotated it meanwhile; unlike a write that stores, it acts there even once that session
        has ended (its reads still show it), and raises CompressionClosed only when no session
        continues the conversation. The message ids must be of the session it acts on:
        NotFound otherwise, saying so (a rotation moved or archived those messages; read the
        conversation again with transcript(..., tip=True)).
        """

    def restore_rewound(self, session_id: str) -> int:
        """Make the session's rewound messages active again; returns how many.

        Like every write, one addressed to a session a compaction rotated acts on its live
        tip (CompressionClosed when none is live): the rotated session's rows stay as the
        compaction left them, since active rows there would be outside the conversation.
        """

    def branch(self, session_id: str, at_message_id: int, *, title: str | None = None) -> Session:
        """Start a new session from a copy of the session's active messages up to
        `at_message_id` (inclusive).

        The new session records its origin (parent_session_id, parent_relation
        'branch') and shares the source, key and profile. Copies keep their uid, seq,
        content and timestamps, with new ids: re-flushing the loaded transcript into
        the branch stores nothing. The original session is not changed.
        """

    # --- usage -------------------------------------------------------------------------

    def record_usage(
        self,
        session_id: str,
        *,
        model: str,
        provider: str = "",
        task: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
        calls: int = 1,
    ) -> None:
        """Add model calls' usage to the session's per (model, provider, task) totals: one
        call's, or the sums of `calls` calls (a whole run's, counted as that many calls)."""

    def usage(self, session_id: str) -> Usage:
        """The session's accumulated usage: totals and one row per (model, provider, task)."""

    # --- search, lookup, export and import -----------------------------------------------

    def search(
        self,
        query: str,
        *,
        profile: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: float | None = None,
        until: float | None = None,
        include_tools: bool = False,
        limit: int = 20,
        substring: bool = False,
        include_reasoning: bool = False,
        conversation: bool = False,
    ) -> list[SearchHit]:
        """Messages matching `query`, best first (at most `limit`, 1..1000).

        The query language (sessiondb.query): words (all must match), "quoted phrases",
        OR, -word or NOT word, prefix*. Whatever is typed never raises: malformed syntax is
        read as literal words, and a query with no words finds nothing. Matching folds
        case and diacritics (cafe finds café). Text in a script written without spaces
        (CJK), or substring=True, matches as literal substrings: CJK terms of three
        characters or more through a trigram index, ranked; any other substring term
        (Latin text, or shorter than three characters) by a scan of the text, and a query
        made only of such terms returns its hits newest first with a score of 0.

        Found: active and compacted messages (hits say which); never rewound ones. Tool
        messages only with include_tools (or role='tool'); only the first 8 KiB of a tool
        message's output is searchable. Filters: the session's profile, source and user
        (`user_id`: only that person's sessions are read), one session (`session_id`; with
        `conversation`, every session of its conversation: the compression tree
        delete_session(conversation=True) takes, the sessions compactions rotated it into,
        as it is when the search begins), the message's role, and its timestamp in
        [since, until). Hits are ranked by bm25 among the newest 1,000 matches of the query and its filters, on every
        backend (query.RANK_WINDOW). With include_reasoning, the words of a query also
        match a message's reasoning (a model's thinking, as importers and adapters keep
        it): a message matches when its text does or its reasoning does, each judged whole,
        and its snippet comes from where it matched; substrings match the text only.
        """

    def recall(
        self,
        text: str,
        *,
        profile: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: float | None = None,
        until: float | None = None,
        include_tools: bool = False,
        limit: int = 20,
        conversation: bool = False,
    ) -> list[SearchHit]:
        """The messages that best answer `text`, a question in natural language, best first
        (at most `limit`, 1..1000): what an agent asks its memory in its own words.

        Not the query language: the question's content words (sessiondb.recall: English
        stop words out) match if any of them does, stemmed (English: the Porter stemmer
        on SQLite, the `english` configuration on PostgreSQL; a word of another language
        finds the same word, case and accents folded, not its inflections), ranked by
        bm25 over every match, so rare words count most; a match gains a share of the
        score of the matches next to it in its session, and a match written when the
        question says ("in May 2023") counts more. CJK text is matched by its trigrams.
        Every hit matches some of the question. Any text of any length and script is
        taken (the first query.MAX_QUERY_LENGTH characters; an unpaired surrogate is read
        as "?") and never raises; a question that matches nothing returns no hits. Found,
        filters and the caught-up index as for search.

        A store opened with an embedder (open_store(embedder=...), sessiondb.embedding)
        also finds the messages nearest the question's meaning, in other words than its
        own, and ranks both together; each hit's `found_by` says which found it. Where the
        meaning cannot be used (no embedder, an embedder failing, vectors another embedder
        computed) recall is lexical and each hit's `note` says why; a write never waits
        for an embedder.
        """

    def rebuild_vectors(self) -> int:
        """Drop the store's vectors, whichever embedder computed them, and compute every
        message's again with this handle's embedder (after a change of embedder); returns
        how many messages have one. InvalidInput without an embedder; EmbedderFailed when
        it fails (the store is left with no vectors, and recall lexical, until a rebuild
        succeeds)."""

    def forget(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        source: str | None = None,
        before: float | None = None,
        dry_run: bool = False,
    ) -> ForgetReceipt:
        """Erase conversations from every copy sessiondb made, and prove it (S-55).

        Takes the sessions every given selector matches (at least one is required:
        InvalidInput otherwise), each with its whole conversation (every session of its
        compression chain) and every branch taken from it; `before` (a time) takes a
        conversation only when every session of it was last active before then. Removes
        their messages (checkpoints and adapters' records included), usage, turn records and
        edit receipts, routes and spooled batches, from the store and its search and vector
        indexes, overwrites what the engine kept of them, then scans the raw files the store
        owns for the erased texts. The receipt says what was removed, what was scanned, and
        whether a copy remains (with what to do, and the backups that hold one). Nothing
        matching is a receipt saying so, not an error. `dry_run`: what would be removed."""

    def find_session(self, ref: str) -> Session:
        """The session a person means by `ref`: its exact id, its exact title, or a unique id prefix.

        NotFound if nothing matches; InvalidInput naming candidates if a prefix is ambiguous.
        """

    def stats(self) -> StoreStats:
        """Counts of sessions (by flag), messages (by state), usage, and the store's size."""

    def export(self, session_ids: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Stream the sessions (all, or these) as export records, in constant memory.

        The records are those of the sessiondb JSONL format (a header, then per session its
        row with every column, every message in every state in commit order, its usage rows,
        its turn records, and an end record); write one JSON object per line to make an export file. Unknown
        ids raise NotFound before anything is produced. Iterate to the end or close() the
        iterator: each session is read in one read transaction. Never capped.
        """

    def export_session(self, session_id: str, *, max_messages: int = 20_000) -> dict[str, Any]:
        """One session as a single in-memory dict: header fields, session, messages, usage, turns.

        Refused with SessionTooLarge when the session holds more than `max_messages`
        messages (0 disables the guard); the message names the streaming export (S-42).
        """

    def import_records(self, records: Iterable[Any], *, dry_run: bool = False) -> ImportReport:
        """Import an export: JSONL lines (str or bytes) or parsed records, as export() makes them.

        Every record of a session is validated before any of it is written; each session is
        written in one transaction. A session already stored keeps its row and gains only the
        messages (by uid), usage rows and turns (by id) it lacks; what is already stored is
        skipped and counted. Version-1 files (no turns) are read too. A bad record raises
        InvalidInput naming its line, and nothing of its session is written (earlier
        sessions stay imported). dry_run validates and counts everything and writes nothing.
        """

    def replay_spool(self) -> SpoolReport:
        """Append the batches this store refused and kept in its spool, oldest first.

        Each spool file is deleted only after its batch committed; a batch that still fails
        keeps its file and is reported. Runs by itself at every healthy open.
        """

    def verify(self) -> VerifyReport:
        """Check the store's invariants on one consistent snapshot; change nothing.

        Reported as problems: a uid stored twice along a compression lineage; a session
        whose message_count or tool_call_count differs from its active rows; among a
        session's active messages, a seq that falls as the id rises (messages a compaction
        kept verbatim keep their seq after the summary's: that is no fall); a searchable
        (non-rewound) message missing from the search index, or indexed with other text,
        or an indexed message that is not searchable; a lease whose fencing token was
        never handed out or whose watermark is above the session's newest message; a
        message or usage row of a session that does not exist; and damage the backend
        itself detects. A search index waiting for its rebuild is a note, not a problem.
        `checked` counts what was looked at. Reads only; what it finds is reported, not
        raised (a file too damaged to read at all raises StoreCorrupt, as any read would).
        """

    # --- turns (S-50..S-52) --------------------------------------------------------------
    #
    # A turn is a user message and the agent's work until it stopped. Its record says why
    # it stopped, in a reason from sessiondb.guidance (the sentence a person reads is
    # rendered from it), and keeps the failed file edits that still stood at its end.

    def begin_turn(
        self,
        session_id: str,
        *,
        turn_id: str | None = None,
        user_uid: str | None = None,
        cwd: str | None = None,
    ) -> Turn:
        """Record that a turn started in the session (NotFound if the session is not stored).

        `user_uid` is the uid of the user message that starts it; `cwd` the directory its
        file tools resolve relative paths against (absolute). An id is minted unless
        given; beginning a stored turn id again returns the stored record (Conflict if it
        belongs to another session).
        """

    def end_turn(
        self,
        turn_id: str,
        reason: str,
        *,
        detail: str | None = None,
        receipts: Iterable[Mapping[str, Any]] = (),
        continued_by: str | None = None,
    ) -> Turn:
        """Record why the turn ended; its outcome follows from the reason (guidance table).

        `receipts`: the failed file edits still standing (path, error, mtime_ns, size).
        `continued_by`: the turn that took a correction that was waiting (S-51), a turn of
        the same session. Ending an ended turn with the same reason returns it unchanged;
        with another reason raises Conflict and writes nothing. NotFound for an unknown id.
        """

    def get_turn(self, turn_id: str) -> Turn:
        """The turn, or NotFound."""

    def turns(self, session_id: str, *, limit: int = 100) -> list[Turn]:
        """The session's most recent turns (at most `limit`, 1..1000), oldest first."""

    # --- retention and legal holds ------------------------------------------------------
    #
    # What a store keeps is declared in the store (sessiondb.model.Policy: per source, and
    # for every other source) and applied online, a conversation per transaction, beside
    # live writers; a pinned conversation, and one under a legal hold, is never touched.

    def policy(self) -> Policies:
        """The store's retention rules and legal holds."""

    def set_policy(
        self,
        *,
        source: str | None = None,
        inactive_after: float | None = None,
        keep_last: int | None = None,
        compacted_after: float | None = None,
        never_active_after: float | None = None,
        force: bool = False,
    ) -> Policy:
        """Declare the rules for `source` (None: every source without rules of its own),
        replacing its earlier ones; periods in seconds. InvalidInput, and nothing changed,
        for rules that say nothing or that would remove every conversation they cover now
        (unless `force`)."""

    def clear_policy(self, *, source: str | None = None) -> bool:
        """Remove the rules for `source`; whether there were any."""

    def hold(self, *, user_id: str | None = None, session_id: str | None = None, reason: str) -> Hold:
        """Place a legal hold on a user's conversations, or on one session's conversation:
        no rule and no forget removes them until it is released (forget raises Conflict)."""

    def release_hold(self, *, user_id: str | None = None, session_id: str | None = None) -> bool:
        """Release a hold; whether there was one."""

    def apply_policy(self, *, dry_run: bool = True, force: bool = False) -> PolicyReport:
        """Apply the rules: a dry run by default (what would go). Each conversation goes in
        a transaction of its own, only if it is still as planned (one written to since is
        left for the next run); compacted originals lose their text in small transactions,
        their rows kept so a transcript handed back is still known. Rules that would remove
        every conversation they cover are refused in `refused` (unless `force`)."""

    def prune(
        self,
        *,
        older_than: float | None = None,
        never_active: bool = False,
        include_pinned: bool = False,
        include_archived: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> MaintenanceReport:
        """Delete, once, the sessions inactive for `older_than` seconds (pinned and archived
        ones only when included) and/or the never-active ones (S-40: opened by a key, still
        open, no messages, usage, tool calls, activity or title, older than 30 days, neither
        pinned nor archived), with their messages and the routing entries that name them.
        Session by session, not by conversation; a session under a legal hold is kept. Runs
        beside live writers in small transactions, each session judged again as it goes;
        never refused while other processes hold the store (`force` is accepted and changes
        nothing). The report's `sessions` lists what went (or, in a dry run, would)."""
