"""The job store's side records on DynamoDB: field-extraction claims and their publication, the
poller's lease, and a job's own password. Each is an item of its own beside a job's items, never
an attribute of the job, so it neither widens the job's stream image nor races the job's own
transitions; ``DynamoJobStore`` (``infra.aws.dynamo.store``) inherits them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from extract.state import ClaimStatus, FieldClaim, Job
from infra.aws.dynamo.items import (
    PASSWORD_TTL_S,
    attr_values,
    claim_from_item,
    claim_key,
    encode_value,
    job_from_item,
    job_key,
    lease_key,
    now_iso,
    password_key,
    shard_of,
)
from infra.aws.dynamo.table import DynamoTable
from infra.aws.errors import is_condition_failure, mapped
from infra.aws.tables import TTL_ATTRIBUTE

__all__ = ["DynamoClaims"]


class DynamoClaims(DynamoTable):
    """Claims, the lease and passwords; the job and unit transitions are ``DynamoJobStore``'s."""

    # --- a job's own password: an item beside the job (never in the job item, so never in a
    # job's stream image or a ``Job``), readable only while the job runs, deleted when it ends.

    def set_job_password(self, job_id: str, password: str) -> bool:
        return self._transact([
            {"ConditionCheck": {
                "TableName": self.table, "Key": job_key(job_id),
                "ConditionExpression": "attribute_exists(pk) AND #st IN (:q, :x)",
                "ExpressionAttributeNames": {"#st": "status"},
                "ExpressionAttributeValues": attr_values(q="queued", x="extracting")}},
            {"Put": {"TableName": self.table, "Item": {
                **password_key(job_id), "password": {"S": password},
                TTL_ATTRIBUTE: {"N": str(int(time.time() + PASSWORD_TTL_S))}}}}])

    def job_password(self, job_id: str) -> str | None:
        job = self.get_job(job_id)
        if job is None or job.status.terminal:
            return None
        data = self._get(password_key(job_id))
        return str(data["password"]) if data else None

    # --- fields: request, claim, result, publication --------------------------------------------
    #
    # A claim is an item beside its job's units (sk ``claim#<strategy>``); the sparse indexes
    # ``fields_due`` (request not yet sent), ``fields_pending`` (requested, not yet published) and
    # ``unpublished`` (a terminal claim the publisher has not flagged) are the outbox lists.

    def request_fields(self, job_ids: Sequence[str], schema: str, strategy: str) -> int:
        changed = 0
        for job_id in dict.fromkeys(job_ids):
            claim = self.get_field_claim(job_id, strategy)
            published = claim.published_at.isoformat() if claim and claim.published_at else None
            expression = "SET fields_schema = :s, fields_strategy = :st"
            values = attr_values(s=schema, st=strategy, one=shard_of(job_id))
            if published:
                expression += ", fields_published_at = :p REMOVE fields_sent_at, gsi_fields_due, " \
                              "gsi_fields_pending"
                values.update(attr_values(p=published))
                values.pop(":one")
            else:
                expression += (", gsi_fields_due = :one, gsi_fields_pending = :one "
                               "REMOVE fields_sent_at, fields_published_at")
            changed += self._update(
                job_key(job_id), expression,
                condition="attribute_exists(pk) AND (attribute_not_exists(fields_schema) OR "
                          "fields_schema <> :s OR attribute_not_exists(fields_strategy) OR "
                          "fields_strategy <> :st)", values=values)
        return changed

    def unsent_fields_jobs(self) -> list[Job]:
        jobs = [job_from_item(d) for d in self._index(
            "fields_due", filter_expression="#st = :failed OR #st = :ok",
            names={"#st": "status"}, values=attr_values(failed="failed", ok="succeeded"))]
        return sorted(jobs, key=lambda j: j.finished_at or j.created_at)

    def mark_fields_sent(self, job_ids: Sequence[str]) -> None:
        now = now_iso()
        for job_id in job_ids:
            self._update(job_key(job_id), "SET fields_sent_at = :now REMOVE gsi_fields_due",
                         condition="attribute_exists(pk)", values=attr_values(now=now))

    def claim_fields(self, job_id: str, strategy: str, *, document_id: str, claimant: str,
                     at: datetime, stale_before: datetime | None = None) -> bool:
        item = {**claim_key(job_id, strategy), **{k: encode_value(v) for k, v in {
            "job_id": job_id, "strategy": strategy, "document_id": document_id,
            "status": ClaimStatus.CLAIMED.value, "claimant": claimant,
            "claimed_at": at.isoformat()}.items()}}
        try:
            with mapped(f"dynamodb claim {job_id}/{strategy}"):
                if stale_before is None:
                    self.client.put_item(TableName=self.table, Item=item,
                                         ConditionExpression="attribute_not_exists(pk)")
                else:  # or take over a claim whose worker is gone (ISO UTC: string order)
                    self.client.put_item(
                        TableName=self.table, Item=item,
                        ConditionExpression="attribute_not_exists(pk) OR "
                                            "(#st = :claimed AND claimed_at < :cutoff)",
                        ExpressionAttributeNames={"#st": "status"},
                        ExpressionAttributeValues=attr_values(
                            claimed=ClaimStatus.CLAIMED.value, cutoff=stale_before.isoformat()))
        except Exception as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def get_field_claim(self, job_id: str, strategy: str) -> FieldClaim | None:
        data = self._get(claim_key(job_id, strategy))
        return claim_from_item(data) if data else None

    def release_fields(self, job_id: str, strategy: str, claimant: str) -> bool:
        try:
            with mapped(f"dynamodb release claim {job_id}/{strategy}"):
                self.client.delete_item(
                    TableName=self.table, Key=claim_key(job_id, strategy),
                    ConditionExpression="#st = :claimed AND claimant = :me",
                    ExpressionAttributeNames={"#st": "status"},
                    ExpressionAttributeValues=attr_values(claimed="claimed", me=claimant))
        except Exception as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def settle_fields(self, job_id: str, strategy: str, *, document_id: str,
                      status: ClaimStatus, result: str, claimant: str | None,
                      at: datetime) -> bool:
        if not status.terminal:
            raise ValueError(f"settle_fields needs a terminal status, not {status}")
        values = attr_values(new=status.value, r=result, at=at.isoformat(), one=shard_of(job_id),
                         claimed="claimed", d=document_id, j=job_id, st=strategy)
        if claimant is not None:
            condition = "#st = :claimed AND claimant = :me"
            values.update(attr_values(me=claimant))
        else:
            condition = "attribute_not_exists(pk) OR #st = :claimed"
        return self._update(
            claim_key(job_id, strategy),
            "SET #st = :new, #res = :r, finished_at = :at, gsi_unpublished = :one, "
            "document_id = :d, job_id = :j, strategy = :st",
            condition=condition, names={"#st": "status", "#res": "result"}, values=values)

    def unpublished_results(self, limit: int = 100) -> list[FieldClaim]:
        claims = []
        for data in self._index("unpublished"):
            claims.append(claim_from_item(data))
            if len(claims) >= limit:
                break
        return claims

    def mark_result_published(self, job_id: str, strategy: str, at: datetime) -> bool:
        """The claim's flag and, when this is the job's requested strategy, the job's, in one
        transaction (a crash between would leave the job never settled)."""
        stamp = at.isoformat()
        claim_update = {"Update": {
            "TableName": self.table, "Key": claim_key(job_id, strategy),
            "UpdateExpression": "SET published_at = :at REMOVE gsi_unpublished",
            "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(published_at) "
                                   "AND #st <> :claimed",
            "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": attr_values(at=stamp, claimed="claimed")}}
        job = self._get(job_key(job_id))
        items = [claim_update]
        if job and job.get("fields_strategy") == strategy and not job.get("fields_published_at"):
            items.append({"Update": {
                "TableName": self.table, "Key": job_key(job_id),
                "UpdateExpression": "SET fields_published_at = :at "
                                    "REMOVE gsi_fields_due, gsi_fields_pending",
                "ConditionExpression": "fields_strategy = :st",
                "ExpressionAttributeValues": attr_values(at=stamp, st=strategy)}})
        return self._transact(items)

    def fields_pending(self) -> int:
        return sum(1 for _ in self._index(
            "fields_pending", filter_expression="#st IN (:ok, :failed)", names={"#st": "status"},
            values=attr_values(ok="succeeded", failed="failed")))

    # --- the poller's lease --------------------------------------------------------------------

    def acquire_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """One conditional put: the lease is free, ours, or expired. DynamoDB's TTL removes
        abandoned lease items a day later (TTL is lazy, so expiry is checked here, not left to
        it)."""
        now = time.time()
        item = {**lease_key(name), "holder": {"S": holder},
                "expires_at": encode_value(now + ttl_s),
                TTL_ATTRIBUTE: {"N": str(int(now + ttl_s + 86_400))}}
        try:
            with mapped(f"dynamodb lease {name}"):
                self.client.put_item(
                    TableName=self.table, Item=item,
                    ConditionExpression="attribute_not_exists(pk) OR holder = :h OR expires_at < :now",
                    ExpressionAttributeValues=attr_values(h=holder, now=now))
        except Exception as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def release_lease(self, name: str, holder: str) -> None:
        try:
            with mapped(f"dynamodb release {name}"):
                self.client.delete_item(TableName=self.table, Key=lease_key(name),
                                        ConditionExpression="holder = :h",
                                        ExpressionAttributeValues=attr_values(h=holder))
        except Exception as error:
            if not is_condition_failure(error):
                raise
