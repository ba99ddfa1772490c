"""The deployment's knobs, with the write-up's defaults; each overridable with ``cdk -c
name=value`` (e.g. ``-c reserved_read=200``)."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class FunctionSpec:
    queue: str | None
    handler: str
    memory_mb: int
    timeout_s: int
    reserved: int | None
    image: str = "extraction"
    batch_size: int = 10
    ephemeral_mb: int | None = None
    """/tmp in MiB; None keeps Lambda's 512 (functions that never hold a source file)."""


@dataclass(frozen=True)
class DeploySettings:
    prefix: str = "doclake"
    max_receives: int = 5
    visibility_factor: int = 6
    """Queue visibility = this x the function's timeout (AWS's advice for batched SQS sources)."""
    reserved_split: int = 100
    reserved_read: int = 500
    reserved_convert: int = 100
    reserved_sheet: int = 100
    reserved_index: int = 20
    reserved_fields: int = 50
    reserved_ingest: int = 20
    upload_expiry_s: int = 300
    max_upload_bytes: int = 512 * 1024 * 1024
    upload_retention_days: int = 30
    athena_bytes_scanned_cutoff: int = 10 * 1024**3
    projection_start: str = "2025-01-01"
    oldest_message_alarm_s: int = 900
    fields_schema: str = ""
    """Every upload's fields schema (``nda``, or MODULE:CLASS in the image); empty: no fields."""
    fields_strategy: str = "rules"
    weekly_evals_day: str = "MON"
    """The weekly evals report's schedule: this day (EventBridge's names), at this UTC hour."""
    weekly_evals_hour: int = 6
    alarm_email: str = ""

    @classmethod
    def from_context(cls, get) -> DeploySettings:
        """``get(name)`` is the CDK context lookup; unset names keep their defaults."""
        values = {}
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
                                   self.reserved_ingest),
            "split": FunctionSpec("split", extraction, 2048, 120, self.reserved_split,
                                  ephemeral_mb=tmp),
            "read": FunctionSpec("read", extraction, 2048, 300, self.reserved_read,
                                 ephemeral_mb=tmp),
            "sheet": FunctionSpec("sheet", extraction, 3008, 300, self.reserved_sheet,
                                  ephemeral_mb=tmp),
            "convert": FunctionSpec("convert", extraction, 3008, 300, self.reserved_convert,
                                    image="convert", batch_size=1, ephemeral_mb=tmp),
            "index": FunctionSpec("index", extraction, 1024, 120, self.reserved_index),
            "fields": FunctionSpec("fields", extraction, 1024, 300, self.reserved_fields),
            "poller": FunctionSpec(None, "infra.aws.lambdas.poller.handler", 512, 70, 2),
            "compaction": FunctionSpec(None, "infra.aws.lambdas.compaction.handler", 3008, 900, 1),
            "weekly_evals": FunctionSpec(None, "infra.aws.lambdas.weekly_evals.handler", 3008,
                                         900, 1),
            # The DynamoDB stream's consumer (one concurrent batch per shard: nothing to reserve).
            "publisher": FunctionSpec(None, "infra.aws.lambdas.publisher.handler", 1024, 120,
                                      None),
        }
