"""A property-based fuzz of the API from its own OpenAPI schema (schemathesis): whatever
is sent, the service answers without a server error (no 5xx), and every error is the
`{code, message, detail}` JSON."""

from __future__ import annotations

from itertools import product

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error



def operations(url: str, headers: dict):
    loaded = schemathesis.openapi.from_url(url + "/openapi.json", headers=headers)
    for result in loaded.get_all_operations():
        yield result.ok()


# schemathesis' own pytest plugin (`schema.parametrize`) does not run under this pytest, so
# each operation's strategy is drawn through hypothesis directly: the same generator, the
# same check.
def test_no_request_makes_the_service_fail(server):  # this module's own seeded server
    tried, statuses = [], []
    owner = {"Authorization": f"Bearer {server.token}"}  # the owner's requests: the token gates all the rest
    for operation, mode in product(operations(server.url, owner), GenerationMode):
        @given(case=operation.as_strategy(mode))
        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                  phases=[Phase.explicit, Phase.generate])
        def fuzz(case):
            response = case.call_and_validate(base_url=server.url, headers=owner, checks=[not_a_server_error],
                                              timeout=30)
            statuses.append(response.status_code)
            if response.status_code >= 400:
                assert set(response.json()) == {"code", "message", "detail"}, response.text

        try:
            fuzz()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE, operation.label  # nothing there to make invalid
            continue
        tried.append(f"{operation.label} ({mode.value})")
    assert len(tried) >= 20, tried
    assert len(statuses) >= 5 * len(tried), statuses  # the fuzz really sent requests
    print(f"{len(statuses)} requests over {len(tried)} operations: "
          f"{ {code: statuses.count(code) for code in sorted(set(statuses))} }")
