"""What every vendored SDK suite under tests/sdk needs: its `async def` tests run in an
event loop of their own, as pytest-asyncio does upstream."""

from __future__ import annotations

import asyncio
import inspect

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "asyncio: the SDKs' async tests (pytest-asyncio there; run here below)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run the SDKs' `async def` tests in an event loop of their own, as pytest-asyncio does."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
        return True
    return None
