"""The DynamoDB table itself: creating it (tests, moto, LocalStack), and the few low-level
operations every part of the store is built on (a consistent get, a conditional update, an
all-or-nothing transaction, paginated queries of the table and its sparse indexes).

Each turns a failed condition into False and leaves every other error to ``infra.aws.errors``,
so the store's methods above it read as the transitions they are.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from extract.state import Job
from infra.aws.dynamo.items import decode_item, job_from_item, job_key, shard_values
from infra.aws.errors import error_code, is_condition_failure, mapped
from infra.aws.tables import (
    INDEXES,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
    attribute_definitions,
    global_secondary_indexes,
)

__all__ = ["create_table", "DynamoTable"]


def create_table(client, name: str) -> None:
    """The table as the CDK app declares it (on-demand, a stream of new and old images, TTL),
    for tests and a developer's moto or LocalStack. Waits until it is active."""
    with mapped(f"dynamodb create {name}"):
        client.create_table(
            TableName=name, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=attribute_definitions(),
            KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
                       {"AttributeName": SORT_KEY, "KeyType": "RANGE"}],
            GlobalSecondaryIndexes=global_secondary_indexes(),
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
        client.get_waiter("table_exists").wait(TableName=name)
        client.update_time_to_live(TableName=name, TimeToLiveSpecification={
            "Enabled": True, "AttributeName": TTL_ATTRIBUTE})


class DynamoTable:
    """One table, through one client: the base of ``DynamoJobStore``."""

    def __init__(self, client, table: str):
        self.client = client
        self.table = table

    # --- low-level -----------------------------------------------------------------------------

    def _get(self, key: dict) -> dict[str, Any] | None:
        with mapped(f"dynamodb get {self.table}"):
            item = self.client.get_item(TableName=self.table, Key=key,
                                        ConsistentRead=True).get("Item")
        return decode_item(item) if item else None

    def _update(self, key: dict, expression: str, *, condition: str | None = None,
                values: dict | None = None, names: dict | None = None) -> bool:
        request: dict[str, Any] = {"TableName": self.table, "Key": key,
                                   "UpdateExpression": expression}
        if condition:
            request["ConditionExpression"] = condition
        if values:
            request["ExpressionAttributeValues"] = values
        if names:
            request["ExpressionAttributeNames"] = names
        try:
            with mapped(f"dynamodb update {self.table}"):
                self.client.update_item(**request)
        except Exception as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def _transact(self, items: list[dict]) -> bool:
        """All or nothing; False when a condition failed (the transition was not ours)."""
        try:
            with mapped(f"dynamodb transaction on {self.table}"):
                self.client.transact_write_items(TransactItems=items)
        except Exception as error:
            if error_code(error) == "TransactionCanceledException":  # type: ignore[arg-type]
                reasons = getattr(error, "response", {}).get("CancellationReasons", [])
                codes = {r.get("Code") for r in reasons} - {"None", None}
                if not codes or codes <= {"ConditionalCheckFailed"}:
                    return False
                from extract.errors import TransientError

                raise TransientError(f"dynamodb transaction cancelled: {sorted(codes)}",
                                     error_type="aws_transient") from error
            raise
        return True

    def _query(self, **request: Any) -> Iterator[dict[str, Any]]:
        request["TableName"] = self.table
        with mapped(f"dynamodb query {self.table}"):
            for page in self.client.get_paginator("query").paginate(**request):
                for item in page.get("Items", []):
                    yield decode_item(item)

    def _index(self, name: str, *, filter_expression: str | None = None,
               values: dict | None = None, names: dict | None = None,
               newest_first: bool = False, hash_value: str | None = None
               ) -> Iterator[dict[str, Any]]:
        """One index's items in its range key's order. ``hash_value`` for a natural key (a
        sha256, a source); without it, a sparse index: every shard's items, merged."""
        hash_key, range_key = INDEXES[name]

        def one(value: str) -> Iterator[dict[str, Any]]:
            request: dict[str, Any] = {
                "IndexName": name, "KeyConditionExpression": "#h = :h",
                "ExpressionAttributeNames": {"#h": hash_key, **(names or {})},
                "ExpressionAttributeValues": {":h": {"S": value}, **(values or {})},
                "ScanIndexForward": not newest_first,
            }
            if filter_expression:
                request["FilterExpression"] = filter_expression
            return self._query(**request)

        if hash_value is not None:
            return one(hash_value)
        return heapq.merge(*(one(v) for v in shard_values()),
                           key=lambda item: str(item.get(range_key, "")), reverse=newest_first)

    def get_job(self, job_id: str) -> Job | None:
        data = self._get(job_key(job_id))
        return job_from_item(data) if data else None
