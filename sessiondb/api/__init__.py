"""The HTTP service and the dashboard: a thin face over the Store contract.

`create_app(home, token=)` builds the FastAPI application that `sessiondb serve` runs.
Routes mirror the library's and the CLI's names; errors are rendered from the guidance
table; every profile under the home is served, each through one AsyncStore.
"""

from .app import create_app

__all__ = ["create_app"]
