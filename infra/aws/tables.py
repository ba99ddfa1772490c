"""The DynamoDB table's shape, in one place: the adapter's ``create_table`` (tests, moto,
LocalStack) and the CDK stack both read it, so the two cannot drift apart.

One table holds documents, jobs, units and leases (single-table design): a job and its units
share a partition key, so a job's units are one ``Query``. Each "what is left to do" list the
poller and the outbox repairs read is a sparse global index: an attribute present only while the
item is in that state (``gsi_active`` while a job is not terminal, ``gsi_split_due`` until its
split message is confirmed sent...), so each pass reads only the items it has to act on, never
the table's history. No module here imports boto3.
"""

from __future__ import annotations

__all__ = ["PARTITION_KEY", "SORT_KEY", "TTL_ATTRIBUTE", "INDEXES", "attribute_definitions",
           "global_secondary_indexes"]

PARTITION_KEY = "pk"
SORT_KEY = "sk"
TTL_ATTRIBUTE = "expires_at_epoch"

# index name -> (hash attribute, range attribute): each hash attribute is sparse, value "1".
INDEXES: dict[str, tuple[str, str]] = {
    "active": ("gsi_active", "created_at"),
    "split_due": ("gsi_split_due", "created_at"),
    "event_due": ("gsi_event_due", "updated_at"),
    "to_index": ("gsi_to_index", "finished_at"),
    "by_sha256": ("job_sha256", "created_at"),
    "by_source": ("source_key", "created_at"),
    "fields_due": ("gsi_fields_due", "created_at"),
    "fields_pending": ("gsi_fields_pending", "created_at"),
    "unpublished": ("gsi_unpublished", "finished_at"),
}


def attribute_definitions() -> list[dict[str, str]]:
    names = {PARTITION_KEY, SORT_KEY} | {a for pair in INDEXES.values() for a in pair}
    return [{"AttributeName": name, "AttributeType": "S"} for name in sorted(names)]


def global_secondary_indexes() -> list[dict]:
    return [{
        "IndexName": name,
        "KeySchema": [{"AttributeName": hash_key, "KeyType": "HASH"},
                      {"AttributeName": range_key, "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"},
    } for name, (hash_key, range_key) in INDEXES.items()]
