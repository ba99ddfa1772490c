"""Upload URLs for ``doclake serve``: HMAC-signed, expiring, for one key, with a size limit.

The local twin of a presigned S3 URL. The signature covers the method, the slot's key, the
expiry and the size limit, so none of them can be changed without the secret; it is compared
in constant time. Pure: no I/O, no clock of its own (``now`` is passed), tested without a server.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode

__all__ = ["SignatureError", "ExpiredError", "UploadGrant", "sign", "verify"]


class SignatureError(Exception):
    """The URL was not signed by this server, or was altered (HTTP 403)."""


class ExpiredError(SignatureError):
    """The URL was signed here but its time is over (HTTP 403, said so)."""


@dataclass(frozen=True)
class UploadGrant:
    key: str
    expires: int
    max_bytes: int


def _signature(secret: bytes, key: str, expires: int, max_bytes: int) -> str:
    message = f"PUT\n{key}\n{expires}\n{max_bytes}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def sign(secret: bytes, key: str, *, expires: int, max_bytes: int) -> str:
    """The query string of an upload URL for ``key``."""
    return urlencode({"expires": expires, "max_bytes": max_bytes,
                      "signature": _signature(secret, key, expires, max_bytes)})


def verify(secret: bytes, key: str, query: str, *, now: float) -> UploadGrant:
    """The grant a signed query gives for ``key``; raises ``SignatureError``/``ExpiredError``."""
    fields = parse_qs(query)
    try:
        expires = int(fields["expires"][0])
        max_bytes = int(fields["max_bytes"][0])
        given = fields["signature"][0]
    except (KeyError, IndexError, ValueError):
        raise SignatureError("the upload URL has no valid signature") from None
    # bytes, not str: compare_digest refuses a str with non-ASCII characters (a TypeError)
    expected = _signature(secret, key, expires, max_bytes).encode()
    if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected):
        raise SignatureError("the upload URL's signature does not match")
    if now > expires:
        raise ExpiredError("the upload URL has expired; ask POST /uploads for a new one")
    return UploadGrant(key=key, expires=expires, max_bytes=max_bytes)
