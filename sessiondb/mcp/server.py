"""The recall server: sessiondb's sessions as Model Context Protocol tools, over stdio.

Built with the official `mcp` SDK (the optional `sessiondb[mcp]` extra, loaded only
here). Its tools search every session (the store's query language, filters by source
tool, project and time), recall the messages that answer a question asked in natural
language, read a transcript or the messages around a hit, and list sessions. It is
read-only unless started with `allow_append`, which adds one tool that appends a
message: an agent can remember, not rewrite. System messages are refused unless
it is started with `allow_system` too (a resumed session replays them as instructions).
Erasing is offered only when it is started with `allow_forget`, which adds `forget`.
"""

from __future__ import annotations

from typing import Any

from ..errors import SessionDBError
from ..model import shown
from ..store.contract import Store
from .recall import Recall

INSTRUCTIONS = (
    "sessiondb holds the history of past agent sessions (Claude Code, Codex, llm, Hermes, OpenAI Agents, "
    "LangChain and others), compacted parts included. Use recall to ask it a question in your own words, "
    "search to find exact words or phrases, then transcript with the hit's session_id and message_id to read "
    "around it."
)

# The tool names of the previous release, each still served beside its new name until the next
# release (docs/names.md): new name -> old name.
OLD_NAMES = {"search": "search_sessions", "transcript": "read_transcript", "append": "append_message"}


def build(store: Store, *, allow_append: bool = False, allow_system: bool = False,
          allow_forget: bool = False, user_id: str | None = None) -> Any:
    """The MCP server over `store` (an `mcp.server.mcpserver.MCPServer`), not yet running."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    memory = Recall(store, allow_system=allow_system, user_id=user_id)
    server = MCPServer("sessiondb", instructions=INSTRUCTIONS)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def answer(call, *args, **kwargs):
        try:
            return _shown(call(*args, **kwargs))
        except SessionDBError as exc:  # the store's own words, for the model to act on
            raise ToolError(" ".join(str(exc).split())) from None

    def offer(annotations):
        """Register a tool under its name and, described as deprecated, under its old one."""
        def register(tool):
            server.tool(annotations=annotations)(tool)
            old = OLD_NAMES.get(tool.__name__)
            if old is not None:
                server.tool(name=old, annotations=annotations, description=(
                    f"Deprecated: the old name of `{tool.__name__}`, served until the next release. "
                    + " ".join(tool.__doc__.split())))(tool)
            return tool
        return register

    @offer(reading)
    def search(query: str, source: str | None = None, project: str | None = None,
               since: str | None = None, until: str | None = None, role: str | None = None,
               include_tools: bool = False, limit: int = 20,
               include_reasoning: bool = False) -> list[dict[str, Any]]:
        """Search every stored session's messages, best first. Query language: words (all must
        match), "quoted phrases", OR, -word to exclude, prefix*. Filters: source (the tool:
        claude-code, codex, llm, hermes, openai-agents, langchain, cli...), project (part of
        the project path or cwd), since/until (ISO 8601), role (user, assistant, system, tool).
        Compacted history is included (hits say compacted: true); tool output only with
        include_tools; a response's reasoning (its thinking) only with include_reasoning.
        Each hit has session_id and message_id for transcript."""
        return answer(memory.search, query, source=source, project=project, since=since, until=until,
                      role=role, include_tools=include_tools, include_reasoning=include_reasoning, limit=limit)

    @offer(reading)
    def recall(question: str, source: str | None = None, project: str | None = None, since: str | None = None,
               until: str | None = None, limit: int = 10) -> dict[str, Any]:
        """Ask the stored sessions a question in your own words ("What did we decide about the
        database?"): the messages that best answer it, best first. Any of the question's words
        may match (stemmed, English; other languages word for word), rare words count most,
        and a match that follows another (often its answer) ranks higher. `note` says in
        words what was found, or that nothing was. Filters as for search. Use search
        instead for exact words or phrases."""
        return answer(memory.recall, question, source=source, project=project, since=since, until=until,
                      limit=limit)

    @offer(reading)
    def transcript(session_id: str, around_message_id: int | None = None, context: int = 5,
                   limit: int = 100, include_compacted: bool = True, tip: bool = False) -> dict[str, Any]:
        """Read a session's messages in order. With around_message_id (a search hit's
        message_id), the `context` messages before and after it; otherwise the first
        `limit` messages (at most 500). session_id may also be a unique id prefix or the exact
        title. With tip, the session that continues it now (where a compaction rotated it).
        Long texts, reasoning and tool arguments are cut, saying how much was cut."""
        return answer(memory.read, session_id, around=around_message_id, context=context, limit=limit,
                      include_compacted=include_compacted, tip=tip)

    @offer(reading)
    def list_sessions(source: str | None = None, project: str | None = None, since: str | None = None,
                      until: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """List sessions, most recently active first, with their source tool, project and title.
        Filters as for search."""
        return answer(memory.list, source=source, project=project, since=since, until=until, limit=limit)

    if allow_append:
        @offer(ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
        def append(role: str, content: str, session_id: str | None = None, uid: str | None = None,
                   title: str | None = None) -> dict[str, Any]:
            """Append one message (role user, assistant or tool; system only if the server allows
            it) to a session, or to a new session (source mcp, with `title`) when session_id is
            left out. Giving a uid makes the call safe to repeat: the same uid is stored once."""
            return answer(memory.append, session_id, role, content, uid=uid, title=title)

    if allow_forget:
        @offer(ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                               open_world_hint=False))
        def forget(user_id: str | None = None, session_id: str | None = None, source: str | None = None,
                   before: str | None = None, dry_run: bool = False) -> dict[str, Any]:
            """Erase conversations for good, from every copy sessiondb made. Give at least one
            selector; a conversation goes, whole and with its branches, when every selector given
            matches it: user_id, session_id (an id, a unique id prefix or the exact title),
            source, before (ISO 8601: only conversations wholly inactive before then). dry_run
            says what would go and changes nothing. The answer is the receipt: `summary` in one
            sentence, the `sessions` removed, and the scan of the files: `clean` is false while a
            copy remains, each named in `remaining` or `copies` with what to do."""
            return answer(memory.forget, user_id=user_id, session_id=session_id, source=source, before=before,
                          dry_run=dry_run)

    return server


def _shown(value: Any) -> Any:
    """A tool's answer with half a character (an unpaired surrogate a message's text may
    hold) written as its escape \\udXXX: the SDK's JSON encoder refuses it, and a model
    reads the escape as what it is."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def serve(store: Store, *, allow_append: bool = False, allow_system: bool = False,
          allow_forget: bool = False, user_id: str | None = None) -> None:
    """Run the recall server on stdin/stdout until the client disconnects."""
    build(store, allow_append=allow_append, allow_system=allow_system, allow_forget=allow_forget,
          user_id=user_id).run("stdio")
