"""The service as an attacker on the same machine sees it: a web page in the user's browser
(rebinding its name to 127.0.0.1, posting from another origin), oversized and chunked
bodies, sockets that connect and send nothing, and the token. Each against a real
`sessiondb serve` process."""

from __future__ import annotations

import http.client
import json
import os
import socket
import time

import httpx
import pytest

from .conftest import start, stop
from .test_api import is_error, new_session

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def port_of(server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def titles(api) -> set:
    return {s["title"] for s in api.get("/api/sessions", params={"limit": 1000}).json()["items"]}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A token-protected service: the browser rules hold with a token too."""
    running = start(tmp_path_factory.mktemp("guarded") / "home", "--max-body", "4096", token="t0ken")
    yield running
    stop(running)


# --- DNS rebinding and cross-site requests -------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1.nip.io:{port}",
                                  "127.0.0.1:1", ""])
def test_a_request_naming_another_host_is_refused_421(api, server, host):
    response = api.get("/api/sessions", headers={"Host": host.format(port=port_of(server))})
    is_error(response, 421, "misdirected_request")


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_the_loopback_names_with_the_port_are_answered(api, server, name):
    assert api.get("/api/health", headers={"Host": f"{name}:{port_of(server)}"}).status_code == 200


def test_a_rebound_page_cannot_create_or_delete_sessions(api, server):
    s = new_session(api, "kept from a rebound page")
    rebound = {"Host": f"attacker.example:{port_of(server)}", "Origin": f"http://attacker.example:{port_of(server)}"}
    is_error(api.post("/api/sessions", json={"source": "web", "title": "planted"}, headers=rebound), 421)
    is_error(api.delete(f"/api/sessions/{s['id']}", headers=rebound), 421)
    assert "kept from a rebound page" in titles(api) and "planted" not in titles(api)


@pytest.mark.parametrize("token", [None, "t0ken"])
def test_a_state_change_from_another_origin_is_refused_with_or_without_a_token(request, token):
    server = request.getfixturevalue("server" if token is None else "guarded")
    with server.client() as api:
        s = new_session(api, f"cross-origin target {token}")
        foreign = {"Origin": "http://evil.example"}
        is_error(api.post("/api/sessions", json={"source": "web", "title": "forged"}, headers=foreign), 403, "forbidden")
        is_error(api.patch(f"/api/sessions/{s['id']}", json={"title": "renamed"}, headers=foreign), 403)
        is_error(api.delete(f"/api/sessions/{s['id']}", headers=foreign), 403)
        is_error(api.post("/api/doctor/repair", headers=foreign), 403)
        is_error(api.post(f"/api/sessions/{s['id']}/append", headers={"Origin": "null"},
                          json={"messages": [{"role": "user", "content": "forged"}]}), 403)
        assert "forged" not in titles(api) and f"cross-origin target {token}" in titles(api)
        assert api.get(f"/api/sessions/{s['id']}/transcript").json()["items"] == []
        own = {"Origin": server.url}
        assert api.patch(f"/api/sessions/{s['id']}", json={"pinned": True}, headers=own).status_code == 200


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_state_change_that_is_not_json_is_refused_415(server, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    with httpx.Client(base_url=server.url, timeout=30) as bare, server.client() as api:
        s = new_session(api, f"not json {content_type}")
        body = b'{"source": "web", "title": "simple request"}'
        is_error(bare.post("/api/sessions", content=body, headers=headers), 415, "unsupported_media_type")
        is_error(bare.delete(f"/api/sessions/{s['id']}", headers=headers), 415)
        is_error(bare.post("/api/doctor/repair", headers=headers), 415)
        assert "simple request" not in titles(api) and f"not json {content_type}" in titles(api)


# --- size limits ------------------------------------------------------------------------


def test_a_body_over_the_limit_is_413_unread_and_writes_nothing(guarded):
    with guarded.client() as api:
        s = new_session(api, "size limit")
        big = {"messages": [{"role": "user", "content": "x" * 5000}]}
        is_error(api.post(f"/api/sessions/{s['id']}/append", json=big), 413, "too_large")

        def chunks():  # no Content-Length: the cap is counted as the body arrives
            yield b'{"messages": [{"role": "user", "content": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}]}'

        is_error(api.post(f"/api/sessions/{s['id']}/append", content=chunks()), 413, "too_large")
        assert api.get(f"/api/sessions/{s['id']}/transcript").json()["items"] == []
        small = {"messages": [{"role": "user", "content": "fits"}]}
        assert api.post(f"/api/sessions/{s['id']}/append", json=small).status_code == 200


def test_a_many_parted_message_is_refused_naming_the_limit(api):
    s = new_session(api, "many parts")
    parts = [{"type": "text", "text": "p"} for _ in range(20_000)]
    body = is_error(api.post(f"/api/sessions/{s['id']}/append",
                             json={"messages": [{"role": "user", "content": parts}]}), 422, "invalid_input")
    assert "parts" in body["message"] and "10,000" in body["message"]
    assert api.get(f"/api/sessions/{s['id']}/transcript").json()["items"] == []


def test_an_append_answers_the_stored_rows_identities_not_their_content(api):
    s = new_session(api, "identities")
    response = api.post(f"/api/sessions/{s['id']}/append",
                        json={"messages": [{"uid": "a", "role": "user", "content": "secret " * 1000}]})
    [item] = response.json()["items"]
    assert set(item) == {"id", "uid", "seq", "state"} and item["uid"] == "a" and item["state"] == "active"
    assert "secret" not in response.text


# --- slow and many clients -----------------------------------------------------------------


def closed_by_service(sock: socket.socket) -> bool:
    """Whether the service closed `sock`: an end of file, or a reset (its bytes were never read)."""
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_idle_sockets_past_the_connection_cap_are_closed_and_health_answers(tmp_path):
    server = start(tmp_path / "home", "--max-connections", "50", "--header-timeout", "1")
    sockets = []
    try:
        for _ in range(200):  # connect, send a request line and never finish the headers
            sock = socket.create_connection(("127.0.0.1", port_of(server)), timeout=30)
            sock.sendall(b"GET /api/health HTTP/1.1\r\n")
            sockets.append(sock)
        for sock in sockets:  # every one of them is closed by the service
            assert closed_by_service(sock)
        with server.client() as api:
            assert api.get("/api/health").status_code == 200
    finally:
        for sock in sockets:
            sock.close()
        stop(server)


def test_a_flood_of_idle_sockets_never_locks_the_owner_out_before_the_deadline_frees_them(tmp_path):
    server = start(tmp_path / "home", "--max-connections", "50", "--header-timeout", "600")
    sockets = []
    try:
        for _ in range(300):  # far past the cap, and the deadline is far away
            sock = socket.create_connection(("127.0.0.1", port_of(server)), timeout=30)
            sock.sendall(b"GET /api/health HTTP/1.1\r\n")
            sockets.append(sock)
        with server.client() as api:  # served at once: the longest-waiting idle sockets made room
            assert api.get("/api/health").status_code == 200
            assert api.get("/api/sessions").status_code == 200
        assert closed_by_service(sockets[0])  # the longest-waiting idle socket made room
    finally:
        for sock in sockets:
            sock.close()
        stop(server)


def exchange(server, request: bytes, *, then: bytes = b"", pause: float = 0.0) -> tuple[int, bytes]:
    """Send `request`, wait `pause` seconds, send `then`; the response's status and body."""
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=30) as sock:
        sock.sendall(request)
        time.sleep(pause)
        if then:
            sock.sendall(then)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read()


def test_a_request_whose_headers_arrived_is_not_cut_off_by_the_header_timeout(tmp_path):
    server = start(tmp_path / "home", "--header-timeout", "1")
    try:
        body = b'{"source": "cli", "title": "slow body"}'
        head = (f"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{port_of(server)}\r\n"
                f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        status, _ = exchange(server, head.encode(), then=body, pause=2)  # the body comes after the header deadline
        assert status == 201
    finally:
        stop(server)


def test_a_declared_length_over_the_limit_is_refused_without_reading_the_body(guarded):
    head = (f"POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{port_of(guarded)}\r\nAuthorization: Bearer t0ken\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{")
    status, body = exchange(guarded, head.encode())  # the 100 MB never come: only a refusal unread can answer
    assert status == 413 and json.loads(body)["code"] == "too_large"


# --- headers and the token ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/health", "/api/nothing-here", "/openapi.json"])
def test_every_response_carries_the_security_headers(server, guarded, path):
    with server.client() as api, guarded.client(token="wrong") as unauthorised:
        for response in (api.get(path), api.get(path, headers={"Host": "evil.example"}), unauthorised.get(path)):
            for name, value in SECURITY_HEADERS.items():
                assert response.headers.get(name) == value, (path, response.status_code, name)


def test_docs_loads_nothing_from_a_cdn_because_it_is_not_served(api):
    assert api.get("/docs").status_code == 404 and api.get("/redoc").status_code == 404
    assert "/api/sessions" in api.get("/openapi.json").json()["paths"]
    assert "cdn" not in api.get("/").text.lower()


def test_a_non_ascii_token_from_a_file_works_as_utf8(tmp_path):
    token = "pässwörd-東京"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n", encoding="utf-8")
    os.chmod(token_file, 0o600)
    server = start(tmp_path / "home", token_file=token_file)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as api:
            right = {"Authorization": b"Bearer " + token.encode("utf-8")}
            assert api.get("/api/sessions", headers=right).status_code == 200
            wrong = {"Authorization": b"Bearer " + token.encode("latin-1", "replace")}
            is_error(api.get("/api/sessions", headers=wrong), 401, "unauthorized")
            is_error(api.get("/api/sessions"), 401, "unauthorized")
    finally:
        stop(server)


def test_a_download_name_outside_ascii_is_given_as_rfc5987(api):
    s = new_session(api, "cjk id", session_id="東京-2026")
    response = api.get(f"/api/sessions/{s['id']}/export", params={"format": "md"})
    assert response.status_code == 200
    disposition = response.headers["content-disposition"]
    assert "filename*=UTF-8''%E6%9D%B1%E4%BA%AC-2026.md" in disposition
    assert 'filename="__-2026.md"' in disposition


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [{"role": "user", "content": "x", "timestamp": 1e308},
                                     {"role": "user", "content": "x", "token_count": 10**26}])
def test_huge_times_and_token_counts_are_422_not_stored(api, message):
    s = new_session(api, f"bounds {sorted(message)}")
    is_error(api.post(f"/api/sessions/{s['id']}/append", json={"messages": [message]}), 422, "invalid_input")
    assert api.get(f"/api/sessions/{s['id']}/transcript").json()["items"] == []


@pytest.mark.parametrize("session_id", ["  ", "../etc", "a\u0007b"])
def test_a_hostile_session_id_is_refused_and_listing_still_works(api, session_id):
    is_error(api.post("/api/sessions", json={"source": "cli", "session_id": session_id}), 422, "invalid_input")
    assert api.get("/api/sessions").status_code == 200


def test_a_foreign_host_is_refused_even_with_the_right_token(guarded):
    with guarded.client() as api:
        is_error(api.get("/api/sessions", headers={"Host": f"evil.example:{port_of(guarded)}"}), 421)
        assert api.get("/api/sessions").status_code == 200


def test_the_longest_question_in_any_script_is_answered(server):
    # 20,000 characters of four UTF-8 bytes each: 240,000 bytes of URL, percent-encoded
    # (requests, as httpx refuses a query that long on the client's side).
    import requests

    owner = {"Authorization": f"Bearer {server.token}"}
    answered = requests.get(f"{server.url}/api/recall", params={"q": "𬝖" * 20_000}, headers=owner, timeout=30)
    too_long = requests.get(f"{server.url}/api/recall", params={"q": "𬝖" * 20_001}, headers=owner, timeout=30)
    assert answered.status_code == 200 and answered.json()["items"] == []
    assert too_long.status_code == 422 and set(too_long.json()) == {"code", "message", "detail"}
