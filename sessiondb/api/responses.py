"""The service's JSON responses: what a message holds, written exactly."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse as _StarletteJSON

from ..model import json_text


class JSONResponse(_StarletteJSON):
    """A JSON response whose text holds half a character (an unpaired surrogate, which a
    message's text may hold and UTF-8 cannot) as JSON's escape `\\udXXX`, which a client's
    parser reads back exactly; Starlette's own raises on it."""

    def render(self, content: Any) -> bytes:
        return json_text(content, allow_nan=False, separators=(",", ":")).encode("utf-8")
