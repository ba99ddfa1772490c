"""The deployment's knobs; each overridable with ``cdk -c name=value`` (e.g.
``-c concurrency_read=200``).

Concurrency is capped per SQS event source (``maximum_concurrency``), not by reserving it: a
reservation is taken from the account's quota whether used or not (the write-up's 894 fit only
a 1,000 account; a new one often has 10), and a reserved function that is throttled returns
its messages to the queue, where each throttled receive counts toward ``maxReceiveCount``.
Each cap is also a CloudFormation parameter (``ConcurrencyRead``...), whose default is set
here. The defaults are small, so the stack deploys into a small account; ``-c size=large`` is the
write-up's figures for an account whose quota allows them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["FunctionSpec", "DeploySettings", "LARGE"]


@dataclass(frozen=True)
class FunctionSpec:
    queue: str | None
    handler: str
    memory_mb: int
    timeout_s: int
    concurrency: int | None
    """The most concurrent invocations its SQS event source starts (2..1000); None: no queue."""
    image: str = "extraction"
    batch_size: int = 10
    ephemeral_mb: int | None = None
    """/tmp in MiB; None keeps Lambda's 512 (functions that never hold a source file)."""


@dataclass(frozen=True)
class DeploySettings:
    max_receives: int = 5
    visibility_factor: int = 6
    """Queue visibility = this x the function's timeout (AWS's advice for batched SQS sources)."""
    size: str = "small"
    """``small`` (the defaults below) or ``large`` (``LARGE``: the write-up's concurrency)."""
    concurrency_split: int = 2
    concurrency_read: int = 4
    concurrency_convert: int = 2
    concurrency_sheet: int = 2
    concurrency_index: int = 2
    concurrency_fields: int = 2
    concurrency_ingest: int = 2
    concurrency_read_small: int = 2
    """The read function's cap for the small documents' queue (``read-small``), beside
    ``concurrency_read`` for the bulk one; ``concurrency_convert_small`` likewise."""
    concurrency_convert_small: int = 2
    upload_expiry_s: int = 300
    max_upload_bytes: int = 512 * 1024 * 1024
    upload_retention_days: int = 30
    athena_bytes_scanned_cutoff: int = 10 * 1024**3
    projection_start: str = "2025-01-01"
    oldest_message_alarm_s: int = 900
    fields_schema: str = ""
    """Every upload's fields schema (``nda``, or MODULE:CLASS in the image); empty: no fields."""
    fields_strategy: str = "rules"
    reader: str = "auto"
    """Who reads pages: ``auto`` (the text layer, then OCR: tesseract is in the image), ``text``,
    ``ocr``, or ``gemini`` (a vision model: the stack then makes the ``GeminiApiKey`` secret,
    whose value the operator puts after the deploy; functions read it at start)."""
    primary_model: str = ""
    """The vision model (empty: the pipeline's default); ``fallback_model`` likewise."""
    fallback_model: str = ""
    weekly_evals_day: str = "MON"
    """The weekly evals report's schedule: this day (EventBridge's names), at this UTC hour."""
    weekly_evals_hour: int = 6
    alarm_email: str = ""
    """The ``AlarmEmail`` parameter's default: an address subscribed to the alarms topic."""
    log_retention_days: int = 30
    """The ``LogRetentionDays`` parameter's default: days every function's logs are kept."""
    intermediate_retention_days: int = 7
    """The ``IntermediateRetentionDays`` parameter's default: days S3 keeps page text,
    converted PDFs and decrypted copies."""
    cors_origins: str = ""
    """Browser origins that may upload to a slot (``-c cors_origins=https://a.example,https://b.example``):
    the uploads bucket's CORS rules; empty (the default): no CORS rule at all."""

    def upload_origins(self) -> list[str]:
        origins = [o.strip() for o in self.cors_origins.split(",") if o.strip()]
        for origin in origins:
            if origin != "*" and not origin.startswith(("https://", "http://")):
                raise ValueError(f"-c cors_origins: {origin!r} is not an origin "
                                 "(https://host[:port])")
        return origins

    @classmethod
    def from_context(cls, get) -> DeploySettings:
        """``get(name)`` is the CDK context lookup; unset names keep their defaults (those of
        ``LARGE`` with ``-c size=large``)."""
        size = get("size") or "small"
        if size not in ("small", "large"):
            raise ValueError(f"-c size={size}: small or large")
        values: dict = dict(LARGE) if size == "large" else {}
        for f in fields(cls):
            raw = get(f.name)
            if raw is not None:
                values[f.name] = type(getattr(cls(), f.name))(raw)
        return cls(**values)

    max_converted_mb: int = 256
    """The largest PDF LibreOffice may make (``ExtractConfig.max_converted_bytes``)."""

    def source_storage_mb(self) -> int:
        """/tmp for a function that holds sources: the largest upload, a second copy of that
        size (an Office file's decrypted copy beside it), the converted PDF, and 512 MiB for the
        rest (LibreOffice's profile, rendered pages); within Lambda's 10,240 MiB. A batch's units
        of one document share one copy (``infra.aws.s3.SharedDownloads``)."""
        mib = 1024 * 1024
        upload = -(-self.max_upload_bytes // mib)
        return min(10_240, max(512, 2 * upload + self.max_converted_mb + 512))

    def functions(self) -> dict[str, FunctionSpec]:
        extraction = "infra.aws.lambdas.extraction.handler"
        tmp = self.source_storage_mb()
        return {
            "ingest": FunctionSpec("ingest", "infra.aws.lambdas.ingest.handler", 512, 90,
                                   self.concurrency_ingest),
            "split": FunctionSpec("split", extraction, 2048, 120, self.concurrency_split,
                                  ephemeral_mb=tmp),
            "read": FunctionSpec("read", extraction, 2048, 300, self.concurrency_read,
                                 ephemeral_mb=tmp),
            "sheet": FunctionSpec("sheet", extraction, 3008, 300, self.concurrency_sheet,
                                  ephemeral_mb=tmp),
            "convert": FunctionSpec("convert", extraction, 3008, 300, self.concurrency_convert,
                                    image="convert", batch_size=1, ephemeral_mb=tmp),
            "index": FunctionSpec("index", extraction, 1024, 120, self.concurrency_index),
            "fields": FunctionSpec("fields", extraction, 1024, 300, self.concurrency_fields),
            # Scheduled: one at a time by their schedules and the poller's DynamoDB lease.
            "poller": FunctionSpec(None, "infra.aws.lambdas.poller.handler", 512, 70, None),
            "compaction": FunctionSpec(None, "infra.aws.lambdas.compaction.handler", 3008, 900,
                                       None),
            "weekly_evals": FunctionSpec(None, "infra.aws.lambdas.weekly_evals.handler", 3008,
                                         900, None),
            # The DynamoDB stream's consumer (one concurrent batch per shard: nothing to cap).
            "publisher": FunctionSpec(None, "infra.aws.lambdas.publisher.handler", 1024, 120,
                                      None),
        }


# The write-up's figures (894 concurrent functions at most): for an account whose Lambda quota is
# at least 1,000 (``-c size=large``).
LARGE = {"concurrency_split": 100, "concurrency_read": 500, "concurrency_convert": 100,
         "concurrency_sheet": 100, "concurrency_index": 20, "concurrency_fields": 50,
         "concurrency_ingest": 20, "concurrency_read_small": 100,
         "concurrency_convert_small": 20}
