"""The front door on AWS: mint a document id and a presigned upload for one key.

Thin: the standard library, boto3 (in the Lambda runtime) and ``lake.layout``; no pydantic, no
pyarrow, so it cold-starts in well under a second. The caller gets a UUIDv7 document id, a
presigned POST (a policy with a content-length range and the content type) or, with
``"method": "PUT"`` and the file's ``"size"``, a presigned PUT for the same single key whose
signature covers that exact ``Content-Length`` and ``If-None-Match: *`` (S3 refuses another size
and any second upload to the key, so bytes being processed are never overwritten), the expiry
(a setting, at most 15 minutes), and the result address. The bytes go straight to S3; the S3
event does the rest. S3 has no conditional POST, so a POST form can be sent again until it
expires: the ingest function claims the slot for the first version it sees and refuses the
others (``infra.aws.lambdas.ingest``), so either slot takes one document.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid

from lake.layout import result_key, upload_key

__all__ = ["MAX_EXPIRY_S", "DEFAULT_CONTENT_TYPE", "uuid7", "settings", "BadRequest", "mint_slot",
           "handler"]

MAX_EXPIRY_S = 900
DEFAULT_CONTENT_TYPE = "application/octet-stream"
_client = None


def uuid7() -> str:
    """RFC 9562 UUIDv7: 48 bits of Unix milliseconds, then random bits (the lake's ``dt``)."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    return str(uuid.UUID(int=value))


def _s3():
    """Signature version 4: its presigned PUT signs the ``Content-Length`` and ``If-None-Match``
    headers, so S3 refuses another size and a second upload to the same key."""
    global _client
    if _client is None:
        import boto3
        from botocore.config import Config

        _client = boto3.client("s3", config=Config(signature_version="s3v4"))
    return _client


def settings(environ=os.environ) -> dict:
    expiry = int(environ.get("DOCLAKE_UPLOAD_EXPIRY_S", "300"))
    if not 1 <= expiry <= MAX_EXPIRY_S:
        raise ValueError(f"DOCLAKE_UPLOAD_EXPIRY_S must be 1..{MAX_EXPIRY_S}, got {expiry}")
    return {"uploads_bucket": environ["DOCLAKE_UPLOADS_BUCKET"],
            "results_bucket": environ["DOCLAKE_RESULTS_BUCKET"],
            "expiry_s": expiry,
            "max_bytes": int(environ.get("DOCLAKE_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024))),
            "result_url_expiry_s": int(environ.get("DOCLAKE_RESULT_URL_EXPIRY_S", "3600"))}


class BadRequest(ValueError):
    """The request cannot be served (a 400)."""


def _size(value, max_bytes: int) -> int:
    """A PUT slot's exact size: signed into the URL (S3 refuses another), at most the limit."""
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise BadRequest("a PUT slot needs \"size\": the file's size in bytes") from None
    if not 1 <= size <= max_bytes:
        raise BadRequest(f"size must be 1..{max_bytes} bytes, got {size}")
    return size


def mint_slot(request: dict, s3, config: dict) -> dict:
    """The slot for one upload request (``source_name``, ``content_type``, ``method``)."""
    document_id, job_id = uuid7(), uuid7()
    key = upload_key(document_id, job_id)
    name = str(request.get("source_name") or "upload")[:255]
    content_type = str(request.get("content_type") or DEFAULT_CONTENT_TYPE)
    safe_name = name.encode("ascii", "replace").decode()  # S3 user metadata is ASCII
    answer = {"document_id": document_id, "expires_in": config["expiry_s"],
              "max_bytes": config["max_bytes"],
              "result_uri": f"s3://{config['results_bucket']}/{result_key(document_id)}",
              "result_url": s3.generate_presigned_url(
                  "get_object", ExpiresIn=config["result_url_expiry_s"],
                  Params={"Bucket": config["results_bucket"], "Key": result_key(document_id)})}
    if str(request.get("method", "POST")).upper() == "PUT":
        size = _size(request.get("size"), config["max_bytes"])
        headers = {"Content-Type": content_type, "x-amz-meta-source-name": safe_name,
                   "Content-Length": str(size), "If-None-Match": "*"}
        answer["upload"] = {"method": "PUT", "headers": headers,
            "url": s3.generate_presigned_url("put_object", ExpiresIn=config["expiry_s"], Params={
                "Bucket": config["uploads_bucket"], "Key": key, "ContentType": content_type,
                "Metadata": {"source-name": safe_name}, "ContentLength": size,
                "IfNoneMatch": "*"})}
        return answer
    post = s3.generate_presigned_post(
        Bucket=config["uploads_bucket"], Key=key, ExpiresIn=config["expiry_s"],
        Fields={"Content-Type": content_type, "x-amz-meta-source-name": safe_name},
        Conditions=[["content-length-range", 1, config["max_bytes"]],
                    {"Content-Type": content_type}, {"x-amz-meta-source-name": safe_name}])
    answer["upload"] = {"method": "POST", "url": post["url"], "fields": post["fields"]}
    return answer


def handler(event, context=None):
    """API Gateway / function URL: POST a JSON body, get the slot back."""
    body = event.get("body") or "{}"
    try:
        request = json.loads(body) if isinstance(body, str) else dict(body)
    except ValueError:
        return {"statusCode": 400, "body": json.dumps({"error": "the body must be JSON"})}
    try:
        answer = mint_slot(request, _s3(), settings())
    except BadRequest as error:
        return {"statusCode": 400, "body": json.dumps({"error": str(error)})}
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps(answer)}
