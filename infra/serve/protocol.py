"""``doclake serve``'s HTTP/1.1 protocol handling, apart from the upload app (``server``).

Strict where RFC 9112 says reject (``header_problem``, ``content_length``); deadlines for a whole
request, not per read (``Watchdog``: the request line and headers within
``HEADERS_DEADLINE_S``, a body within ``BODY_DEADLINE_S`` plus its length at ``BODY_MIN_RATE``);
a floor on a body's average rate (``Pace``); at most ``MAX_CONNECTIONS`` connections at once and
``MAX_PER_CLIENT`` from one address (``CappedServer``, 503 beyond); every refusal a JSON body
and a closed connection (``StrictHandler``). The app subclasses ``StrictHandler`` with its
routes; it never writes to the socket but through ``_send``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["BODY_DEADLINE_S", "BODY_MIN_RATE", "HEADERS_DEADLINE_S", "MAX_CONNECTIONS",
           "MAX_PER_CLIENT", "MIN_RATE_GRACE_S", "MIN_TRANSFER_RATE", "RATE_CHECK_S",
           "SOCKET_TIMEOUT_S", "BadRequest", "CappedServer", "Pace", "StrictHandler",
           "Watchdog", "content_length", "header_problem"]

log = logging.getLogger("infra.serve.server")

MAX_CONNECTIONS = 64  # served at once; more wait in the kernel's backlog no longer than a 503
SOCKET_TIMEOUT_S = 30.0  # a client that stops sending mid-request is dropped after this
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
_DIGITS = re.compile(r"[0-9]{1,19}")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class BadRequest(Exception):
    """A malformed request: answered 400 (or ``status``) with this message."""

    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.status = status


def content_length(headers, *, required: bool) -> int:
    """The request's body length: digits only, and never together with a Transfer-Encoding."""
    if headers.get("Transfer-Encoding") is not None:
        raise BadRequest("Transfer-Encoding is not accepted; send the body with a Content-Length",
                         HTTPStatus.NOT_IMPLEMENTED if headers.get("Content-Length") is None
                         else HTTPStatus.BAD_REQUEST)
    values = headers.get_all("Content-Length") or []
    if not values:
        if required:
            raise BadRequest("send a Content-Length", HTTPStatus.LENGTH_REQUIRED)
        return 0
    if len(set(values)) != 1 or not _DIGITS.fullmatch(values[0]):
        raise BadRequest("Content-Length must be one number of bytes (digits only)")
    return int(values[0])


def header_problem(lines: list[bytes]) -> str | None:
    """Why the raw header lines break RFC 9112 (section 5), or None. Refused rather than
    repaired, as a proxy in front may have read them another way: a line folded onto the one
    before (obs-fold), a line without a colon, whitespace (or anything but a token) before the
    colon (``Transfer-Encoding : chunked``)."""
    for raw in lines:
        line = raw.rstrip(b"\r\n")
        if not line:
            continue
        if line[:1] in (b" ", b"\t"):
            return "a header line folded onto the one before (obs-fold) is not accepted"
        name, colon, _ = line.partition(b":")
        if not colon:
            return "a header line without a colon"
        if not _TOKEN.fullmatch(name.decode("latin-1")):
            return (f"the header name {name.decode('latin-1')[:60]!r} is not a token (no "
                    "whitespace before the colon)")
    return None


class Watchdog:
    """Closes a connection whose request is not in by its deadline: answers 408 first when a
    request has begun (``begun()``; an idle kept-alive connection is just closed, as a 408 there
    could be taken for the answer to the client's next request) and nothing else has been
    written."""

    def __init__(self, connection: socket.socket, seconds: float,
                 begun: Callable[[], bool] = lambda: True):
        self.connection = connection
        self.begun = begun
        self.lock = threading.Lock()
        self.answering = False  # the handler has begun its answer: the watchdog writes nothing
        self.fired = False
        self._timer = threading.Timer(seconds, self.fire)
        self._timer.daemon = True
        self._timer.start()

    def fire(self) -> None:
        """Answer 408 (unless an answer has begun) and shut the connection."""
        with self.lock:
            self.fired = True
            if not self.answering and self.begun():
                body = b'{"error": "the request did not arrive in time", "status": 408}'
                with contextlib.suppress(OSError):
                    self.connection.sendall(
                        b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def begin_answer(self) -> bool:
        """Mark the answer begun; False when the watchdog has fired (write nothing)."""
        with self.lock:
            self.answering = True
            return not self.fired

    def cancel(self) -> None:
        self._timer.cancel()


class RecordingReader:
    """A request's ``rfile`` while its headers are read: keeps each raw line for the check."""

    def __init__(self, inner):
        self.inner = inner
        self.lines: list[bytes] = []

    def readline(self, limit: int = -1) -> bytes:
        line = self.inner.readline(limit)
        self.lines.append(line)
        return line

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


class Pace:
    """A floor on a body's average rate: once ``MIN_RATE_GRACE_S`` have passed, a body whose
    bytes received fall below ``MIN_TRANSFER_RATE`` a second since then is cut by its watchdog
    (408, the connection shut), looked at every ``RATE_CHECK_S`` from a thread of its own, so
    a sender that stops is cut as surely as a slow one."""

    def __init__(self, watchdog: Watchdog):
        self.watchdog = watchdog
        self.started = time.monotonic()
        self.received = 0
        self._done = threading.Event()
        threading.Thread(target=self._watch, daemon=True, name="serve-pace").start()

    def _watch(self) -> None:
        while not self._done.wait(RATE_CHECK_S):
            late = time.monotonic() - self.started - MIN_RATE_GRACE_S
            if late > 0 and self.received < MIN_TRANSFER_RATE * late:
                self.watchdog.fire()
                return

    def stop(self) -> None:
        self._done.set()


_BUSY_BODY = b'{"error": "too many connections", "status": 503}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY))
_CROWDED_BODY = b'{"error": "too many connections from this address", "status": 503}'
_CROWDED = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\nRetry-After: 5\r\n\r\n%s"
            % (len(_CROWDED_BODY), _CROWDED_BODY))


class CappedServer(ThreadingHTTPServer):
    """A threading server that serves at most ``MAX_CONNECTIONS`` connections at once."""

    daemon_threads = True
    # The kernel's queue of connections not yet accepted: socketserver's 5 would have clients
    # past it wait on SYN retries (1, 3, 7 s ...) for an answer, even a 503.
    request_queue_size = 256

    def __init__(self, address, handler, max_connections: int | None = None):
        self._slots = threading.BoundedSemaphore(max_connections or MAX_CONNECTIONS)
        self._per_client: dict[str, int] = {}
        self._counting = threading.Lock()
        super().__init__(address, handler)

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
                request.sendall(_CROWDED if crowded else _BUSY)
            super().shutdown_request(request)  # no drain: this is the accepting thread
            return
        super().process_request(request, client_address)

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


class StrictHandler(BaseHTTPRequestHandler):
    """http.server's handler held to the rules above; subclasses add ``do_*`` routes."""

    protocol_version = "HTTP/1.1"
    server_version = "doclake-serve"

    def setup(self) -> None:
        self.timeout = SOCKET_TIMEOUT_S  # the socket's: a stalled client is dropped
        super().setup()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base's name
        log.info("%s %s", self.address_string(), format % args)

    _watchdog: Watchdog | None = None

    def _send(self, status: int, body: dict | bytes, *, close: bool = False) -> None:
        if self._watchdog is not None and not self._watchdog.begin_answer():
            self.close_connection = True
            return  # the deadline passed: the watchdog has answered 408
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: HTTPStatus, message: str) -> None:
        # A refused upload's body is never read: close the connection instead.
        self._send(status, {"error": message, "status": status.value}, close=True)

    def handle_one_request(self) -> None:
        """Every request through here: a malformed one is a 4xx, a failure of ours a 500
        with a JSON body; neither sends a traceback. The request line and headers must be
        in within ``HEADERS_DEADLINE_S`` (an idle kept-alive connection too)."""
        self._begun = False  # set once the request line is in (parse_request)
        self._watchdog = Watchdog(self.connection, HEADERS_DEADLINE_S, lambda: self._begun)
        try:
            super().handle_one_request()
        except (TimeoutError, ConnectionError):
            self.close_connection = True
        finally:
            self._watchdog.cancel()
            if self._watchdog.fired:
                self.close_connection = True

    def _deadline(self, seconds: float) -> None:
        """A new deadline for the rest of this request (its body)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            if self._watchdog.fired:
                raise ConnectionError("the request's deadline passed")
        self._watchdog = Watchdog(self.connection, seconds)

    def parse_request(self) -> bool:
        """http.server's parsing, then RFC 9112's rules on the raw header lines (400)."""
        self._begun = True
        recording = RecordingReader(self.rfile)
        self.rfile = recording
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = recording.inner
        if not parsed:
            return False
        problem = header_problem(recording.lines)
        if problem is not None:
            self.send_error(HTTPStatus.BAD_REQUEST, problem)
            return False
        self._deadline(BODY_DEADLINE_S)
        return True

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """http.server's own refusals (400 for a bad request line, 414, 431, 501, 505) with
        a JSON body like every other refusal, and the connection closed."""
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1"):
            # An unreadable request line leaves http.server at HTTP/0.9, which would send
            # the body alone: the refusal is an HTTP/1.1 answer all the same.
            self.request_version = "HTTP/1.1"
        self._send(code, {"error": message or phrase, "status": int(code)}, close=True)
