"""``doclake serve``'s connection layer: HTTP/1.1 through h11, apart from the app (``server``).

One ``h11.Connection`` per socket parses each request and frames its body by its
Content-Length, so a body is never read as a request; every answer is written through it too,
refusals, 408s and 503s included. The app is a function ``Request -> Reply`` that never sees a
socket: it reads a body with ``Request.body()``, refuses with ``BadRequest``.

What this layer adds to h11:

- strictness where h11 repairs what RFC 9112 lets a server refuse: a header line folded onto
  the one before (obs-fold) and a Content-Length list (``5, 5``) are 400 (``head_problem``);
  ``Transfer-Encoding`` is refused (one framing: 501, or 400 beside a Content-Length); an HTTP
  version but 1.0 and 1.1 is 505; a request target over ``MAX_LINE`` is 414, a header over
  ``MAX_LINE``, headers over ``MAX_HEAD_BYTES`` or more than ``MAX_HEADERS`` are 431;
- deadlines for a whole request, not per read: the request line and headers within
  ``HEADERS_DEADLINE_S``, a body within ``BODY_DEADLINE_S`` plus its length at
  ``BODY_MIN_RATE``, no read waiting longer than ``SOCKET_TIMEOUT_S`` (408, then closed; an
  idle kept-alive connection is closed without a word, as a 408 there could be taken for the
  answer to the client's next request);
- a floor on a body's average rate (``MIN_TRANSFER_RATE`` once ``MIN_RATE_GRACE_S`` have
  passed, looked at on each read and at least every ``RATE_CHECK_S``): a sender that stops is
  cut as surely as a slow one;
- at most ``MAX_CONNECTIONS`` connections at once and ``MAX_PER_CLIENT`` from one address
  (``CappedServer``, 503 beyond, at once);
- every refusal a JSON body ``{"error", "status"}`` and a closed connection; an answer given
  before its request's body was read closes the connection (the body is never read as the next
  request), after a lingering read of what the client is still sending.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus

import h11

__all__ = ["BODY_DEADLINE_S", "BODY_MIN_RATE", "HEADERS_DEADLINE_S", "MAX_CONNECTIONS",
           "MAX_HEADERS", "MAX_HEAD_BYTES", "MAX_LINE", "MAX_PER_CLIENT", "MIN_RATE_GRACE_S",
           "MIN_TRANSFER_RATE", "RATE_CHECK_S", "SOCKET_TIMEOUT_S", "App", "BadRequest",
           "CappedServer", "Connection", "Headers", "Reply", "Request", "head_problem"]

log = logging.getLogger("infra.serve.server")

MAX_CONNECTIONS = 64  # served at once; more wait in the kernel's backlog no longer than a 503
SOCKET_TIMEOUT_S = 30.0  # a client that sends nothing for this long is dropped
# A refused request's body is never read; before closing, what the client is still sending is
# read and thrown away for at most this long and this much (a "lingering close", as Apache and
# nginx do), so the kernel does not answer it with a reset that loses the 4xx already sent.
LINGER_S = 2.0
LINGER_BYTES = 4 * 1024 * 1024
# Deadlines for a whole request, not for each read: a client sending a header line every few
# seconds would otherwise hold its connection (and, 64 of them, the server) for ever.
HEADERS_DEADLINE_S = 20.0  # the request line and every header
BODY_DEADLINE_S = 30.0  # a body, plus the time its length takes at BODY_MIN_RATE
BODY_MIN_RATE = 256 * 1024  # bytes per second
# A body slower than this on average, once its grace has passed, is cut (408) and its slot kept
# for a retry: 64 uploads sending a byte every 10 s would otherwise hold every connection until
# the deadline above (35 minutes for 512 MiB). Checked on each read and at least every
# RATE_CHECK_S (a read waits no longer): a sender that stops is cut as surely as a slow one.
MIN_TRANSFER_RATE = 16 * 1024  # bytes per second, averaged from the body's start
MIN_RATE_GRACE_S = 10.0
RATE_CHECK_S = 2.0
MAX_PER_CLIENT = 16  # connections from one address at once; more are a 503 at once
MAX_LINE = 65536  # the request target, or one header's name and value
MAX_HEAD_BYTES = 64 * 1024  # a request line and headers not yet complete (h11's buffer)
MAX_HEADERS = 100
_RECV = 65536
_HEAD_END = re.compile(rb"\n\r?\n")  # the blank line h11 ends a head at
_FOLDED = re.compile(rb"\n[ \t]")  # a line that begins with whitespace: obs-fold
_LENGTH_LIST = re.compile(rb"(?im)^content-length[ \t]*:[^\r\n]*,")
_DIGITS_ONLY = "Content-Length must be one number of bytes (digits only)"
_NO_TRANSFER_ENCODING = "Transfer-Encoding is not accepted; send the body with a Content-Length"


class BadRequest(Exception):
    """A request refused: answered ``status`` (400 unless told) with this message, and the
    connection closed."""

    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Reply:
    """The app's answer: a JSON body (a dict, or bytes already JSON); ``close`` ends the
    connection after it."""

    status: int
    body: dict | bytes
    close: bool = False


class Headers:
    """A request's header fields as h11 parsed them, names case-insensitive, values decoded as
    Latin-1 (the bytes as sent, one character each)."""

    def __init__(self, fields: list[tuple[bytes, bytes]]):
        self._fields = [(name.decode("latin-1").lower(), value.decode("latin-1"))
                        for name, value in fields]

    def get(self, name: str) -> str | None:
        """The first value of ``name``, or None."""
        return next((value for key, value in self._fields if key == name.lower()), None)


class Request:
    """One request, handed to the app: ``method``, ``target``, ``headers``, ``length`` (the
    Content-Length, None without one) and ``body()``, the body's bytes as they arrive, read
    under the request's deadline and rate floor (``BadRequest`` 408 when cut, 400 when the
    client ends it early)."""

    def __init__(self, method: str, target: str, headers: Headers, length: int | None,
                 body: Callable[[], Iterator[bytes]]):
        self.method = method
        self.target = target
        self.headers = headers
        self.length = length
        self._body = body

    def body(self) -> Iterator[bytes]:
        return self._body()


App = Callable[[Request], Reply]


def head_problem(head: bytes) -> str | None:
    """Why a request's head (as received, up to its blank line) is refused although h11 would
    take it, or None: RFC 9112 lets a server refuse or repair these, and a repair could be read
    another way by a proxy in front, so they are refused. h11 joins a folded line onto the one
    before (obs-fold) and takes a Content-Length list of one repeated number (``5, 5``)."""
    if _FOLDED.search(head):
        return "a header line folded onto the one before (obs-fold) is not accepted"
    if _LENGTH_LIST.search(head):
        return _DIGITS_ONLY
    return None


class _Late(Exception):
    """The request's deadline passed, or the client fell silent or below the rate floor."""


class _Gone(Exception):
    """The socket failed (the client went away): nothing more can be said."""


def _refusal(error: h11.RemoteProtocolError, buffered: bytes) -> tuple[int, str]:
    """The status and message for a request h11 refused."""
    message = str(error)
    if error.error_status_hint == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
        if b"\n" not in buffered:  # the request line itself has not ended
            return HTTPStatus.REQUEST_URI_TOO_LONG, "the request line is too long"
        return error.error_status_hint, "the request's headers are too long"
    if "Transfer-Encoding" in message:
        return error.error_status_hint, _NO_TRANSFER_ENCODING
    if "Content-Length" in message:
        return HTTPStatus.BAD_REQUEST, _DIGITS_ONLY
    return error.error_status_hint, f"malformed request: {message[:200]}"


def _check(event: h11.Request) -> None:
    """This server's rules on a request h11 parsed (``BadRequest`` when broken)."""
    if event.http_version not in (b"1.0", b"1.1"):
        raise BadRequest("HTTP/1.1 (or 1.0) only", HTTPStatus.HTTP_VERSION_NOT_SUPPORTED)
    if len(event.target) > MAX_LINE:
        raise BadRequest("the request line is too long", HTTPStatus.REQUEST_URI_TOO_LONG)
    if len(event.headers) > MAX_HEADERS:
        raise BadRequest(f"more than {MAX_HEADERS} headers",
                         HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE)
    if any(len(name) + len(value) > MAX_LINE for name, value in event.headers):
        raise BadRequest("a header line is too long", HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE)
    names = {name for name, _ in event.headers}
    if b"transfer-encoding" in names:
        raise BadRequest(_NO_TRANSFER_ENCODING, HTTPStatus.BAD_REQUEST if b"content-length" in names
                         else HTTPStatus.NOT_IMPLEMENTED)


class Connection:
    """One client's socket, spoken to through an ``h11.Connection``: requests in turn (kept
    alive while both sides allow it), each handed to ``app``, each answer written back."""

    def __init__(self, sock: socket.socket, app: App, client: str = "?"):
        self.sock = sock
        self.app = app
        self.client = client
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.deadline = 0.0
        self.heard = 0.0  # when the client last sent something
        self.pace: list[float] | None = None  # [body started, bytes received] while one is read
        self.head = bytearray()  # the bytes of the head being received, for head_problem
        self.method = b""  # the request being answered's

    def serve(self) -> None:
        """Answer requests until one side closes."""
        while self._serve_one():
            self.h11.start_next_cycle()

    def _serve_one(self) -> bool:
        """One request and its answer; False when the connection is to close."""
        try:
            event = self._next_request()
        except _Late:
            self._cut()
            return False
        except h11.RemoteProtocolError as error:
            status, message = _refusal(error, self.head)
            self._refuse(status, message)
            return False
        except _Gone:
            return False
        if event is None:
            return False
        self.method = event.method
        request = Request(event.method.decode("latin-1"), event.target.decode("latin-1"),
                          Headers(list(event.headers)), _length(event), self._body)
        try:
            problem = head_problem(bytes(self.head))
            if problem is not None:
                raise BadRequest(problem)
            _check(event)
            if not request.length:  # no body: its end is in hand, and the request is DONE
                self._next_event()
            self._body_deadline(request.length or 0)
            reply = self.app(request)
        except BadRequest as refused:
            reply = Reply(refused.status, {"error": str(refused), "status": int(refused.status)},
                          close=True)
        except _Gone:
            return False
        except Exception:
            log.exception("%s %s failed", request.method, request.target[:200])
            reply = Reply(HTTPStatus.INTERNAL_SERVER_ERROR,
                          {"error": "the server failed; see its log", "status": 500}, close=True)
        finally:
            self.pace = None
        log.info("%s %s %s %d", self.client, request.method, request.target[:200],
                 int(reply.status))
        return self._answer(reply) and self.h11.our_state is h11.DONE \
            and self.h11.their_state is h11.DONE

    def _next_request(self) -> h11.Request | None:
        """The next request's head (None: the client closed, or was silent, between requests)."""
        self.deadline = time.monotonic() + HEADERS_DEADLINE_S
        self.head = bytearray(self.h11.trailing_data[0])
        self.method = b""
        while True:
            try:
                event = self._next_event()
            except _Late:
                if not self._begun():
                    return None  # idle: closed without a word
                raise
            if isinstance(event, h11.Request):
                end = _HEAD_END.search(self.head)
                del self.head[end.end() if end else len(self.head):]
                return event
            if isinstance(event, h11.ConnectionClosed):
                return None

    def _begun(self) -> bool:
        return self.h11.their_state is not h11.IDLE or bool(self.h11.trailing_data[0])

    def _body_deadline(self, length: int) -> None:
        self.deadline = time.monotonic() + BODY_DEADLINE_S + length / BODY_MIN_RATE

    def _body(self) -> Iterator[bytes]:
        """The request's body as it arrives (``Request.body``)."""
        if self.h11.they_are_waiting_for_100_continue:
            self._write(self.h11.send(h11.InformationalResponse(
                status_code=100, headers=[], reason=b"Continue")))
        self.pace = [time.monotonic(), 0]
        while True:
            try:
                event = self._next_event()
            except _Late:
                raise BadRequest("the request did not arrive in time",
                                 HTTPStatus.REQUEST_TIMEOUT) from None
            except h11.RemoteProtocolError:
                raise BadRequest("the body ended early") from None
            if not isinstance(event, h11.Data):
                return  # EndOfMessage (or PAUSED: the body was read already)
            self.pace[1] += len(event.data)
            yield bytes(event.data)

    def _next_event(self):
        """h11's next event, reading from the socket as it needs (``_Late`` past a deadline)."""
        self.heard = time.monotonic()
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self._receive()

    def _receive(self) -> None:
        """One read into h11, waiting no longer than the deadline, ``SOCKET_TIMEOUT_S`` of
        silence, or (a body being read) ``RATE_CHECK_S`` between looks at its rate."""
        while True:
            now = time.monotonic()
            wait = min(self.deadline - now, self.heard + SOCKET_TIMEOUT_S - now)
            if self.pace is not None:
                late = now - self.pace[0] - MIN_RATE_GRACE_S
                if late > 0 and self.pace[1] < MIN_TRANSFER_RATE * late:
                    raise _Late
                wait = min(wait, RATE_CHECK_S)
            if wait <= 0:
                raise _Late
            self.sock.settimeout(wait)
            try:
                data = self.sock.recv(_RECV)
            except TimeoutError:
                continue
            except OSError as error:
                raise _Gone from error
            self.heard = time.monotonic()
            if self.h11.their_state is h11.IDLE:
                self.head += data
            self.h11.receive_data(data)
            return

    def _cut(self) -> None:
        """408 for a request begun and not answered; then the connection closes."""
        if self._begun():
            self._refuse(HTTPStatus.REQUEST_TIMEOUT, "the request did not arrive in time")

    def _refuse(self, status: int, message: str) -> None:
        self._answer(Reply(status, {"error": message, "status": int(status)}, close=True))

    def _answer(self, reply: Reply) -> bool:
        """Write ``reply`` through h11 (False: it could not be written, or nothing can be)."""
        if self.h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return False
        data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                   ("Server", "doclake-serve")]
        if reply.close or self.h11.their_state is not h11.DONE:
            headers.append(("Connection", "close"))  # a body unread is never read as a request
        try:
            phrase = HTTPStatus(reply.status).phrase.encode()
        except ValueError:
            phrase = b""
        try:
            self._write(self.h11.send(h11.Response(status_code=int(reply.status),
                                                   headers=headers, reason=phrase)))
            if self.method != b"HEAD":  # a HEAD answer has the length of a body, not the body
                self._write(self.h11.send(h11.Data(data=data)))
            self._write(self.h11.send(h11.EndOfMessage()))
        except _Gone:
            return False
        return True

    def _write(self, data: bytes | None) -> None:
        if data:
            self.sock.settimeout(SOCKET_TIMEOUT_S)
            try:
                self.sock.sendall(data)
            except OSError as error:
                raise _Gone from error


def _length(event: h11.Request) -> int | None:
    """The Content-Length h11 validated, or None."""
    value = next((value for name, value in event.headers if name == b"content-length"), None)
    return None if value is None else int(value)


def _busy(message: str, extra: list[tuple[str, str]]) -> bytes:
    """A 503 written through h11 before any request is read."""
    connection = h11.Connection(h11.SERVER)
    data = json.dumps({"error": message, "status": 503}).encode()
    head = [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
            ("Connection", "close"), *extra]
    return b"".join([connection.send(h11.Response(status_code=503, headers=head,
                                                  reason=b"Service Unavailable")),
                     connection.send(h11.Data(data=data)), connection.send(h11.EndOfMessage())])


class CappedServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """A thread per connection (a ``Connection`` speaking to ``app``), at most
    ``MAX_CONNECTIONS`` at once and ``MAX_PER_CLIENT`` from one address."""

    allow_reuse_address = True
    daemon_threads = True
    # The kernel's queue of connections not yet accepted: socketserver's 5 would have clients
    # past it wait on SYN retries (1, 3, 7 s ...) for an answer, even a 503.
    request_queue_size = 256

    def __init__(self, address, app: App, max_connections: int | None = None):
        self.app = app
        self._slots = threading.BoundedSemaphore(max_connections or MAX_CONNECTIONS)
        self._per_client: dict[str, int] = {}
        self._counting = threading.Lock()
        super().__init__(address, None)

    def process_request(self, request, client_address) -> None:
        client = str(client_address[0])
        with self._counting:
            crowded = self._per_client.get(client, 0) >= MAX_PER_CLIENT
            if not crowded:
                self._per_client[client] = self._per_client.get(client, 0) + 1
        if crowded or not self._slots.acquire(blocking=False):
            if not crowded:
                self._leave(client)
            with contextlib.suppress(OSError):
                request.sendall(_busy("too many connections from this address",
                                      [("Retry-After", "5")]) if crowded
                                else _busy("too many connections", []))
            super().shutdown_request(request)  # no drain: this is the accepting thread
            return
        super().process_request(request, client_address)

    def finish_request(self, request, client_address) -> None:
        Connection(request, self.app, str(client_address[0])).serve()

    def _leave(self, client: str) -> None:
        with self._counting:
            left = self._per_client.get(client, 1) - 1
            if left:
                self._per_client[client] = left
            else:
                self._per_client.pop(client, None)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()
            self._leave(str(client_address[0]))

    def handle_error(self, request, client_address) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)

    def shutdown_request(self, request) -> None:
        """Close after a bounded drain, so a client still sending a refused body reads the
        answer instead of a connection reset."""
        with contextlib.suppress(OSError):
            request.shutdown(socket.SHUT_WR)
            _drain(request, deadline=time.monotonic() + LINGER_S, budget=LINGER_BYTES)
        self.close_request(request)


def _drain(conn: socket.socket, *, deadline: float, budget: int) -> None:
    """Read and discard until the peer closes, the deadline passes or the budget is spent."""
    while budget > 0 and (left := deadline - time.monotonic()) > 0:
        conn.settimeout(left)
        chunk = conn.recv(min(65536, budget))
        if not chunk:
            return
        budget -= len(chunk)
