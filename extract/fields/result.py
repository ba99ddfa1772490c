"""A field extraction's outcome as the job store keeps it and as the caller reads it.

``FieldResult`` is written once, by the terminal conditional write of the claim row, and read by
the publisher, which needs nothing else: the published JSON (the write-up's shape) and the lake
events (``ResultPublished``, one ``ResultFieldExtracted`` per value) are both built from it, so
a publication repeated after a crash is identical to the first.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from extract.fields.base import Extraction, field_values
from extract.fields.kinds import Applicability

__all__ = ["FieldResult", "ValueRow", "failed_result", "not_applicable_result",
           "succeeded_result"]


class ValueRow(BaseModel):
    """One extracted value as text, and where it was found when the strategy knows."""

    model_config = ConfigDict(frozen=True)

    field: str
    value: str
    value_index: int = 0
    page_number: int | None = None
    char_offset: int | None = None
    confidence: float | None = None
    """The calibrated probability that the value is right (rules); for an LLM value, low when
    its evidence does not state it (``flag``), else None."""
    evidence: str | None = None
    """The text that decided the value: the best-scoring mention, or the LLM's quote aligned."""
    evidence_start: int | None = None
    evidence_end: int | None = None
    """``evidence`` is the stored page text from ``evidence_start`` to ``evidence_end``."""
    flag: str | None = None
    """Why the value is doubtful (``evidence_lacks_value``, ``not_found``), else None."""


class FieldResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    document_id: str
    job_id: str
    strategy: str
    schema_name: str
    status: Literal["succeeded", "failed", "not_applicable"]
    """not_applicable: the document is not of the kind the schema is for (``kinds``): no values."""
    extracted_fields: dict[str, Any] | None = None
    values: tuple[ValueRow, ...] = ()
    model_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    processing_ms: int = 0
    failure_reason: str | None = None
    """A stable code: strategy_unavailable, unsupported_schema, invalid_output, dead_letter..."""
    failure_message: str | None = None
    document_kind: str | None = None
    applies: bool | None = None
    applicability_score: float | None = None

    def published(self, source_path: str | None = None) -> dict[str, Any]:
        """The JSON at ``results/{document_id}.json``: the write-up's keys first, then ours
        (job, the file's path as ingested, strategy, schema; the reason when failed).
        Milliseconds are whole numbers."""
        document: dict[str, Any] = {
            "document_id": self.document_id,
            "status": self.status,
            "extracted_fields": self.extracted_fields,
            "model_version": self.model_version,
            "token_usage": {"input": self.input_tokens, "output": self.output_tokens},
            "processing_ms": self.processing_ms,
            "job_id": self.job_id,
            "source_path": source_path,
            "strategy": self.strategy,
            "schema": self.schema_name,
            "values": [row.model_dump()
                       for row in self.values],
        }
        if self.document_kind is not None:
            document["applicability"] = {"kind": self.document_kind, "applies": self.applies,
                                         "score": self.applicability_score}
        if self.status == "failed":
            document["error"] = {"reason": self.failure_reason, "message": self.failure_message}
        return document

    def published_bytes(self, source_path: str | None = None) -> bytes:
        """Deterministic bytes (same result, same file): a repeated publication rewrites nothing
        a reader could tell apart."""
        return (json.dumps(self.published(source_path), ensure_ascii=False, indent=2)
                + "\n").encode("utf-8")


def succeeded_result(*, document_id: str, job_id: str, strategy: str, schema_name: str,
                     extraction: Extraction, processing_ms: float,
                     min_confidence: float = 0.0,
                     applicability: Applicability | None = None) -> FieldResult:
    """A strategy's answer as a result: values flattened one row each, with their sources.
    A value whose confidence is below ``min_confidence`` is not reported: gone from the rows
    and from ``extracted_fields`` (a list loses the item, a single value becomes null)."""
    fields = extraction.fields.model_dump(mode="json")
    values: list[ValueRow] = []
    kept: dict[str, int] = {}
    dropped: dict[str, list[int]] = {}
    for row in field_values(extraction.fields):
        source = extraction.source_of(row.field, row.value_index)
        confidence = source.confidence if source else None
        if confidence is not None and confidence < min_confidence:
            dropped.setdefault(row.field, []).append(row.value_index)
            continue
        index = kept[row.field] = kept.get(row.field, -1) + 1
        values.append(ValueRow(
            field=row.field, value=row.value, value_index=index,
            page_number=source.page_number if source else None,
            char_offset=source.char_offset if source else None,
            confidence=None if confidence is None else round(confidence, 4),
            evidence=source.evidence if source else None,
            evidence_start=source.evidence_start if source else None,
            evidence_end=source.evidence_end if source else None,
            flag=source.flag if source else None))
    for name, indexes in dropped.items():
        if isinstance(fields.get(name), list):
            fields[name] = [v for i, v in enumerate(fields[name]) if i not in indexes]
        else:
            fields[name] = None
    return FieldResult(
        document_id=document_id, job_id=job_id, strategy=strategy, schema_name=schema_name,
        status="succeeded", extracted_fields=fields,
        values=tuple(values), model_version=extraction.model_version or None,
        input_tokens=extraction.token_usage.input, output_tokens=extraction.token_usage.output,
        processing_ms=round(processing_ms),
        document_kind=applicability.kind if applicability else None,
        applies=applicability.applies if applicability and applicability.kind else None,
        applicability_score=applicability.score if applicability else None)


def not_applicable_result(*, document_id: str, job_id: str, strategy: str, schema_name: str,
                          applicability: Applicability, processing_ms: float) -> FieldResult:
    """A document not of the schema's kind: no values, the decision and its score kept."""
    return FieldResult(
        document_id=document_id, job_id=job_id, strategy=strategy, schema_name=schema_name,
        status="not_applicable", processing_ms=round(processing_ms),
        document_kind=applicability.kind, applies=False,
        applicability_score=applicability.score)


def failed_result(*, document_id: str, job_id: str, strategy: str, schema_name: str,
                  reason: str, message: str, processing_ms: float = 0,
                  model_version: str | None = None) -> FieldResult:
    return FieldResult(
        document_id=document_id, job_id=job_id, strategy=strategy, schema_name=schema_name,
        status="failed", model_version=model_version, processing_ms=round(processing_ms),
        failure_reason=reason, failure_message=message[:2000])
