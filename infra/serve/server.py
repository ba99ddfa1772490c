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

Hardened against a hostile client (issue 20): the ``Host`` must name this server (a
DNS-rebinding page in a browser cannot talk to it), a secret from ``DOCLAKE_SERVE_SECRET`` must
have at least ``MIN_SECRET_BYTES``, and an upload is streamed to a private temporary file and
hashed as it arrives, then stored with no lock held (a slot is claimed, not locked). Anything
unexpected is a 4xx or a 500 with a JSON body, never a traceback on the wire; the traceback
goes to the log.

This module is the app: ``ServeApp.handle`` takes a parsed ``protocol.Request`` and returns a
``protocol.Reply`` (or raises ``protocol.BadRequest``); it never sees a socket or a byte of
HTTP framing. The connection layer (``infra.serve.protocol``, on h11) parses and frames, holds
deadlines, rate floors and connection caps, and refuses ``Transfer-Encoding`` and malformed
requests before the app is called. ``X-Doclake-Source-Name`` is UTF-8 (raw, percent-encoded,
or RFC 5987 ``UTF-8''...``); a GET with a body is a 400, one answer, and the connection closed
(issue 45).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from http import HTTPStatus
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from extract import run_choices
from extract.result_json import publish_result
from infra.serve.protocol import BadRequest, CappedServer, Reply, Request
from infra.serve.signing import SignatureError, sign, verify
from infra.settings import Settings
from ingest.uploads import Slot, Upload, new_slot, plan_upload
from lake.layout import result_key

__all__ = ["log", "MIN_SECRET_BYTES", "MAX_REQUEST_JSON", "source_name_header", "source_name_for_header",
           "check_secret", "ServeApp", "serve_command"]

log = logging.getLogger(__name__)

MIN_SECRET_BYTES = 32
_UPLOAD_PATH = re.compile(r"^/uploads/([0-9a-f-]{36})/([0-9a-f-]{36})$")
_RESULT_PATH = re.compile(r"^/results/([0-9a-f-]{36})\.json$")
MAX_REQUEST_JSON = 64 * 1024
_EXT_VALUE = re.compile(r"(?i:utf-8)'[^']*'(.*)")
_LOCAL_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def source_name_header(value: str | None) -> str:
    """The document's name from ``X-Doclake-Source-Name``: UTF-8, sent as an RFC 5987 value
    (``UTF-8''r%C3%A9sum%C3%A9.pdf``), percent-encoded, or as raw UTF-8 bytes (which the
    connection layer hands over decoded as Latin-1). Raw bytes that are not UTF-8 are Latin-1."""
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


def check_secret(secret: bytes) -> bytes:
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f"DOCLAKE_SERVE_SECRET has {len(secret)} bytes; it needs at least "
                         f"{MIN_SECRET_BYTES} (e.g. `python -c 'import secrets; "
                         "print(secrets.token_hex(32))'`), or leave it unset for a random one")
    return secret


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
        self.httpd = CappedServer((host, port), self.handle)
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

    # --- the routes: a Request in, a Reply out (``BadRequest`` refuses) -----------------------

    def handle(self, request: Request) -> Reply:
        """Answer one request (the connection layer, ``protocol.Connection``, calls this)."""
        route = {"POST": self._post, "PUT": self._put, "GET": self._get}.get(request.method)
        if route is None:
            raise BadRequest(f"{request.method[:20]} is not served here",
                             HTTPStatus.NOT_IMPLEMENTED)
        if not self.host_allowed(request.headers.get("Host")):
            raise BadRequest("the Host header does not name this server",
                             HTTPStatus.MISDIRECTED_REQUEST)
        return route(request)

    def _post(self, request: Request) -> Reply:
        if urlsplit(request.target).path != "/uploads":
            raise BadRequest("POST /uploads is the only POST", HTTPStatus.NOT_FOUND)
        if (request.length or 0) > MAX_REQUEST_JSON:
            raise BadRequest("the request is too large", HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
        try:
            body = json.loads(b"".join(request.body()) or b"{}")
            if not isinstance(body, dict):
                raise ValueError
        except (ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
            raise BadRequest("the body must be a JSON object") from None
        name = Path(str(body.get("source_name") or "upload")).name[:255] or "upload"
        password = body.get("password")
        if password is not None and (not isinstance(password, str) or len(password) > 1024):
            raise BadRequest("password must be a string of at most 1024 characters")
        return Reply(HTTPStatus.CREATED, self.new_upload(name, password or None))

    def _put(self, request: Request) -> Reply:
        parts = urlsplit(request.target)
        match = _UPLOAD_PATH.match(parts.path)
        if not match:
            raise BadRequest("not an upload URL", HTTPStatus.NOT_FOUND)
        slot = Slot(match.group(1), match.group(2))
        try:
            grant = verify(self.secret, slot.object_key, parts.query, now=time.time())
        except SignatureError as error:  # ExpiredError too
            raise BadRequest(str(error), HTTPStatus.FORBIDDEN) from None
        size = request.length
        if size is None:
            raise BadRequest("send a Content-Length", HTTPStatus.LENGTH_REQUIRED)
        if size > grant.max_bytes:
            raise BadRequest(f"{size} bytes, over this slot's limit of {grant.max_bytes}",
                             HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
        if size == 0:
            raise BadRequest("the body is empty")
        name = Path(source_name_header(request.headers.get("X-Doclake-Source-Name"))).name[:255]
        if not self.claim(slot):
            raise BadRequest("this slot has its upload already; ask for a new one",
                             HTTPStatus.CONFLICT)
        handed_over = False  # to accept(), which releases the claim itself
        try:
            with tempfile.NamedTemporaryFile(dir=self.settings.home, prefix=".upload-") as tmp:
                digest = hashlib.sha256()
                for chunk in request.body():
                    tmp.write(chunk)
                    digest.update(chunk)
                tmp.flush()
                handed_over = True
                self.accept(slot, Path(tmp.name), name or "upload", size, digest.hexdigest())
        finally:
            if not handed_over:
                with self.lock:
                    self.claimed.discard(slot.job_id)
        return Reply(HTTPStatus.CREATED, {"document_id": slot.document_id,
                                          "result_url": f"{self.base_url}/{slot.result_key}"})

    def _get(self, request: Request) -> Reply:
        if request.length:
            # h11 frames the body, so it could be read and passed over; it is refused instead,
            # as a proxy in front may not frame it so (one answer, and the connection closed).
            raise BadRequest("a GET carries no body")
        match = _RESULT_PATH.match(urlsplit(request.target).path)
        if not match:
            raise BadRequest("GET /results/<document_id>.json", HTTPStatus.NOT_FOUND)
        body = self.result(match.group(1))
        if body is None:
            return Reply(HTTPStatus.NOT_FOUND, {"error": "no result yet",
                                                "document_id": match.group(1), "status": 404})
        return Reply(HTTPStatus.OK, body)

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
