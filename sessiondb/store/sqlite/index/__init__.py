"""The search index as derived data: its own file beside the store (schema), the indexer
that brings it up to date off the acknowledgement path (indexer), and snippets cut from
the messages' text for its contentless hits (snippets). The queries are in ../search.py."""
