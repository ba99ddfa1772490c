"""Open an ``s3://bucket/prefix`` lake with an explicit endpoint, for moto, MinIO or LocalStack.

Recent pyarrow wheels (26 here) pick up ``AWS_ENDPOINT_URL`` and ``AWS_ENDPOINT_URL_S3`` on their
own, so ``pyarrow.fs.FileSystem.from_uri`` already reaches a local S3. Older ones do not (the
project allows pyarrow >= 16; apache/arrow#49643 reports 23.0 ignoring both variables), and then
a laptop pointed at a local S3 silently talks to AWS instead. ``open_s3`` removes that doubt by
passing the endpoint to ``S3FileSystem`` itself. With no endpoint set it defers to
``from_uri``, which also finds the bucket's region.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

import pyarrow.fs as pafs

__all__ = ["ENDPOINT_VARIABLES", "s3_endpoint", "split_s3_uri", "open_s3"]

ENDPOINT_VARIABLES = ("DOCLAKE_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
"""Checked in this order: our own setting, then the AWS SDKs' S3-only and global ones."""


def s3_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The S3 endpoint URL the environment asks for, or None for AWS itself."""
    environ = os.environ if environ is None else environ
    for name in ENDPOINT_VARIABLES:
        if environ.get(name):
            return environ[name]
    return None


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ``("bucket", "a/b")``."""
    parts = urlsplit(uri)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an s3://bucket/prefix URI: {uri!r}")
    return parts.netloc, parts.path.strip("/")


def open_s3(uri: str, *, endpoint: str | None = None,
            environ: Mapping[str, str] | None = None) -> tuple[pafs.FileSystem, str]:
    """A filesystem and root path (``bucket/prefix``) for an S3 lake, as ``open_lake`` returns.

    ``endpoint`` (or the first of ``ENDPOINT_VARIABLES`` set) is given to ``S3FileSystem``
    explicitly; options in the URI's query string (``?endpoint_override=...``) win over both.
    """
    bucket, prefix = split_s3_uri(uri)
    root = f"{bucket}/{prefix}" if prefix else bucket
    environ = os.environ if environ is None else environ
    endpoint = endpoint or s3_endpoint(environ)
    if endpoint is None or urlsplit(uri).query:
        filesystem, _ = pafs.FileSystem.from_uri(uri)
        return filesystem, root
    target = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    filesystem = pafs.S3FileSystem(
        endpoint_override=target.netloc, scheme=target.scheme or "https", region=region
    )
    return filesystem, root
