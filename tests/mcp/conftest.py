"""The recall server's tests drive `sessiondb mcp` with the MCP SDK's own client over stdio,
against a real store filled by importing sample histories (tests/importers/histories.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "importers"))
