"""``doclake serve`` parses strictly, over raw sockets.

The probes: ``Transfer-Encoding : chunked`` (whitespace before the colon) was taken (201),
obs-folded lines and a header line without a colon too; 431, 414 and 501 were HTML; 64
connections sending a header line every 10 s held every other client at 503 for ever (the
timeout was per read); ``X-Doclake-Source-Name: résumé`` was stored as ``rÃ©sumÃ©``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from urllib.parse import quote, urlsplit

import pytest
from support.http_answers import answer_of, status_once_a_slot_is_back

from infra.serve import protocol
from infra.serve import server as serve_module
from infra.serve.server import ServeApp

SLOT_LIMIT = 100 * 1024


@pytest.fixture
def app(settings):
    server = ServeApp(settings, max_bytes=SLOT_LIMIT, run_workers=False).start()
    yield server
    server.stop()


def raw(app, request: bytes) -> tuple[int | None, dict, bytes]:
    host, port = app.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=60) as conn:
        conn.sendall(request)
        return answer_of(conn)


def head_lines(app, method: str, target: str, extra: list[bytes], body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1".encode(),
             f"Host: 127.0.0.1:{app.httpd.server_address[1]}".encode(), *extra]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def upload_target(app, name: str = "a.pdf") -> str:
    body = json.dumps({"source_name": name}).encode()
    status, answer, _ = raw(app, head_lines(app, "POST", "/uploads",
                                            [f"Content-Length: {len(body)}".encode()], body))
    assert status == 201
    url = urlsplit(answer["upload"]["url"])
    return f"{url.path}?{url.query}"


def nothing_stored(app) -> None:
    assert app.objects.list("uploads/") == []
    assert app.store.list_jobs() == []


@pytest.mark.parametrize("lines", [
    [b"Transfer-Encoding : chunked"],
    [b"Content-Length : 5"],
    [b"Content-Length: 5", b"X-Note: a", b" folded onto the line before"],
    [b"Content-Length: 5", b"\tX-Tab-Folded: b"],
    [b"Content-Length: 5", b"this line has no colon"],
], ids=["space-before-colon-te", "space-before-colon-length", "obs-fold", "tab-fold", "no-colon"])
def test_header_lines_rfc_9112_forbids_are_a_400_and_nothing_stored(app, lines):
    target = upload_target(app)
    status, body, _ = raw(app, head_lines(app, "PUT", target, lines, b"%PDF-"))
    assert status == 400, body
    assert body["status"] == 400 and body["error"]
    nothing_stored(app)


# An HTTP/1.1 request without a Host is a 400 whatever else it breaks (RFC 9112, section 3.2;
# h11 checks it first): the size probes name a Host, so that their size is what is refused.
@pytest.mark.parametrize("request_bytes, status", [
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET /results/x.json HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    (b"GET /results/x.json HTTP/1.1\r\nHost: x\r\n"
     + b"".join(b"X-%d: 1\r\n" % i for i in range(120)) + b"\r\n", 431),
    (b"GET /results/x.json HTTP/1.1\r\n\r\n", 400),
    (b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n", 501),
    (b"GET / HTTP/9.9\r\n\r\n", 505),
    (b"NONSENSE\r\n\r\n", 400),
], ids=["414", "431-long-line", "431-many-headers", "400-no-host", "501", "505",
        "400-request-line"])
def test_http_servers_own_refusals_are_json(app, request_bytes, status):
    answered, body, head = raw(app, request_bytes)
    assert answered == status
    assert body["status"] == status and body["error"]
    assert b"application/json" in head.lower()


def test_a_slow_header_sender_is_cut_at_the_deadline_and_frees_its_slot(settings, monkeypatch):
    monkeypatch.setattr(protocol, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(protocol, "HEADERS_DEADLINE_S", 1.0)
    app = ServeApp(settings, run_workers=False).start()
    try:
        host, port = app.httpd.server_address[:2]
        slow = [socket.create_connection((host, port), timeout=30) for _ in range(2)]
        for conn in slow:
            conn.sendall(b"POST /uploads HTTP/1.1\r\n")
        started = time.monotonic()
        answers: list[int | None] = []
        for _ in range(6):  # one header line every 0.3 s: each read is quick, the whole is not
            for conn in slow:
                with contextlib.suppress(OSError):  # cut already
                    conn.sendall(b"X-Slow: 1\r\n")
            time.sleep(0.3)
        for conn in slow:
            answers.append(answer_of(conn)[0])
            conn.close()
        assert answers == [408, 408]
        assert time.monotonic() - started < 10
        request = head_lines(app, "POST", "/uploads", [b"Content-Length: 2"], b"{}")
        assert status_once_a_slot_is_back(lambda: raw(app, request)[0]) == 201
    finally:
        app.stop()


def test_a_body_that_stalls_is_cut_at_its_deadline_and_nothing_stored(settings, monkeypatch):
    monkeypatch.setattr(protocol, "BODY_DEADLINE_S", 1.0)
    app = ServeApp(settings, max_bytes=SLOT_LIMIT, run_workers=False).start()
    try:
        host, port = app.httpd.server_address[:2]
        target = upload_target(app)
        with socket.create_connection((host, port), timeout=30) as conn:
            conn.sendall(head_lines(app, "PUT", target, [b"Content-Length: 1000"], b"%PDF-"))
            started = time.monotonic()
            status, body, _ = answer_of(conn)
        assert status == 408 and time.monotonic() - started < 10
        nothing_stored(app)
    finally:
        app.stop()


@pytest.mark.parametrize("encode", [
    lambda name: name.encode("utf-8"),
    lambda name: quote(name).encode(),
    lambda name: b"UTF-8''" + quote(name).encode(),
], ids=["raw-utf8", "percent", "rfc5987"])
def test_a_source_name_in_utf8_is_stored_as_sent(app, encode):
    name = "résumé 契約.pdf"
    target = upload_target(app, name)
    status, _, _ = raw(app, head_lines(app, "PUT", target, [
        b"Content-Length: 9", b"X-Doclake-Source-Name: " + encode(name)], b"%PDF-1.4\n"))
    assert status == 201
    assert [job.source_name for job in app.store.list_jobs()] == [name]


def test_the_slot_tells_a_client_how_to_send_a_non_ascii_name(app):
    body = json.dumps({"source_name": "résumé.pdf"}).encode()
    _, answer, _ = raw(app, head_lines(app, "POST", "/uploads",
                                       [f"Content-Length: {len(body)}".encode()], body))
    sent = answer["upload"]["headers"]["X-Doclake-Source-Name"]
    assert sent.isascii() and serve_module.source_name_header(sent) == "résumé.pdf"


def test_a_connection_that_sends_nothing_is_closed_at_the_deadline_without_an_answer(
        settings, monkeypatch):
    """No 408 on an idle connection: a client would take it for its next request's answer."""
    monkeypatch.setattr(protocol, "HEADERS_DEADLINE_S", 1.0)
    app = ServeApp(settings, run_workers=False).start()
    try:
        host, port = app.httpd.server_address[:2]
        with socket.create_connection((host, port), timeout=30) as conn:
            started = time.monotonic()
            assert conn.recv(1024) == b""
            assert time.monotonic() - started < 10
    finally:
        app.stop()


def _answers(conn: socket.socket) -> list[tuple[int, bytes]]:
    """Every answer on ``conn`` until the server closes it: (status, body), read by each head's
    Content-Length."""
    stream = b""
    with contextlib.suppress(OSError):
        while chunk := conn.recv(65536):
            stream += chunk
    answers = []
    while stream:
        head, _, stream = stream.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines
                      if line.lower().startswith(b"content-length:"))
        answers.append((int(lines[0].split()[1]), stream[:length]))
        stream = stream[length:]
    return answers


def test_pipelined_requests_are_answered_in_order_until_a_refusal_closes(app):
    """Four requests in one write on one connection: a slot (201), a result not there yet (404,
    the connection kept), a PUT to no upload URL (a refusal: 404, the connection closed), and a
    slot asked after it, never answered."""
    missing = "00000000-0000-0000-0000-000000000000"
    requests = b"".join([
        head_lines(app, "POST", "/uploads", [b"Content-Length: 2"], b"{}"),
        head_lines(app, "GET", f"/results/{missing}.json", []),
        head_lines(app, "PUT", "/nowhere", [b"Content-Length: 0"]),
        head_lines(app, "POST", "/uploads", [b"Content-Length: 2"], b"{}"),
    ])
    host, port = app.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=60) as conn:
        conn.sendall(requests)
        answers = _answers(conn)
    assert [status for status, _ in answers] == [201, 404, 404]
    assert json.loads(answers[0][1])["upload"]["method"] == "PUT"
    assert json.loads(answers[1][1]) == {"error": "no result yet", "document_id": missing,
                                         "status": 404}
    assert json.loads(answers[2][1])["error"] == "not an upload URL"


def test_a_client_that_expects_100_continue_gets_it_before_sending_its_body(app):
    host, port = app.httpd.server_address[:2]
    target = upload_target(app)
    with socket.create_connection((host, port), timeout=60) as conn:
        conn.sendall(head_lines(app, "PUT", target, [b"Content-Length: 9",
                                                     b"Expect: 100-continue"]))
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += conn.recv(1)
        assert interim.split()[1] == b"100"
        conn.sendall(b"%PDF-1.4\n")
        assert answer_of(conn)[0] == 201
    # Refused from its headers (over the slot's limit): the answer, and no 100 before it.
    with socket.create_connection((host, port), timeout=60) as conn:
        conn.sendall(head_lines(app, "PUT", upload_target(app), [
            f"Content-Length: {SLOT_LIMIT + 1}".encode(), b"Expect: 100-continue"]))
        status, body, _ = answer_of(conn)
    assert status == 413 and "limit" in body["error"]
