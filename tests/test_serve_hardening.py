"""``doclake serve`` against a hostile client over raw sockets (issue 20): every malformed
request is a 4xx with a JSON body, nothing is stored, and the server goes on answering."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
from support.http_answers import answer_of, status_once_a_slot_is_back

from infra.serve import protocol
from infra.serve.server import ServeApp

SLOT_LIMIT = 100 * 1024


@pytest.fixture
def app(settings):
    server = ServeApp(settings, max_bytes=SLOT_LIMIT, run_workers=False).start()
    yield server
    server.stop()


def raw(app, request: bytes, *, body_then_close: bytes | None = None) -> tuple[int | None, dict]:
    """Send bytes as they are; the status and JSON body answered (None: no answer at all)."""
    host, port = app.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=60) as conn:
        conn.sendall(request)
        if body_then_close is not None:
            conn.sendall(body_then_close)
            conn.shutdown(socket.SHUT_WR)  # what an unbounded read(-1) would wait for
        status, body, _ = answer_of(conn)
    return status, body


def new_slot(app) -> tuple[str, str]:
    status, body = raw(app, _request(app, "POST", "/uploads", b'{"source_name": "a.pdf"}'))
    assert status == 201
    url = urlsplit(body["upload"]["url"])
    return url.path, url.query


def _request(app, method: str, target: str, body: bytes = b"", *, host: str | None = None,
             headers: dict[str, str] | None = None) -> bytes:
    host = host or f"127.0.0.1:{app.httpd.server_address[1]}"
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    fields = {"Content-Length": str(len(body)), **(headers or {})}
    lines += [f"{k}: {v}" for k, v in fields.items() if v is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def nothing_stored(app) -> None:
    assert app.objects.list("uploads/") == []
    assert app.store.list_jobs() == []


def test_a_negative_content_length_is_refused_and_nothing_read(app):
    path, query = new_slot(app)
    request = _request(app, "PUT", f"{path}?{query}", headers={"Content-Length": "-1"})
    status, body = raw(app, request, body_then_close=b"x" * (2 * SLOT_LIMIT))
    assert status == 400 and "digits only" in body["error"]
    nothing_stored(app)


@pytest.mark.parametrize("length", ["abc", "+5", "2, 2", "١٢", "0x2"])
def test_a_length_that_is_not_digits_is_a_400_not_a_dropped_connection(app, length):
    status, body = raw(app, _request(app, "POST", "/uploads", b"{}",
                                     headers={"Content-Length": length}))
    assert status == 400, body


def test_deeply_nested_json_is_a_400(app):
    deep = b"[" * 50_000 + b"]" * 50_000
    status, body = raw(app, _request(app, "POST", "/uploads", deep[:60_000]))
    assert status == 400
    status, _ = raw(app, _request(app, "POST", "/uploads", b"[" * 30_000 + b"]" * 30_000))
    assert status == 400


def test_both_framings_are_refused_so_nothing_is_smuggled(app):
    path, query = new_slot(app)
    chunked = b"5\r\nhello\r\n0\r\n\r\n"
    smuggled = _request(app, "GET", "/results/00000000-0000-0000-0000-000000000000.json")
    request = _request(app, "PUT", f"{path}?{query}", chunked + smuggled,
                       headers={"Transfer-Encoding": "chunked",
                                "Content-Length": str(len(chunked + smuggled))})
    status, body = raw(app, request)
    assert status == 400 and "Transfer-Encoding" in body["error"]
    nothing_stored(app)


def test_a_non_ascii_signature_is_a_403(app):
    path, query = new_slot(app)
    query = query.rsplit("signature=", 1)[0] + "signature=%C3%A9t%C3%A9"
    status, body = raw(app, _request(app, "PUT", f"{path}?{query}", b"%PDF-1.7"))
    assert status == 403, body
    nothing_stored(app)


def test_a_host_that_is_not_this_server_is_refused(app):
    status, body = raw(app, _request(app, "POST", "/uploads", b"{}",
                                     host="attacker.example:8480"))
    assert status == 421 and "Host" in body["error"]
    status, _ = raw(app, _request(app, "POST", "/uploads", b"{}", host="localhost:1"))
    assert status == 201


def test_a_short_secret_is_refused(settings):
    with pytest.raises(ValueError, match="at least 32"):
        ServeApp(settings, secret=b"hunter2", run_workers=False)


def test_connections_are_capped_and_idle_ones_time_out(settings, monkeypatch):
    monkeypatch.setattr(protocol, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(protocol, "SOCKET_TIMEOUT_S", 1.0)
    app = ServeApp(settings, run_workers=False).start()
    try:
        host, port = app.httpd.server_address[:2]
        idle = [socket.create_connection((host, port), timeout=60) for _ in range(2)]
        status, body = None, {}
        for _ in range(200):  # the two idle ones are taken by their threads first
            status, body = raw(app, _request(app, "POST", "/uploads", b"{}"))
            if status == 503:
                break
        assert status == 503 and body["error"] == "too many connections"
        for conn in idle:  # the server drops a client that sends nothing
            assert conn.recv(1) == b""
            conn.close()
        # The server closes an idle socket a moment before its thread gives the slot back: a
        # client arriving in between is still told 503, then served.
        assert status_once_a_slot_is_back(
            lambda: raw(app, _request(app, "POST", "/uploads", b"{}"))[0]) == 201
    finally:
        app.stop()
