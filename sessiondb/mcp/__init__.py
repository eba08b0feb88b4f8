"""`sessiondb mcp`: the recall server for agents (Model Context Protocol, stdio).

    from sessiondb import open_store
    from sessiondb.mcp import serve
    serve(open_store(), allow_append=False)

recall.py holds what the tools do over a store; server.py exposes them with the
official `mcp` SDK (`pip install 'sessiondb[mcp]'`), which is imported only when a server
is built.
"""

from __future__ import annotations

from .recall import Recall
from .server import build, serve

__all__ = ["Recall", "build", "serve"]
