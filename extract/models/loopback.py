"""A small HTTP/1.1 server on 127.0.0.1, in its own thread and event loop, for fake model APIs.

The simulated provider and the tests' fake Gemini both need a real socket that google-genai can
talk to (so the SDK's request building, its HTTP client, timeouts and error mapping all run for
real), but neither needs a web framework. h11 (the sans-IO HTTP/1.1 library under httpcore)
does the protocol; this module only moves bytes and calls ``handler(method, path, body)``.

Its own thread and loop keep the fake's latency sleeps and JSON work off the caller's loop, and
the thread dies with the process: a SIGKILLed runtime leaves no orphan server behind.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import h11

__all__ = ["Handler", "LoopbackServer", "Reply"]

# (status, JSON body, extra headers)
Reply = tuple[int, Any, dict[str, str]]
Handler = Callable[[str, str, bytes], Awaitable[Reply]]


class LoopbackServer:
    """``start()`` binds 127.0.0.1 on a free port and returns the base URL; ``stop()`` ends it."""

    def __init__(self, handler: Handler, *, host: str = "127.0.0.1", port: int = 0,
                 with_headers: bool = False):
        self.handler = handler
        self.with_headers = with_headers
        """Call ``handler`` with a fourth argument: the request's headers (lower-case names)."""
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> str:
        self._thread = threading.Thread(target=self._run, name="loopback-http", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self.base_url

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)  # this thread's loop, for gather() at shutdown
        self._loop = loop
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._serve, self.host, self.port, backlog=4096))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as error:  # reported to start()
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await _read_request(connection, reader)
                if request is None:
                    return
                try:
                    extra = ({k.decode().lower(): v.decode() for k, v in request.headers},
                             ) if self.with_headers else ()
                    status, payload, headers = await self.handler(
                        request.method.decode(), request.target.decode(), body, *extra)
                except Exception as error:  # a bug in a fake answers 500, like a real server
                    status, payload, headers = 500, {"error": {"code": 500, "message": repr(error),
                                                               "status": "INTERNAL"}}, {}
                data = json.dumps(payload).encode()
                head = [("content-type", "application/json; charset=UTF-8"),
                        ("content-length", str(len(data))),
                        *headers.items()]
                writer.write(connection.send(h11.Response(status_code=status, headers=head)))
                writer.write(connection.send(h11.Data(data=data)))
                writer.write(connection.send(h11.EndOfMessage()))
                await writer.drain()
                if connection.our_state is h11.MUST_CLOSE:
                    return
                connection.start_next_cycle()
        except (ConnectionError, h11.RemoteProtocolError, asyncio.IncompleteReadError,
                asyncio.CancelledError):  # a client that went away, or the server stopping
            return
        finally:
            writer.close()


async def _read_request(connection: h11.Connection,
                        reader: asyncio.StreamReader) -> tuple[h11.Request | None, bytes]:
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            data = await reader.read(65536)
            connection.receive_data(data)
            if not data and request is None:
                return None, b""
            continue
        if isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return request, bytes(body)
        elif isinstance(event, h11.ConnectionClosed):
            return None, b""
