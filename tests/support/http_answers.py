"""Reading a server's raw HTTP answer off a socket, for the tests that speak HTTP byte by byte
(malformed requests that an HTTP client library would refuse to send)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable


def answer_of(conn: socket.socket) -> tuple[int | None, dict, bytes]:
    """Status, JSON body and raw head of the first answer on ``conn`` (None: closed unanswered)."""
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
        if b"\r\n\r\n" in answer:
            head, _, rest = answer.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            if len(rest) >= length:
                break
    if not answer:
        return None, {}, b""
    head, _, rest = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(rest or b"{}"), head


def status_once_a_slot_is_back(ask: Callable[[], int | None], within_s: float = 5.0) -> int | None:
    """``ask()``'s status once it is not 503, or its last one after ``within_s``. The server
    gives a closed connection's slot back when its thread sees the close, a moment after the
    client closed: a request in between is told 503, and one a moment later is served."""
    deadline = time.monotonic() + within_s
    while (status := ask()) == 503 and time.monotonic() < deadline:
        time.sleep(0.05)
    return status
