"""The job store on DynamoDB: the same conditional transitions as SQLite, as condition
expressions and transactions.

Where SQLite says ``UPDATE ... WHERE status IN (...)`` and reads the row count, this adapter says
``ConditionExpression`` and reads ``ConditionalCheckFailedException`` as False: a redelivered
message that finds its work done learns so without an error. A unit's change and its job's
progress (``last_progress_at``, the unit counters the poller reads) are one ``TransactWriteItems``,
so the poller never sees a unit done that its job does not count. Layout and indexes:
``infra.aws.tables``. Only ``infra.aws.errors`` decides what is transient.

The store is in parts: item keys and encoding (``infra.aws.dynamo.items``, shared with the
publisher Lambda), the table and its low-level operations (``infra.aws.dynamo.table``), the side
records, claims, lease and passwords (``infra.aws.dynamo.claims``), and here the documents, jobs
and units, whose transitions are the heart of it.

Two places where DynamoDB differs and the adapter says how it copes:

- ``add_units``: a transaction holds at most 100 items and a document may have thousands of
  units. The unit items go first, in transactions that each re-check "this job has no plan yet";
  the job's ``units`` count is written last, conditionally, and is what makes the plan exist.
  A delivery that dies in between leaves no plan (the redelivery plans again, overwriting
  pending units no one could have started: their messages go out only after the plan exists).
- a document's ``status`` follows its latest job's terminal transition in a second write; it is
  informational (no decision reads it), so a crash between the two only leaves it stale.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from extract.ports import NewVersion
from extract.state import Document, Job, JobProgress, JobStatus, Unit, UnitClaim, UnitStatus
from infra.aws.dynamo.claims import DynamoClaims
from infra.aws.dynamo.items import (
    attr_values,
    claim_from_item,
    decode_item,
    document_key,
    encode_value,
    job_from_item,
    job_key,
    now_iso,
    password_key,
    shard_of,
    unit_key,
)
from infra.aws.dynamo.table import create_table
from infra.aws.errors import mapped

__all__ = ["DynamoJobStore", "claim_from_item", "create_table", "decode_item"]

TRANSACTION_ITEMS = 100
_OPEN = (UnitStatus.PENDING, UnitStatus.RUNNING)
_UNIT_FIELDS = set(Unit.model_fields)
_DOCUMENT_FIELDS = set(Document.model_fields)


class DynamoJobStore(DynamoClaims):
    """Documents, jobs and units: their reads and their conditional transitions. The low-level
    operations are ``DynamoTable``'s; claims, the lease and passwords ``DynamoClaims``'."""

    # --- reading -------------------------------------------------------------------------------

    def get_document(self, document_id: str) -> Document | None:
        data = self._get(document_key(document_id))
        if data is None:
            return None
        fields = {k: v for k, v in data.items() if k in _DOCUMENT_FIELDS}
        fields["created_at"] = datetime.fromisoformat(fields["created_at"])
        return Document(**fields)

    def get_unit(self, job_id: str, unit_id: str) -> Unit | None:
        data = self._get(unit_key(job_id, unit_id))
        return Unit(**{k: v for k, v in data.items() if k in _UNIT_FIELDS}) if data else None

    def list_units(self, job_id: str) -> list[Unit]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :unit)", ConsistentRead=True,
            ExpressionAttributeValues=attr_values(pk=f"job#{job_id}", unit="unit#"))
        units = [Unit(**{k: v for k, v in d.items() if k in _UNIT_FIELDS}) for d in items]
        return sorted(units, key=lambda u: u.unit_id)

    def list_jobs(self, job_ids: Sequence[str] | None = None) -> list[Job]:
        found: list[dict[str, Any]] = []
        if job_ids is None:
            with mapped(f"dynamodb scan {self.table}"):
                pages = self.client.get_paginator("scan").paginate(
                    TableName=self.table, FilterExpression="sk = :job",
                    ExpressionAttributeValues=attr_values(job="job"), ConsistentRead=True)
                found = [decode_item(i) for page in pages for i in page.get("Items", [])]
        else:
            ids = list(dict.fromkeys(job_ids))
            for start in range(0, len(ids), 100):
                keys = [job_key(j) for j in ids[start:start + 100]]
                request = {self.table: {"Keys": keys, "ConsistentRead": True}}
                while request:
                    with mapped(f"dynamodb batch get {self.table}"):
                        answer = self.client.batch_get_item(RequestItems=request)
                    found += [decode_item(i) for i in answer["Responses"].get(self.table, [])]
                    request = answer.get("UnprocessedKeys") or {}
        return sorted((job_from_item(d) for d in found), key=lambda j: j.created_at)

    def find_document_by_sha256(self, sha256: str) -> tuple[Document, Job] | None:
        for data in self._index("by_sha256", hash_value=sha256, newest_first=True):
            job = self.get_job(data["job_id"])
            document = self.get_document(data["document_id"])
            if job is not None and document is not None:
                return document, job
        return None

    def find_document_by_source(self, source_key: str) -> Document | None:
        for data in self._index("by_source", hash_value=source_key):
            return self.get_document(data["document_id"])
        return None

    # --- ingest --------------------------------------------------------------------------------

    def create_job(self, version: NewVersion) -> None:
        created = version.created_at.isoformat()
        job = {
            **job_key(version.job_id),
            **{k: encode_value(v) for k, v in {
                "job_id": version.job_id, "document_id": version.document_id,
                "status": JobStatus.QUEUED.value, "object_key": version.object_key,
                "source_name": version.source_name, "job_sha256": version.sha256,
                "created_at": created, "updated_at": created, "last_progress_at": created,
                "stalled_s": 0, "n_done": 0, "n_failed": 0, "n_running": 0,
                "gsi_active": shard_of(version.job_id),
                "gsi_split_due": shard_of(version.job_id)}.items()},
            **({"run_choices": encode_value(version.run_choices)} if version.run_choices else {}),
        }
        document_update = {
            "TableName": self.table, "Key": document_key(version.document_id),
            "UpdateExpression": (
                "SET document_id = :d, source_name = :n, sha256 = :s, #b = :b, version = :v, "
                "latest_job_id = :j, #st = :st, source_key = if_not_exists(source_key, :k), "
                "created_at = if_not_exists(created_at, :c)"),
            "ExpressionAttributeNames": {"#b": "bytes", "#st": "status"},
            "ExpressionAttributeValues": attr_values(
                d=version.document_id, n=version.source_name, s=version.sha256,
                b=version.bytes, v=version.version, j=version.job_id, st="extracting",
                k=version.source_key, c=created),
        }
        created_ok = self._transact([
            {"Update": document_update},
            {"Put": {"TableName": self.table, "Item": job,
                     "ConditionExpression": "attribute_not_exists(pk)"}},
        ])
        if not created_ok:
            raise ValueError(f"job {version.job_id} exists already")

    # --- split and read ------------------------------------------------------------------------

    _NO_PLAN = "attribute_exists(pk) AND attribute_not_exists(#units) AND #st = :queued"

    def add_units(self, job_id: str, units: Sequence[Unit], *, pages: int,
                  detected_format: str, done: Sequence[str] = (), attempt: int = 1) -> bool:
        now = now_iso()
        finished = set(done)
        names = {"#units": "units", "#st": "status"}
        check = {"ConditionCheck": {"TableName": self.table, "Key": job_key(job_id),
                                    "ConditionExpression": self._NO_PLAN,
                                    "ExpressionAttributeNames": names,
                                    "ExpressionAttributeValues": attr_values(queued="queued")}}
        for start in range(0, len(units), TRANSACTION_ITEMS - 1):
            puts = [{"Put": {"TableName": self.table, "Item": {
                **unit_key(job_id, u.unit_id),
                **{k: encode_value(v) for k, v in {
                    "job_id": job_id, "unit_id": u.unit_id, "kind": u.kind,
                    "first_page": u.first_page, "last_page": u.last_page,
                    "sheet_name": u.sheet_name, "updated_at": now,
                    **({"status": UnitStatus.DONE.value, "attempts": attempt, "sent_at": now}
                       if u.unit_id in finished else
                       {"status": UnitStatus.PENDING.value, "attempts": 0}),
                    }.items() if v is not None}}}}
                for u in units[start:start + TRANSACTION_ITEMS - 1]]
            if not self._transact([check, *puts]):
                return False
        return self._update(
            job_key(job_id),
            "SET pages = :p, #units = :u, detected_format = :f, updated_at = :now, "
            "last_progress_at = :now, stalled_s = :zero, n_done = :done",
            condition=self._NO_PLAN, names=names,
            values=attr_values(p=pages, u=len(units), f=detected_format, now=now, zero=0,
                           queued="queued", done=len(finished & {u.unit_id for u in units})))

    def set_job_error(self, job_id: str, error: str) -> bool:
        return self._update(
            job_key(job_id), "SET #err = :e, updated_at = :now",
            condition="attribute_not_exists(#err) AND #st IN (:q, :x)",
            names={"#err": "error", "#st": "status"},
            values=attr_values(e=error, now=now_iso(), q="queued", x="extracting"))

    def _unit_change(self, job_id: str, unit_id: str, new: UnitStatus, *,
                     attempt: int | None = None, error: tuple[str, str] | None = None,
                     owner: tuple[str, float] | None = None) -> bool:
        """One unit transition from an open status, with its job's progress, in a transaction.

        The unit is read first so that the job's counters move by the right amount; the
        transaction's condition (the status read) makes a concurrent change retry, not count
        twice."""
        for _ in range(5):
            unit = self.get_unit(job_id, unit_id)
            if unit is None or unit.status not in _OPEN:
                return False
            now = now_iso()
            sets = ["#st = :new", "updated_at = :now"]
            values = attr_values(new=new.value, now=now, old=unit.status.value)
            condition = "#st = :old"
            names = {"#st": "status"}
            if owner is not None:  # a read's claim: taken from no owner, ours, or a lapsed lease
                sets += ["#owner = :owner", "lease_until = :until"]
                clock = time.time()
                values.update(attr_values(owner=owner[0], until=clock + owner[1], clock=clock))
                condition += (" AND (attribute_not_exists(#owner) OR #owner = :owner "
                              "OR lease_until < :clock)")
                names["#owner"] = "owner"
            if attempt is not None:
                sets.append("attempts = :a")
                values.update(attr_values(a=attempt))
            if error is not None:
                sets += ["error_type = :et", "#err = :em"]
                values.update(attr_values(et=error[0], em=error[1]))
            delta = {"n_running": int(new is UnitStatus.RUNNING)
                     - int(unit.status is UnitStatus.RUNNING),
                     "n_done": int(new is UnitStatus.DONE),
                     "n_failed": int(new is UnitStatus.FAILED)}
            job_sets = "SET last_progress_at = :now, updated_at = :now, stalled_s = :zero"
            job_values = attr_values(now=now, zero=0, **{f"d_{k}": v for k, v in delta.items()})
            if error is not None:
                job_sets += ", first_failure = if_not_exists(first_failure, :et)"
                job_values.update(attr_values(et=error[0]))
            unit_update = {"TableName": self.table, "Key": unit_key(job_id, unit_id),
                           "UpdateExpression": "SET " + ", ".join(sets),
                           "ConditionExpression": condition,
                           "ExpressionAttributeNames": {**names,
                                                        **({"#err": "error"} if error else {})},
                           "ExpressionAttributeValues": values}
            job_update = {"TableName": self.table, "Key": job_key(job_id),
                          "UpdateExpression": job_sets + " ADD " + ", ".join(
                              f"{k} :d_{k}" for k in delta),
                          "ConditionExpression": "attribute_exists(pk)",
                          "ExpressionAttributeValues": job_values}
            if self._transact([{"Update": unit_update}, {"Update": job_update}]):
                return True
        return False

    def start_unit(self, job_id: str, unit_id: str, attempt: int) -> bool:
        return self._unit_change(job_id, unit_id, UnitStatus.RUNNING, attempt=attempt)

    def claim_unit(self, job_id: str, unit_id: str, attempt: int, owner: str,
                   lease_s: float) -> UnitClaim:
        """The claim is the transition's own condition (``_unit_change``); a refusal is told
        apart by reading the unit again: terminal, or held by a live owner."""
        for _ in range(3):
            if self._unit_change(job_id, unit_id, UnitStatus.RUNNING, attempt=attempt,
                                 owner=(owner, lease_s)):
                return UnitClaim.CLAIMED
            data = self._get(unit_key(job_id, unit_id))
            if not data or data.get("status") not in (s.value for s in _OPEN):
                return UnitClaim.CLOSED
            if (data.get("owner") not in (None, owner)
                    and float(data.get("lease_until", 0)) >= time.time()):
                return UnitClaim.HELD
        return UnitClaim.HELD  # kept changing under us: someone is at it; back off

    def renew_unit(self, job_id: str, unit_id: str, owner: str, lease_s: float) -> bool:
        return self._update(unit_key(job_id, unit_id), "SET lease_until = :until",
                            condition="#st = :running AND #owner = :owner",
                            names={"#st": "status", "#owner": "owner"},
                            values=attr_values(until=time.time() + lease_s, owner=owner,
                                               running=UnitStatus.RUNNING.value))

    def release_unit(self, job_id: str, unit_id: str, owner: str) -> bool:
        # Back to pending under our own name with a lapsed lease: the condition (ours, or
        # lapsed) refuses it when another delivery has taken the unit over meanwhile.
        data = self._get(unit_key(job_id, unit_id))
        if not data or data.get("status") != UnitStatus.RUNNING.value or data.get("owner") != owner:
            return False
        return self._unit_change(job_id, unit_id, UnitStatus.PENDING, owner=(owner, -1.0))

    def finish_unit(self, job_id: str, unit_id: str) -> bool:
        return self._unit_change(job_id, unit_id, UnitStatus.DONE)

    def fail_unit(self, job_id: str, unit_id: str, error_type: str, message: str) -> bool:
        return self._unit_change(job_id, unit_id, UnitStatus.FAILED,
                                 error=(error_type, message))

    # --- poller and indexer --------------------------------------------------------------------

    def active_jobs(self) -> list[JobProgress]:
        progress = []
        for data in self._index("active"):
            job = job_from_item(data)
            progress.append(JobProgress(
                job=job, units_planned=job.units or 0, units_done=data.get("n_done", 0),
                units_failed=data.get("n_failed", 0), units_running=data.get("n_running", 0),
                first_failure=data.get("first_failure")))
        return progress

    def schedule_retry(self, job_id: str, at: datetime) -> bool:
        return self._update(
            job_key(job_id), "SET retry_at = :at",
            condition="#st IN (:q, :x) AND (attribute_not_exists(retry_at) OR retry_at < :at)",
            names={"#st": "status"}, values=attr_values(at=at.isoformat(), q="queued",
                                                        x="extracting"))

    def add_stall(self, stalls: Sequence[tuple[str, float, datetime]]) -> int:
        changed = 0
        for job_id, seconds, since in stalls:
            changed += self._update(
                job_key(job_id), "SET updated_at = :now ADD stalled_s :s",
                condition="last_progress_at = :since AND #st IN (:q, :x)",
                names={"#st": "status"},
                values=attr_values(now=now_iso(), s=float(seconds), since=since.isoformat(),
                               q="queued", x="extracting"))
        return changed

    def transition_job(self, job_id: str, expected: JobStatus, new: JobStatus, *,
                       failure_reason: str | None = None, failure_detail: str | None = None,
                       at: datetime, unmoved_since: datetime | None = None) -> bool:
        stamp = at.isoformat()
        sets = {"#st": ":new", "updated_at": ":at", "gsi_event_due": ":one"}
        values = attr_values(new=new.value, at=stamp, one=shard_of(job_id),
                             expected=expected.value)
        removes = []
        for name, value in (("failure_reason", failure_reason),
                            ("failure_detail", failure_detail),
                            ("finished_at", stamp if new.terminal else None)):
            if value is None:
                removes.append(name)
            else:
                sets[name] = f":{name}"
                values.update(attr_values(**{name: value}))
        if new.terminal:
            removes.append("gsi_active")
        if new is JobStatus.SUCCEEDED:
            sets["gsi_to_index"] = ":one"
        expression = "SET " + ", ".join(f"{k} = {v}" for k, v in sets.items())
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        condition = "#st = :expected"
        if unmoved_since is not None:  # what the decision read, not the index's stale copy
            condition += (" AND last_progress_at = :since AND (attribute_not_exists(retry_at) "
                          "OR retry_at <= :at)")
            values.update(attr_values(since=unmoved_since.isoformat()))
        if not self._update(job_key(job_id), expression, condition=condition,
                            names={"#st": "status"}, values=values):
            return False
        if new.terminal:
            with mapped(f"dynamodb delete password {job_id}"):
                self.client.delete_item(TableName=self.table, Key=password_key(job_id))
            job = self.get_job(job_id)
            if job is not None:
                self._update(document_key(job.document_id), "SET #st = :new",
                             condition="latest_job_id = :j", names={"#st": "status"},
                             values=attr_values(new=new.value, j=job_id))
        return True

    def jobs_to_index(self) -> list[Job]:
        return [job_from_item(d) for d in self._index("to_index")]

    def mark_indexed(self, job_id: str, at: datetime) -> bool:
        return self._update(job_key(job_id), "SET indexed_at = :at REMOVE gsi_to_index",
                            condition="attribute_exists(pk) AND attribute_not_exists(indexed_at)",
                            values=attr_values(at=at.isoformat()))

    def mark_indexed_many(self, job_ids: Sequence[str], at: datetime) -> None:
        for job_id in job_ids:  # each a conditional write of its own (no batch form has one)
            self.mark_indexed(job_id, at)

    def mark_index_failed(self, job_id: str, error: str) -> bool:
        return self._update(job_key(job_id), "SET index_error = :e REMOVE gsi_to_index",
                            condition="attribute_exists(pk) AND attribute_not_exists(indexed_at)",
                            values=attr_values(e=error))

    def mark_index_sent(self, job_ids: Sequence[str]) -> None:
        now = now_iso()
        for job_id in job_ids:
            self._update(job_key(job_id), "SET index_sent_at = :now",
                         condition="attribute_exists(pk)", values=attr_values(now=now))

    def unsent_index_jobs(self) -> list[Job]:
        return [job_from_item(d) for d in self._index(
            "to_index", filter_expression="attribute_not_exists(index_sent_at)")]

    def mark_status_events(self, jobs: Sequence[tuple[str, JobStatus]]) -> None:
        for job_id, status in jobs:  # one conditional update a job: each has its own condition
            self._update(job_key(job_id), "SET status_event = :s REMOVE gsi_event_due",
                         condition="#st = :s", names={"#st": "status"},
                         values=attr_values(s=status.value))

    def jobs_missing_status_event(self) -> list[Job]:
        return [job_from_item(d) for d in self._index(
            "event_due", filter_expression="#st <> :queued", names={"#st": "status"},
            values=attr_values(queued="queued"))]

    def mark_units_sent(self, job_id: str, unit_ids: Sequence[str]) -> None:
        now = now_iso()
        for unit_id in unit_ids:
            self._update(unit_key(job_id, unit_id), "SET sent_at = :now",
                         condition="attribute_exists(pk)", values=attr_values(now=now))

    def unsent_units(self, job_id: str) -> list[Unit]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :unit)", ConsistentRead=True,
            FilterExpression="#st = :pending AND attribute_not_exists(sent_at)",
            ExpressionAttributeNames={"#st": "status"},
            ExpressionAttributeValues=attr_values(pk=f"job#{job_id}", unit="unit#",
                                              pending="pending"))
        return sorted((Unit(**{k: v for k, v in d.items() if k in _UNIT_FIELDS}) for d in items),
                      key=lambda u: u.unit_id)

    def mark_split_sent(self, job_ids: Sequence[str]) -> None:
        now = now_iso()
        for job_id in job_ids:
            self._update(job_key(job_id), "SET split_sent_at = :now REMOVE gsi_split_due",
                         condition="attribute_exists(pk)", values=attr_values(now=now))

    def unsent_jobs(self) -> list[Job]:
        return [job_from_item(d) for d in self._index(
            "split_due", filter_expression="#st = :queued", names={"#st": "status"},
            values=attr_values(queued="queued"))]

