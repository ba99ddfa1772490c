"""Where the AWS functions find their resources: environment variables the CDK stack sets.

One object, built once per Lambda container (``AwsSettings()``), handed down like ``Settings``
locally. The pipeline's own knobs (pages per unit, timeouts, max receives) stay in
``infra.settings.Settings`` under the same ``DOCLAKE_*`` names on both sides.
"""

from __future__ import annotations

import json

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MAX_UPLOAD_EXPIRY_S", "AwsSettings"]

MAX_UPLOAD_EXPIRY_S = 900  # the brief: an upload slot lives minutes, 15 at most


class AwsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DOCLAKE_", extra="ignore")

    table: str = Field(description="The DynamoDB table of documents, jobs, units and leases.")
    uploads_bucket: str = Field(description="Where upload slots land (uploads/<doc>/<job>).")
    results_bucket: str = Field(description="Pages, converted PDFs and result JSON.")
    lake_uri: str = Field(description="s3://lake-bucket/prefix of the event lake.")
    queue_urls: dict[str, str] = Field(description="Port queue name -> SQS URL, JSON.")
    max_receives: int = Field(5, ge=1, description="The queues' maxReceiveCount.")
    poll_loop_s: float = Field(50.0, gt=0, description="How long one poller invocation loops.")
    poll_interval_s: float = Field(5.0, gt=0, description="The poller's period inside it.")
    publish_grace_s: float = Field(
        300.0, ge=0, description="A settled result unpublished for this long is published by "
        "the poller (the stream's publisher normally does it within seconds).")
    fields_schema: str | None = Field(
        None, description="The schema every upload's fields are extracted with (nda, or "
        "MODULE:CLASS); unset: no fields stage, the result JSON carries the job's status only.")
    fields_strategy: str = Field("rules", description="The fields strategy (rules, "
                                 "single-pass, agentic...).")
    gemini_api_key_secret: str | None = Field(
        None, description="The Secrets Manager secret (ARN or name) holding the Gemini API key; "
        "read once per container, never put in the environment.")
    ephemeral_bytes: int = Field(
        512 * 1024 * 1024, ge=1, description="The function's /tmp (its ephemeral storage): a "
        "source that cannot fit is refused before it is downloaded (infra.aws.tmp_budget).")
    upload_expiry_s: int = Field(300, ge=1, le=MAX_UPLOAD_EXPIRY_S)
    max_upload_bytes: int = Field(512 * 1024 * 1024, ge=1)

    @field_validator("queue_urls", mode="before")
    @classmethod
    def _json(cls, value):
        return json.loads(value) if isinstance(value, str) else value
