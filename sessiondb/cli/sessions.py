"""`sessiondb sessions ...`: list, transcript, search, set-title, flags, delete, stats.

Each command parses its arguments, makes one library call (plus, for `list`, the first
words of untitled sessions) and renders the result; `--json` prints the library's own
objects as JSON. A session is named by its id, a unique id prefix or its exact title, or
(where one is read) by -c, the most recently active.
Export and import live in cli/transfer.py and join this group.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterator

import click
from click.shell_completion import CompletionItem

from ..model import Message, Role, Session
from ..store.contract import Store
from ..titles import untitled_words
from ..usage import profile_usage
from . import render
from .context import CliContext, CliError, completing, keep_old_name
from .output import JsonOutput, emit_rows, json_option, one_format, rows_option
from .periods import TIME


def resolve(ctx: CliContext, store: Store, ref: str) -> Session:
    """The session a person named (id, unique id prefix or exact title)."""
    return ctx.call(store.find_session, ref)


def session_ref(command: Callable[..., None]) -> Callable[..., None]:
    """The session a command reads: ID, or -c/--latest for the most recently active one
    (llm's `-c`); the command gets `ref` and `latest`, for `chosen`."""
    command = click.option("-c", "--latest", is_flag=True,
                           help="The most recently active session, instead of ID.")(command)
    return click.argument("ref", metavar="[ID]", required=False, shell_complete=complete_session)(command)


def chosen(ctx: CliContext, store: Store, ref: str | None, latest: bool, *, implied: bool = False) -> Session:
    """The session `session_ref` named; without ID or -c, the latest only when `implied`."""
    if ref is not None and latest:
        raise click.UsageError("give a session's ID or -c (the latest session), not both")
    if ref is not None:
        return resolve(ctx, store, ref)
    if not (latest or implied):
        raise click.UsageError("give a session's ID, or -c for the latest session")
    newest = ctx.call(store.list_sessions, limit=1).items
    if not newest:
        raise CliError("no sessions yet, so none is the latest", "not_found")
    return newest[0]


def complete_session(click_ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion of a session ID: the ids of the store the command line names
    (with its --home, --store and -p), most recently active first, each with its title."""
    with completing(click_ctx) as ctx:
        if ctx is not None:
            with ctx.open() as store:
                page = store.list_sessions(limit=200)
            return [CompletionItem(s.id, help=s.title or None) for s in page.items if s.id.startswith(incomplete)]
    return []


@click.group()
def sessions() -> None:
    """List, read, search, export and manage sessions."""


@sessions.command("list")
@click.option("--source", help="Only sessions from this source (cli, telegram, ...).")
@click.option("--user", "user_id", metavar="ID", help="Only this person's sessions.")
@click.option("--since", type=TIME, help="Only sessions active at or after TIME.")
@click.option("--until", type=TIME, help="Only sessions last active before TIME.")
@click.option("--pinned", is_flag=True, help="Only pinned sessions.")
@click.option("--archived", is_flag=True, help="Include archived sessions.")
@click.option("--hidden", is_flag=True, help="Include hidden sessions.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="At most this many.")
@json_option
@rows_option
@click.pass_obj
def list_sessions(ctx: CliContext, source: str | None, user_id: str | None, since: float | None,
                  until: float | None, pinned: bool, archived: bool, hidden: bool, limit: int,
                  as_json: JsonOutput | None, rows: str | None) -> None:
    """Sessions, most recently active first."""
    one_format(as_json, rows)
    with ctx.open() as store:
        page = ctx.call(store.list_sessions, source=source, user_id=user_id, since=since, until=until,
                        pinned=True if pinned else None, include_archived=archived, include_hidden=hidden,
                        limit=limit)
        if as_json:
            as_json.emit([s.to_dict() for s in page.items])
            return
        if rows:
            emit_rows((s.to_dict() for s in page.items), rows)
            return
        if not page.items:
            click.echo("no sessions")
            return
        words = ctx.call(untitled_words, store, {s.id: s.title for s in page.items})
        render.session_table([(s, words.get(s.id)) for s in page.items])


@sessions.command()
@session_ref
@click.option("--include-compacted", is_flag=True, help="Also show messages archived by compaction.")
@click.option("--last", type=click.IntRange(1), metavar="N", help="Only the last N messages.")
@click.option("--limit", type=click.IntRange(1), metavar="N", help="At most N messages, from the first shown.")
@click.option("--since", type=TIME, help="Only messages at or after TIME.")
@click.option("--tip", is_flag=True, help="The session that continues ID now (where a compaction rotated it): "
              "the live conversation.")
@click.option("-r", "--response", is_flag=True, help="Only the latest response's text (of the latest session "
              "without ID).")
@click.option("-x", "--extract", "extract", flag_value="first",
              help="Only the first fenced code block of the latest response.")
@click.option("--xl", "--extract-last", "extract", flag_value="last",
              help="Only the last fenced code block of the latest response.")
@json_option
@click.pass_obj
def transcript(ctx: CliContext, ref: str | None, latest: bool, include_compacted: bool, last: int | None,
               limit: int | None, since: float | None, tip: bool, response: bool, extract: str | None,
               as_json: JsonOutput | None) -> None:
    """Show a session's transcript. ID is its id, a unique id prefix or its exact title;
    -c is the most recently active session.

    On a terminal the transcript goes through a pager ($PAGER, else less).
    """
    with ctx.open() as store:
        session = chosen(ctx, store, ref, latest, implied=response or extract is not None)
        if tip:
            session = ctx.call(store.tip, session.id)
        if response or extract:
            _response(ctx, store, session, extract, as_json)
            return
        messages = _messages(ctx, store, session.id, include_compacted, last, limit, since)
        if as_json and not as_json.whole:
            as_json.emit({"session": session.to_dict(), "messages": [m.to_dict() for m in messages]},
                         within="messages")
        elif as_json:  # streamed: a long transcript is never held whole
            click.echo('{"session": ' + json.dumps(session.to_dict(), ensure_ascii=False) + ', "messages": [')
            for i, m in enumerate(messages):
                click.echo(("  " if i == 0 else ", ") + json.dumps(m.to_dict(), ensure_ascii=False))
            click.echo("]}")
        elif render.on_terminal():
            click.echo_via_pager(render.paged(session, messages))
        else:
            render.session_header(session)
            render.transcript(messages)


keep_old_name(sessions, "show", transcript)

#: A fenced code block as CommonMark writes one: three or more backticks or tildes, an
#: info string, the code, the same fence again.
FENCED = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<code>.*?)^[ \t]*(?P=fence)[ \t]*$", re.M | re.S)


def _response(ctx: CliContext, store: Store, session: Session, extract: str | None,
              as_json: JsonOutput | None) -> None:
    """The latest response of `session` (its newest assistant message with text), or the
    first or last fenced code block of it."""
    answer, cursor = None, None
    while answer is None and (batch := ctx.call(store.transcript, session.id, order="desc", limit=TRANSCRIPT_PAGE,
                                                before=cursor)):
        answer = next((m for m in batch if m.role == Role.ASSISTANT.value and m.text.strip()), None)
        cursor = batch[-1].id
    if answer is None:
        raise CliError(f"session {session.id} has no response yet", "not_found")
    if extract is None:
        if as_json:
            as_json.emit(answer.to_dict())
        else:
            click.echo(answer.text)
        return
    blocks = [m.group("code") for m in FENCED.finditer(answer.text)]
    if not blocks:
        raise CliError(f"the latest response of session {session.id} (#{answer.id}) has no fenced code block",
                       "not_found")
    code = blocks[0] if extract == "first" else blocks[-1]
    if as_json:
        as_json.emit({"session_id": session.id, "message_id": answer.id, "code": code})
    else:
        click.echo(code, nl=False)


TRANSCRIPT_PAGE = 500  # messages read from the store at a time


def _messages(ctx: CliContext, store: Store, session_id: str, include_compacted: bool, last: int | None,
              limit: int | None, since: float | None) -> Iterator[Message]:
    """The messages `transcript` prints, oldest first, read TRANSCRIPT_PAGE at a time.

    `--last N` reads newest first and stops after N; `--since` is a time while paging is
    by id, so it filters what is read rather than bounding it. Every page is of the one
    session `session_id` (with `--tip`, the tip found before the first): a page's id
    bounds name messages of one session.
    """
    goal = last or limit  # None: every message
    newest: list[Message] = []  # with --last: newest first
    count, cursor = 0, None
    while (goal is None or count < goal) and (batch := ctx.call(
            store.transcript, session_id, include_compacted=include_compacted, limit=TRANSCRIPT_PAGE,
            order="desc" if last else "asc", **{"before" if last else "after": cursor})):
        cursor = batch[-1].id
        for m in batch:
            if since is not None and m.timestamp < since:
                continue
            count += 1
            if last:
                newest.append(m)
            else:
                yield m
            if count == goal:
                break
    if last:
        yield from newest[::-1][:limit]


def _hit_filters(command: Callable[..., None]) -> Callable[..., None]:
    """The filters `sessions search` and `sessions recall` share, as the store's calls do."""
    for option in reversed((
        click.option("--source", help="Only sessions from this source."),
        click.option("--user", "user_id", metavar="ID", help="Only this person's sessions."),
        click.option("--session", "session_ref", metavar="ID", shell_complete=complete_session,
                     help="Only this session (id, prefix or title)."),
        click.option("--conversation", is_flag=True,
                     help="With --session: every session of its conversation (those compactions rotated it into)."),
        click.option("--role", type=click.Choice([r.value for r in Role]), help="Only messages with this role."),
        click.option("--since", type=TIME, help="Only messages at or after TIME."),
        click.option("--until", type=TIME, help="Only messages before TIME."),
    )):
        command = option(command)
    return command


def _scope(ctx: CliContext, store: Store, session_ref: str | None, conversation: bool) -> dict[str, Any]:
    """The store's session filter of `--session` and `--conversation`, as search and recall take it."""
    if conversation and session_ref is None:
        raise click.UsageError("--conversation reads a session's whole conversation: name the session with --session")
    return {"session_id": None if session_ref is None else resolve(ctx, store, session_ref).id,
            "conversation": conversation}


@sessions.command()
@click.argument("query")
@_hit_filters
@click.option("--tools", "include_tools", is_flag=True, help="Search tool output too.")
@click.option("--reasoning", "include_reasoning", is_flag=True, help="Search responses' reasoning too (by words).")
@click.option("--substring", is_flag=True, help="Match terms as substrings (implied by CJK text).")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="At most this many hits.")
@json_option
@rows_option
@click.pass_obj
def search(ctx: CliContext, query: str, source: str | None, user_id: str | None, session_ref: str | None,
           conversation: bool, role: str | None, since: float | None, until: float | None, include_tools: bool,
           include_reasoning: bool, substring: bool, limit: int, as_json: JsonOutput | None, rows: str | None) -> None:
    """Find messages: words, "phrases", OR, -word, prefix*."""
    one_format(as_json, rows)
    with ctx.open() as store:
        found = ctx.call(store.search, query, source=source, user_id=user_id,
                         **_scope(ctx, store, session_ref, conversation), role=role, since=since, until=until,
                         include_tools=include_tools, include_reasoning=include_reasoning, substring=substring,
                         limit=limit)
    if as_json:
        as_json.emit([hit.to_dict() for hit in found])
    elif rows:
        emit_rows((hit.to_dict() for hit in found), rows)
    else:
        render.hits(found)


@sessions.command()
@click.argument("question")
@_hit_filters
@click.option("--tools", "include_tools", is_flag=True, help="Recall from tool output too.")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="At most this many hits.")
@json_option
@click.pass_obj
def recall(ctx: CliContext, question: str, source: str | None, user_id: str | None, session_ref: str | None,
           conversation: bool, role: str | None, since: float | None, until: float | None, include_tools: bool,
           limit: int, as_json: JsonOutput | None) -> None:
    """Ask a question in your own words: the messages that best answer it."""
    with ctx.open() as store:
        found = ctx.call(store.recall, question, source=source, user_id=user_id,
                         **_scope(ctx, store, session_ref, conversation), role=role, since=since, until=until,
                         include_tools=include_tools, limit=limit)
    if as_json:
        as_json.emit([hit.to_dict() for hit in found])
    else:
        render.hits(found)


@sessions.command("set-title")
@click.argument("ref", metavar="ID", shell_complete=complete_session)
@click.argument("title")
@json_option
@click.pass_obj
def set_title(ctx: CliContext, ref: str, title: str, as_json: JsonOutput | None) -> None:
    """Set a session's title (an empty TITLE clears it)."""
    with ctx.open() as store:
        session = ctx.call(store.set_title, resolve(ctx, store, ref).id, title)
    _done(session, f"renamed {session.id} to {session.title!r}" if session.title else f"cleared the title of {session.id}",
          as_json)


keep_old_name(sessions, "rename", set_title)


def _flag_command(name: str, done: str, flag: str, value: bool, doc: str) -> click.Command:
    @click.argument("ref", metavar="ID", shell_complete=complete_session)
    @json_option
    @click.pass_obj
    def command(ctx: CliContext, ref: str, as_json: JsonOutput | None) -> None:
        with ctx.open() as store:
            session = ctx.call(store.set_flags, resolve(ctx, store, ref).id, **{flag: value})
        _done(session, f"{done} {session.id}", as_json)

    command.__doc__ = doc
    return sessions.command(name)(command)


_flag_command("pin", "pinned", "pinned", True, "Pin a session (prune keeps pinned sessions unless told otherwise).")
_flag_command("unpin", "unpinned", "pinned", False, "Unpin a session.")
_flag_command("archive", "archived", "archived", True, "Archive a session: kept and searchable, left out of listings.")
_flag_command("unarchive", "unarchived", "archived", False, "Bring an archived session back into listings.")
_flag_command("hide", "hid", "hidden", True, "Hide a session from listings; the surface that owns it can still resume it.")
_flag_command("unhide", "unhid", "hidden", False, "Show a hidden session in listings again.")


def _done(session: Session, message: str, as_json: JsonOutput | None) -> None:
    if as_json:
        as_json.emit(session.to_dict())
    else:
        click.echo(message)


@sessions.command()
@click.argument("ref", metavar="ID", shell_complete=complete_session)
@click.option("--conversation", is_flag=True,
              help="With every session of its compression tree (its root and every session a compaction's "
                   "rotation continued any of them in), at once.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def delete(ctx: CliContext, ref: str, conversation: bool, yes: bool, as_json: JsonOutput | None) -> None:
    """Delete a session with its messages and usage (asks first unless --yes)."""
    with ctx.open() as store:
        session = resolve(ctx, store, ref)
        if not yes:
            name = f"{session.id} ({session.title!r}, {session.message_count} messages)" if session.title \
                else f"{session.id} ({session.message_count} messages)"
            whole = " and every session of its conversation" if conversation else ""
            click.confirm(f"Delete session {name}{whole}? This cannot be undone", abort=True, err=True)
        deleted = ctx.call(store.delete_session, session.id, conversation=conversation)
    if as_json:
        as_json.emit({"deleted": session.id, "sessions": deleted})
    else:
        click.echo(f"deleted {', '.join(deleted)}")


@sessions.command()
@session_ref
@click.option("--since", type=TIME, help="Without ID: only sessions last active at or after TIME.")
@click.option("--until", type=TIME, help="Without ID: only sessions last active before TIME.")
@json_option
@click.pass_obj
def usage(ctx: CliContext, ref: str | None, latest: bool, since: float | None, until: float | None,
          as_json: JsonOutput | None) -> None:
    """Tokens and cost by model: of one session (ID, or -c: the latest), or of the whole
    profile, by day too."""
    with ctx.open() as store:
        if ref is None and not latest:
            result = ctx.call(profile_usage, store, since=since, until=until)
        else:
            result = ctx.call(store.usage, chosen(ctx, store, ref, latest).id)
    if as_json:
        as_json.emit(result.to_dict())
    else:
        render.usage(result)


@sessions.command()
@json_option
@click.pass_obj
def stats(ctx: CliContext, as_json: JsonOutput | None) -> None:
    """How many sessions and messages the store holds, and its size on disk."""
    with ctx.open() as store:
        result = ctx.call(store.stats)
    if as_json:
        as_json.emit(result.to_dict())
    else:
        render.stats(result)
