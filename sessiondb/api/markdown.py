"""Message text as safe HTML for the dashboard: Markdown rendered server-side.

Parsed by markdown-it-py (CommonMark plus tables, raw HTML off: a `<script>` in a
message is text, never markup) and then sanitised by nh3 (the ammonia sanitiser) with a
short allow-list, so safety never rests on the parser alone. Links keep only http(s) and
mailto URLs, open in a new tab with `rel="noopener noreferrer"`; images are dropped (the
page loads nothing from elsewhere); no style or event attribute survives. Both libraries
are maintained upstream; the page itself stays a script-only client of the JSON API.
"""

from __future__ import annotations

import re

import nh3
from markdown_it import MarkdownIt

from ..model import shown

_PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "s", "del", "code", "pre",
        "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a"}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_EMPTY_HEADING = re.compile(r"<h([1-6])>\s*</h\1>")


def to_html(text: str) -> str:
    """The Markdown `text` as sanitised HTML (empty headings left out; half a character
    shown as its escape, which the sanitiser, in UTF-8, could not take)."""
    if not text:
        return ""
    html = nh3.clean(_PARSER.render(shown(text)), tags=TAGS, attributes=ATTRIBUTES, url_schemes={"http", "https", "mailto"},
                     link_rel="noopener noreferrer", set_tag_attribute_values={"a": {"target": "_blank"}})
    return _EMPTY_HEADING.sub("", html)
