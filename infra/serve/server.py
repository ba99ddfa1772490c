"""``doclake serve``: the front door on one machine, the local twin of the presigner Lambda.

- ``POST /uploads`` (JSON body, optional ``source_name`` and ``password``, the document's own
  password, held in memory until the upload arrives, then kept with the job in the job store
  until it ends, never echoed or logged): 201 with a document id, an upload URL
  for one key (``PUT /uploads/<document>/<job>?expires&max_bytes&signature``, HMAC-signed with
  the server's secret) and the result address.
- ``PUT`` on that URL: the body is stored at the slot's key and the job is planned
  (``ingest.uploads.plan_upload``, as the S3 event does on AWS); 201.
- ``GET /results/<document>.json``: the result JSON once published, 404 before.

Refusals are 4xx with a JSON ``error`` and store nothing: 403 for a wrong or expired signature,
409 for a second upload to a used slot, 411 without a Content-Length, 413 over the slot's
limit (decided from the header, before a byte is read; a body longer than announced is never
read past it). The embedded runtime works the jobs in a background thread, as ``doclake worker``
would, and a small loop publishes each finished job's result (``extract.result_json``).
Binds 127.0.0.1 unless told otherwise: this is a development door, with no TLS and no accounts.

Hardened against a hostile client (issue 20): a length is digits only (``-1`` or ``abc`` is a
400), a request with ``Transfer-Encoding`` is refused (chunked bodies are not taken, and a
request carrying both framings could be read two ways behind a proxy), the ``Host`` must name
this server (a DNS-rebinding page in a browser cannot talk to it), each connection has a socket
timeout and at most ``MAX_CONNECTIONS`` are served at once (503 beyond), a secret from
``DOCLAKE_SERVE_SECRET`` must have at least ``MIN_SECRET_BYTES``, and an upload is streamed to
a private temporary file and hashed as it arrives, then stored with no lock held (a slot is
claimed, not locked). Anything unexpected is a 4xx or a 500 with a JSON body, never a traceback
on the wire; the traceback goes to the log.

Strict where RFC 9112 says reject: whitespace before a header's colon, an obs-folded line and a
line without a colon are 400 (``header_problem``); http.server's own refusals (400, 414, 431,
501, 505) answer JSON too; the request line and headers must be in within
``HEADERS_DEADLINE_S`` and a body within ``BODY_DEADLINE_S`` plus its length at
``BODY_MIN_RATE`` (408, then closed: a deadline for the whole request, not a timeout per read);
``X-Doclake-Source-Name`` is UTF-8 (raw, percent-encoded, or RFC 5987 ``UTF-8''...``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from extract import run_choices
from extract.result_json import publish_result
from infra.serve.signing import ExpiredError, SignatureError, sign, verify
from infra.settings import Settings
from ingest.uploads import Slot, Upload, new_slot, plan_upload
from lake.layout import result_key

log = logging.getLogger(__name__)

_UPLOAD_PATH = re.compile(r"^/uploads/([0-9a-f-]{36})/([0-9a-f-]{36})$")
_RESULT_PATH = re.compile(r"^/results/([0-9a-f-]{36})\.json$")
_CHUNK = 1024 * 1024
MAX_REQUEST_JSON = 64 * 1024
MAX_CONNECTIONS = 64  # served at once; more wait in the kernel's backlog no longer than a 503
SOCKET_TIMEOUT_S = 30.0  # a client that stops sending mid-request is dropped after this
# A refused request's body is never read; before closing, what the client is still sending is
# read and thrown away for at most this long and this much (a "lingering close", as Apache and
# nginx do), so the kernel does not answer it with a reset that loses the 4xx already sent.
LINGER_S = 2.0
LINGER_BYTES = 4 * 1024 * 1024
MIN_SECRET_BYTES = 32
# Deadlines for a whole request, not for each read: a client sending a header line every few
# seconds would otherwise hold its connection (and, 64 of them, the server) for ever.
HEADERS_DEADLINE_S = 20.0  # the request line and every header
BODY_DEADLINE_S = 30.0  # a body, plus the time its length takes at BODY_MIN_RATE
BODY_MIN_RATE = 256 * 1024  # bytes per second
_DIGITS = re.compile(r"[0-9]{1,19}")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_EXT_VALUE = re.compile(r"(?i:utf-8)'[^']*'(.*)")
_LOCAL_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


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


def source_name_header(value: str | None) -> str:
    """The document's name from ``X-Doclake-Source-Name``: UTF-8, sent as an RFC 5987 value
    (``UTF-8''r%C3%A9sum%C3%A9.pdf``), percent-encoded, or as raw UTF-8 bytes (which
    ``http.server`` hands over decoded as Latin-1). Raw bytes that are not UTF-8 are Latin-1."""
    if not value:
        return "upload"
    extended = _EXT_VALUE.fullmatch(value)
    try:
        if extended:
            return unquote(extended.group(1), errors="strict")
        if "%" in value:
            return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("X-Doclake-Source-Name is not UTF-8 once percent-decoded") from None
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def source_name_for_header(name: str) -> str:
    """The header value a client should send for ``name``: as it is when plain ASCII, else an
    RFC 5987 value."""
    if name.isascii() and "%" not in name and name.isprintable():
        return name
    return "UTF-8''" + quote(name, safe="")


class _Watchdog:
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
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
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


class _RecordingReader:
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


def check_secret(secret: bytes) -> bytes:
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f"DOCLAKE_SERVE_SECRET has {len(secret)} bytes; it needs at least "
                         f"{MIN_SECRET_BYTES} (e.g. `python -c 'import secrets; "
                         "print(secrets.token_hex(32))'`), or leave it unset for a random one")
    return secret


_BUSY_BODY = b'{"error": "too many connections", "status": 503}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY))


class _Server(ThreadingHTTPServer):
    """A threading server that serves at most ``MAX_CONNECTIONS`` connections at once."""

    daemon_threads = True

    def __init__(self, address, handler, max_connections: int | None = None):
        self._slots = threading.BoundedSemaphore(max_connections or MAX_CONNECTIONS)
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(_BUSY)
            super().shutdown_request(request)  # no drain: this is the accepting thread
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

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


class ServeApp:
    """The server, its stores and the background runtime; ``start``/``stop`` for tests."""

    def __init__(self, settings: Settings, *, host: str = "127.0.0.1", port: int = 0,
                 expiry_s: int = 300, max_bytes: int | None = None,
                 secret: bytes | None = None, run_workers: bool = True,
                 fields: tuple[str, str] | None = None):
        """``fields`` (schema, strategy): every upload's fields are extracted, as ``doclake run
        --fields`` does and the AWS stack's ``fields_schema`` setting; None: text only."""
        from infra.local.jobstore import SqliteJobStore
        from infra.local.objectstore import FolderObjectStore
        from infra.local.queue import SqliteQueue
        from lake.writer import ParquetEventWriter

        self.settings = settings
        self.expiry_s = expiry_s
        self.max_bytes = max_bytes or settings.max_file_bytes
        self.secret = check_secret(secret) if secret is not None else os.urandom(32)
        from infra.local.private_home import make_private

        home = make_private(settings.home)
        self.objects = FolderObjectStore(home / "objects")
        self.store = SqliteJobStore(home / "jobs.db")
        self.queue = SqliteQueue(home / "queue.db", max_receives=settings.max_receives)
        self.writer = ParquetEventWriter.for_uri(settings.lake)
        self.store.erase_passwords()  # an earlier process's, left by a crash
        self.lock = threading.Lock()  # the HTTP side's stores: one writer at a time
        self.pending: set[str] = set()  # job ids planned here, result not yet published
        self.claimed: set[str] = set()  # slots whose upload is being stored right now
        # job id -> (password, expiry): a slot's password until its upload arrives or it expires
        self._passwords: dict[str, tuple[str, float]] = {}
        self.run_workers = run_workers
        self.fields = fields
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.httpd = _Server((host, port), _handler_for(self))
        bound = self.httpd.server_address[0]
        self.host_names = set(_LOCAL_NAMES) | {host, str(bound)}
        self.any_address = bound in ("0.0.0.0", "::")  # then an IP literal Host is accepted too

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    # --- the front door ------------------------------------------------------------------------

    def new_upload(self, source_name: str, password: str | None = None) -> dict:
        slot = new_slot()
        expires = int(time.time()) + self.expiry_s
        if password:
            with self.lock:
                now = time.time()
                for job_id in [j for j, (_, until) in self._passwords.items() if until < now]:
                    del self._passwords[job_id]  # slots expired unused
                self._passwords[slot.job_id] = (password, expires + 1)
        query = sign(self.secret, slot.object_key, expires=expires, max_bytes=self.max_bytes)
        return {"document_id": slot.document_id, "expires_in": self.expiry_s,
                "max_bytes": self.max_bytes,
                "upload": {"method": "PUT", "url": f"{self.base_url}/{slot.object_key}?{query}",
                           "headers": {"X-Doclake-Source-Name":
                                       source_name_for_header(source_name)}},
                "result_url": f"{self.base_url}/{slot.result_key}"}

    def slot_used(self, slot: Slot) -> bool:
        return (self.objects.head(slot.object_key) is not None
                or self.store.get_job(slot.job_id) is not None)

    def claim(self, slot: Slot) -> bool:
        """Take the slot for one upload (False: it has one, or one is arriving)."""
        with self.lock:
            if slot.job_id in self.claimed or self.slot_used(slot):
                return False
            self.claimed.add(slot.job_id)
            return True

    def accept(self, slot: Slot, path: Path, source_name: str, size: int, digest: str) -> None:
        """Store the bytes at the claimed slot's key (no lock held: a large copy does not stop
        other clients), then plan the job under the lock."""
        try:
            self.objects.put_file(slot.object_key, path)
            with self.lock:
                planned = plan_upload(
                    self.store, self.queue, self.writer.write, Upload(
                        slot=slot, source_name=source_name,
                        source_key=f"serve:{slot.object_key}", fingerprint=digest, bytes=size),
                    worker="serve", password=self._passwords.pop(slot.job_id, (None, 0))[0],
                    run_choices=run_choices.record(self.settings.extract_config()))
                if planned and self.fields is not None:  # the fields handler publishes then
                    self.store.request_fields([slot.job_id], *self.fields)
                self.pending.add(slot.job_id)
        finally:
            with self.lock:
                self.claimed.discard(slot.job_id)

    def host_allowed(self, host_header: str | None) -> bool:
        """The Host names this server: a name it was bound as, or a loopback name (a page whose
        DNS name was rebound to 127.0.0.1 sends its own name and is refused)."""
        if not host_header:
            return False
        name = urlsplit(f"//{host_header}").hostname
        if name is None:
            return False
        if name in self.host_names:
            return True
        if self.any_address:
            import ipaddress

            try:
                ipaddress.ip_address(name)
                return True
            except ValueError:
                return False
        return False

    def result(self, document_id: str) -> bytes | None:
        try:
            return self.objects.get(result_key(document_id))
        except KeyError:
            return None

    # --- background work -----------------------------------------------------------------------

    def _work(self) -> None:
        from infra.local.runtime import LocalRuntime

        runtime = LocalRuntime(self.settings)
        runtime.recover(erase_passwords=False)  # erased in __init__, before uploads came in
        try:
            asyncio.run(runtime.process(self._stop.is_set))
        except Exception:  # the server keeps answering; the failure is in the log
            log.exception("the background runtime stopped")

    def _publish_loop(self) -> None:
        while not self._stop.wait(min(self.settings.poll_interval_s, 0.5)):
            try:
                self.publish_ended_uploads()
            except Exception:
                log.exception("publishing results failed; retrying")

    def publish_ended_uploads(self) -> int:
        """Publish the results of the jobs planned here that have ended. Jobs that asked for
        fields are left to the fields publisher."""
        published = 0
        with self.lock:
            for job in self.store.list_jobs(sorted(self.pending)):
                if not job.status.terminal:
                    continue
                if getattr(job, "fields_strategy", None) is None:
                    document = self.store.get_document(job.document_id)
                    published += publish_result(self.objects, job.model_dump(),
                                                document.latest_job_id if document else None)
                self.pending.discard(job.job_id)
        return published

    def start(self) -> ServeApp:
        targets = [self.httpd.serve_forever, self._publish_loop]
        if self.run_workers:
            targets.append(self._work)
        for target in targets:
            thread = threading.Thread(target=target, daemon=True, name=f"serve-{target.__name__}")
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=30)


def _handler_for(app: ServeApp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "doclake-serve"

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base's name
            log.info("%s %s", self.address_string(), format % args)

        _watchdog: _Watchdog | None = None

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

        timeout = SOCKET_TIMEOUT_S  # the socket's: a stalled client is dropped, not waited on

        def handle_one_request(self) -> None:
            """Every request through here: a malformed one is a 4xx, a failure of ours a 500
            with a JSON body; neither sends a traceback. The request line and headers must be
            in within ``HEADERS_DEADLINE_S`` (an idle kept-alive connection too)."""
            self._begun = False  # set once the request line is in (parse_request)
            self._watchdog = _Watchdog(self.connection, HEADERS_DEADLINE_S, lambda: self._begun)
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
            self._watchdog = _Watchdog(self.connection, seconds)

        def parse_request(self) -> bool:
            """http.server's parsing, then RFC 9112's rules on the raw header lines (400)."""
            self._begun = True
            recording = _RecordingReader(self.rfile)
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

        def _guarded(self, method) -> None:
            try:
                if not app.host_allowed(self.headers.get("Host")):
                    raise BadRequest("the Host header does not name this server",
                                     HTTPStatus.MISDIRECTED_REQUEST)
                method()
            except BadRequest as error:
                self._error(error.status, str(error))
            except (TimeoutError, ConnectionError):
                self.close_connection = True
            except Exception:
                log.exception("%s %s failed", self.command, self.path[:200])
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "the server failed; see its log")

        def do_POST(self) -> None:  # noqa: N802 - http.server's spelling
            self._guarded(self._post)

        def do_PUT(self) -> None:  # noqa: N802
            self._guarded(self._put)

        def do_GET(self) -> None:  # noqa: N802
            self._guarded(self._get)

        def _post(self) -> None:
            if urlsplit(self.path).path != "/uploads":
                return self._error(HTTPStatus.NOT_FOUND, "POST /uploads is the only POST")
            length = content_length(self.headers, required=False)
            if length > MAX_REQUEST_JSON:
                return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "the request is too large")
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(request, dict):
                    raise ValueError
            except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
                return self._error(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
            name = Path(str(request.get("source_name") or "upload")).name[:255] or "upload"
            password = request.get("password")
            if password is not None and (not isinstance(password, str) or len(password) > 1024):
                return self._error(HTTPStatus.BAD_REQUEST,
                                   "password must be a string of at most 1024 characters")
            self._send(HTTPStatus.CREATED, app.new_upload(name, password or None))

        def _put(self) -> None:
            parts = urlsplit(self.path)
            match = _UPLOAD_PATH.match(parts.path)
            if not match:
                return self._error(HTTPStatus.NOT_FOUND, "not an upload URL")
            slot = Slot(match.group(1), match.group(2))
            try:
                grant = verify(app.secret, slot.object_key, parts.query, now=time.time())
            except ExpiredError as error:
                return self._error(HTTPStatus.FORBIDDEN, str(error))
            except SignatureError as error:
                return self._error(HTTPStatus.FORBIDDEN, str(error))
            size = content_length(self.headers, required=True)
            if size > grant.max_bytes:
                return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                   f"{size} bytes, over this slot's limit of {grant.max_bytes}")
            if size == 0:
                return self._error(HTTPStatus.BAD_REQUEST, "the body is empty")
            name = Path(source_name_header(self.headers.get("X-Doclake-Source-Name"))).name[:255]
            self._deadline(BODY_DEADLINE_S + size / BODY_MIN_RATE)
            if not app.claim(slot):
                return self._error(HTTPStatus.CONFLICT,
                                   "this slot has its upload already; ask for a new one")
            handed_over = False  # to accept(), which releases the claim itself
            try:
                with tempfile.NamedTemporaryFile(dir=app.settings.home, prefix=".upload-") as tmp:
                    digest = hashlib.sha256()
                    remaining = size
                    while remaining:
                        chunk = self.rfile.read(min(_CHUNK, remaining))
                        if not chunk:
                            return self._error(HTTPStatus.BAD_REQUEST, "the body ended early")
                        tmp.write(chunk)
                        digest.update(chunk)
                        remaining -= len(chunk)
                    tmp.flush()
                    handed_over = True
                    app.accept(slot, Path(tmp.name), name or "upload", size, digest.hexdigest())
            finally:
                if not handed_over:
                    with app.lock:
                        app.claimed.discard(slot.job_id)
            self._send(HTTPStatus.CREATED, {"document_id": slot.document_id,
                                            "result_url": f"{app.base_url}/{slot.result_key}"})

        def _get(self) -> None:
            match = _RESULT_PATH.match(urlsplit(self.path).path)
            if not match:
                return self._error(HTTPStatus.NOT_FOUND, "GET /results/<document_id>.json")
            body = app.result(match.group(1))
            if body is None:
                return self._send(HTTPStatus.NOT_FOUND, {
                    "error": "no result yet", "document_id": match.group(1), "status": 404})
            self._send(HTTPStatus.OK, body)

    return Handler


def serve_command(host: str, port: int, settings: Settings, *, expiry_s: int,
                  max_bytes: int | None, echo, fields: tuple[str, str] | None = None) -> None:
    """Run until interrupted (the ``doclake serve`` command's body)."""
    secret = os.environ.get("DOCLAKE_SERVE_SECRET", "").encode() or None
    if secret is not None:
        check_secret(secret)
    app = ServeApp(settings, host=host, port=port, expiry_s=expiry_s, max_bytes=max_bytes,
                   secret=secret, fields=fields).start()
    extracting = f", fields {fields[0]} by {fields[1]}" if fields else ""
    echo(f"doclake serve on {app.base_url} (POST /uploads{extracting}); Ctrl-C stops")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        app.stop()
