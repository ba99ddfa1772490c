"""How our records look as DynamoDB items: the keys of each kind of item, and values to and from
DynamoDB's typed JSON.

Apart from the store (``infra.aws.dynamo.store``) because the publisher Lambda decodes stream images
with the same functions, and the store's parts (``infra.aws.dynamo.table``,
``infra.aws.dynamo.claims``) all build the same keys. No I/O here.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from extract.state import FieldClaim, Job
from infra.aws.tables import PARTITION_KEY, SORT_KEY

__all__ = [
    "PASSWORD_TTL_S", "SHARDS", "attr_values", "claim_from_item", "claim_key",
    "decode_item", "document_key", "encode_value", "job_from_item", "job_key", "lease_key",
    "now_iso", "password_key", "shard_of", "shard_values", "unit_key",
]

_SER = TypeSerializer()
_DES = TypeDeserializer()
SHARDS = 10
"""Hash values of every sparse index: an item's is ``shard_of(job_id)``. One value would put
every job's index writes (each unit's progress rewrites its job item, and the item's copy in
``active``) on one partition of the index; ten spread them and cost the readers ten queries."""


def shard_of(job_id: str) -> str:
    """The sparse index hash value of a job's items: stable, spread evenly over ``SHARDS``."""
    return str(int(hashlib.blake2b(job_id.encode(), digest_size=4).hexdigest(), 16) % SHARDS)


def shard_values() -> list[str]:
    return [str(n) for n in range(SHARDS)]
_JOB_FIELDS = set(Job.model_fields)
_CLAIM_FIELDS = set(FieldClaim.model_fields)
_TIMES = ("created_at", "updated_at", "last_progress_at", "finished_at", "indexed_at",
          "fields_published_at", "claimed_at", "published_at", "retry_at")


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def decode_item(item: dict) -> dict[str, Any]:
    """A DynamoDB item (or a stream image) as plain Python values (the publisher reads images)."""
    return {k: _plain(_DES.deserialize(v)) for k, v in item.items()}


def encode_value(value: Any) -> dict:
    if isinstance(value, float):
        value = Decimal(repr(value))
    return _SER.serialize(value)


def attr_values(**values: Any) -> dict[str, dict]:
    return {f":{k}": encode_value(v) for k, v in values.items()}


def job_key(job_id: str) -> dict:
    return {PARTITION_KEY: {"S": f"job#{job_id}"}, SORT_KEY: {"S": "job"}}


def unit_key(job_id: str, unit_id: str) -> dict:
    return {PARTITION_KEY: {"S": f"job#{job_id}"}, SORT_KEY: {"S": f"unit#{unit_id}"}}


def document_key(document_id: str) -> dict:
    return {PARTITION_KEY: {"S": f"doc#{document_id}"}, SORT_KEY: {"S": "document"}}


def claim_key(job_id: str, strategy: str) -> dict:
    return {PARTITION_KEY: {"S": f"job#{job_id}"}, SORT_KEY: {"S": f"claim#{strategy}"}}


def password_key(job_id: str) -> dict:
    return {PARTITION_KEY: {"S": f"job#{job_id}"}, SORT_KEY: {"S": "password"}}


PASSWORD_TTL_S = 7 * 86_400  # a backstop: a terminal transition deletes the item at once


def lease_key(name: str) -> dict:
    return {PARTITION_KEY: {"S": f"lease#{name}"}, SORT_KEY: {"S": "lease"}}


def _times(fields: dict[str, Any]) -> dict[str, Any]:
    for key in _TIMES:
        if fields.get(key):
            fields[key] = datetime.fromisoformat(fields[key])
    return fields


def job_from_item(data: dict[str, Any]) -> Job:
    return Job(**_times({k: v for k, v in data.items() if k in _JOB_FIELDS}))


def claim_from_item(data: dict[str, Any]) -> FieldClaim:
    return FieldClaim(**_times({k: v for k, v in data.items() if k in _CLAIM_FIELDS}))
