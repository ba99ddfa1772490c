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
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import tempfile
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

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


class ServeApp:
    """The server, its stores and the background runtime; ``start``/``stop`` for tests."""

    def __init__(self, settings: Settings, *, host: str = "127.0.0.1", port: int = 0,
                 expiry_s: int = 300, max_bytes: int | None = None,
                 secret: bytes | None = None, run_workers: bool = True):
        from infra.local.jobstore import SqliteJobStore
        from infra.local.objectstore import FolderObjectStore
        from infra.local.queue import SqliteQueue
        from lake.writer import ParquetEventWriter

        self.settings = settings
        self.expiry_s = expiry_s
        self.max_bytes = max_bytes or settings.max_file_bytes
        self.secret = secret or os.urandom(32)
        home = settings.home
        home.mkdir(parents=True, exist_ok=True)
        self.objects = FolderObjectStore(home / "objects")
        self.store = SqliteJobStore(home / "jobs.db")
        self.queue = SqliteQueue(home / "queue.db", max_receives=settings.max_receives)
        self.writer = ParquetEventWriter.for_uri(settings.lake)
        self.lock = threading.Lock()  # the HTTP side's stores: one writer at a time
        self.pending: set[str] = set()  # job ids planned here, result not yet published
        # job id -> (password, expiry): a slot's password until its upload arrives or it expires
        self._passwords: dict[str, tuple[str, float]] = {}
        self.run_workers = run_workers
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self.httpd.daemon_threads = True

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
                           "headers": {"X-Doclake-Source-Name": source_name}},
                "result_url": f"{self.base_url}/{slot.result_key}"}

    def slot_used(self, slot: Slot) -> bool:
        return (self.objects.head(slot.object_key) is not None
                or self.store.get_job(slot.job_id) is not None)

    def accept(self, slot: Slot, path: Path, source_name: str, size: int) -> None:
        """Store the bytes at the slot's key and plan the job; the caller holds ``lock``."""
        import hashlib

        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        self.objects.put_file(slot.object_key, path)
        plan_upload(self.store, self.queue, self.writer.write, Upload(
            slot=slot, source_name=source_name, source_key=f"serve:{slot.object_key}",
            fingerprint=digest, bytes=size), worker="serve",
            password=self._passwords.pop(slot.job_id, (None, 0))[0],
            run_choices=run_choices.record(self.settings.extract_config()))
        self.pending.add(slot.job_id)

    def result(self, document_id: str) -> bytes | None:
        try:
            return self.objects.get(result_key(document_id))
        except KeyError:
            return None

    # --- background work -----------------------------------------------------------------------

    def _work(self) -> None:
        from infra.local.runtime import LocalRuntime

        runtime = LocalRuntime(self.settings)
        runtime.recover()
        try:
            asyncio.run(runtime.process(self._stop.is_set))
        except Exception:  # the server keeps answering; the failure is in the log
            log.exception("the background runtime stopped")

    def _publish_loop(self) -> None:
        while not self._stop.wait(min(self.settings.poll_interval_s, 0.5)):
            try:
                self.publish_pending()
            except Exception:
                log.exception("publishing results failed; retrying")

    def publish_pending(self) -> int:
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

        def _send(self, status: int, body: dict | bytes, *, close: bool = False) -> None:
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

        def do_POST(self) -> None:  # noqa: N802 - http.server's spelling
            if urlsplit(self.path).path != "/uploads":
                return self._error(HTTPStatus.NOT_FOUND, "POST /uploads is the only POST")
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_REQUEST_JSON:
                return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "the request is too large")
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(request, dict):
                    raise ValueError
            except ValueError:
                return self._error(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
            name = Path(str(request.get("source_name") or "upload")).name[:255] or "upload"
            password = request.get("password")
            if password is not None and (not isinstance(password, str) or len(password) > 1024):
                return self._error(HTTPStatus.BAD_REQUEST,
                                   "password must be a string of at most 1024 characters")
            self._send(HTTPStatus.CREATED, app.new_upload(name, password or None))

        def do_PUT(self) -> None:  # noqa: N802
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
            if self.headers.get("Content-Length") is None:
                return self._error(HTTPStatus.LENGTH_REQUIRED, "send a Content-Length")
            size = int(self.headers["Content-Length"])
            if size > grant.max_bytes:
                return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                   f"{size} bytes, over this slot's limit of {grant.max_bytes}")
            if size == 0:
                return self._error(HTTPStatus.BAD_REQUEST, "the body is empty")
            name = Path(self.headers.get("X-Doclake-Source-Name") or "upload").name[:255]
            with tempfile.NamedTemporaryFile(dir=app.settings.home, prefix=".upload-") as tmp:
                remaining = size
                while remaining:
                    chunk = self.rfile.read(min(_CHUNK, remaining))
                    if not chunk:
                        return self._error(HTTPStatus.BAD_REQUEST, "the body ended early")
                    tmp.write(chunk)
                    remaining -= len(chunk)
                tmp.flush()
                with app.lock:
                    if app.slot_used(slot):
                        return self._error(HTTPStatus.CONFLICT,
                                           "this slot has its upload already; ask for a new one")
                    app.accept(slot, Path(tmp.name), name or "upload", size)
            self._send(HTTPStatus.CREATED, {"document_id": slot.document_id,
                                            "result_url": f"{app.base_url}/{slot.result_key}"})

        def do_GET(self) -> None:  # noqa: N802
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
                  max_bytes: int | None, echo) -> None:
    """Run until interrupted (the ``doclake serve`` command's body)."""
    secret = os.environ.get("DOCLAKE_SERVE_SECRET", "").encode() or None
    app = ServeApp(settings, host=host, port=port, expiry_s=expiry_s, max_bytes=max_bytes,
                   secret=secret).start()
    echo(f"doclake serve on {app.base_url} (POST /uploads); Ctrl-C stops")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        app.stop()
