"""``doclake aws smoke``: one document through a deployed stack's front door, timed.

What a caller does, nothing more: ask the function URL for a slot (a POST signed with SigV4 for
the ``lambda`` service: the URL's auth is IAM), PUT the file to the presigned URL (its signature
covers the size and ``If-None-Match: *``), then GET the presigned result URL until the result
JSON says a terminal status. Standard library HTTP (``urllib``) and botocore's signer only.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TERMINAL", "SmokeFailed", "SmokeResult", "smoke_pdf", "request_slot", "run_smoke"]

TERMINAL = ("succeeded", "failed", "not_applicable")


class SmokeFailed(RuntimeError):
    """The front door, the upload or the wait for the result went wrong (the message says
    which step and what came back)."""


@dataclass(frozen=True)
class SmokeResult:
    document_id: str
    status: str
    seconds: float
    result: dict


def smoke_pdf(text: str = "doclake smoke test: one page of text.") -> bytes:
    """A one-page PDF with a line of text (pypdfium2, PDFium's standard Helvetica): read from
    its text layer, so the check needs neither OCR nor a model key."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(612, 792)
    font = raw.FPDFText_LoadStandardFont(pdf, b"Helvetica")
    obj = raw.FPDFPageObj_CreateTextObj(pdf, font, 12.0)
    encoded = (text + "\0").encode("utf-16-le")
    raw.FPDFText_SetText(obj, ctypes.cast(ctypes.c_char_p(encoded),
                                          ctypes.POINTER(raw.FPDF_WCHAR)))
    raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 72, 720)
    raw.FPDFPage_InsertObject(page, obj)
    raw.FPDFPage_GenerateContent(page)
    import io

    buffer = io.BytesIO()
    pdf.save(buffer)
    return buffer.getvalue()


def _send(request: urllib.request.Request, what: str, timeout_s: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise SmokeFailed(f"{what}: {error}") from None


def request_slot(url: str, body: dict, session) -> dict:
    """POST ``body`` to the function URL, signed with the session's credentials."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    data = json.dumps(body).encode()
    signed = AWSRequest(method="POST", url=url, data=data,
                        headers={"Content-Type": "application/json"})
    credentials = session.get_credentials()
    if credentials is None:
        raise SmokeFailed("no AWS credentials to sign the front door's request")
    SigV4Auth(credentials.get_frozen_credentials(), "lambda", session.region_name).add_auth(
        signed)
    status, answer = _send(urllib.request.Request(url, data=data, method="POST",
                                                  headers=dict(signed.headers)),
                           "the front door", 30)
    if status != 201:
        raise SmokeFailed(f"the front door answered {status}: {answer[:300]!r}")
    return json.loads(answer)


def run_smoke(front_door: str, session, *, data: bytes, source_name: str,
              content_type: str, timeout_s: float = 300, poll_s: float = 2,
              clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep) -> SmokeResult:
    """One document from the front door to its result JSON; the time runs from the slot
    request to the first terminal result."""
    started = clock()
    slot = request_slot(front_door, {"source_name": source_name, "content_type": content_type,
                                     "method": "PUT", "size": len(data)}, session)
    upload = slot["upload"]
    status, answer = _send(urllib.request.Request(upload["url"], data=data, method="PUT",
                                                  headers=upload["headers"]), "the upload", 120)
    if status not in (200, 201, 204):
        raise SmokeFailed(f"the upload answered {status}: {answer[:300]!r}")
    while True:
        status, answer = _send(urllib.request.Request(slot["result_url"]), "the result", 30)
        if status == 200:
            result = json.loads(answer)
            if result.get("status") in TERMINAL:
                return SmokeResult(slot["document_id"], result["status"], clock() - started,
                                   result)
        elif status not in (403, 404):  # not there yet: S3 says 404 (or 403 without ListBucket)
            raise SmokeFailed(f"the result URL answered {status}: {answer[:300]!r}")
        if clock() - started > timeout_s:
            raise SmokeFailed(f"no result for document {slot['document_id']} after "
                              f"{timeout_s:.0f} s (check the alarms and the DLQs)")
        sleep(poll_s)
