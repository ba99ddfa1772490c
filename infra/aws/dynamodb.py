"""The job store on DynamoDB: the same conditional transitions as SQLite, as condition
expressions and transactions.

Where SQLite says ``UPDATE ... WHERE status IN (...)`` and reads the row count, this adapter says
``ConditionExpression`` and reads ``ConditionalCheckFailedException`` as False: a redelivered
message that finds its work done learns so without an error. A unit's change and its job's
progress (``last_progress_at``, the unit counters the poller reads) are one ``TransactWriteItems``,
so the poller never sees a unit done that its job does not count. Layout and indexes:
``infra.aws.tables``. Only ``infra.aws.errors`` decides what is transient.

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
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from extract.ports import NewVersion
from extract.state import (
    ClaimStatus,
    Document,
    FieldClaim,
    Job,
    JobProgress,
    JobStatus,
    Unit,
    UnitStatus,
)
from infra.aws.errors import error_code, is_condition_failure, mapped
from infra.aws.tables import (
    INDEXES,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTRIBUTE,
    attribute_definitions,
    global_secondary_indexes,
)

_SER = TypeSerializer()
_DES = TypeDeserializer()
ONE = "1"
TRANSACTION_ITEMS = 100
_OPEN = (UnitStatus.PENDING, UnitStatus.RUNNING)
_JOB_FIELDS = set(Job.model_fields)
_UNIT_FIELDS = set(Unit.model_fields)
_DOCUMENT_FIELDS = set(Document.model_fields)
_CLAIM_FIELDS = set(FieldClaim.model_fields)
_TIMES = ("created_at", "updated_at", "last_progress_at", "finished_at", "indexed_at",
          "fields_published_at", "claimed_at", "published_at")


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _decode(item: dict) -> dict[str, Any]:
    return {k: _plain(_DES.deserialize(v)) for k, v in item.items()}


decode_item = _decode
"""A DynamoDB item (or a stream image) as plain Python values (the publisher reads images)."""


def _encode(value: Any) -> dict:
    if isinstance(value, float):
        value = Decimal(repr(value))
    return _SER.serialize(value)


def _values(**values: Any) -> dict[str, dict]:
    return {f":{k}": _encode(v) for k, v in values.items()}


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


class DynamoJobStore:
    def __init__(self, client, table: str):
        self.client = client
        self.table = table

    # --- low-level -----------------------------------------------------------------------------

    def _get(self, key: dict) -> dict[str, Any] | None:
        with mapped(f"dynamodb get {self.table}"):
            item = self.client.get_item(TableName=self.table, Key=key,
                                        ConsistentRead=True).get("Item")
        return _decode(item) if item else None

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
                    yield _decode(item)

    def _index(self, name: str, *, filter_expression: str | None = None,
               values: dict | None = None, names: dict | None = None,
               newest_first: bool = False, hash_value: str = ONE) -> Iterator[dict[str, Any]]:
        hash_key = INDEXES[name][0]
        request: dict[str, Any] = {
            "IndexName": name, "KeyConditionExpression": "#h = :h",
            "ExpressionAttributeNames": {"#h": hash_key, **(names or {})},
            "ExpressionAttributeValues": {":h": {"S": hash_value}, **(values or {})},
            "ScanIndexForward": not newest_first,
        }
        if filter_expression:
            request["FilterExpression"] = filter_expression
        return self._query(**request)

    # --- reading -------------------------------------------------------------------------------

    def get_document(self, document_id: str) -> Document | None:
        data = self._get(document_key(document_id))
        if data is None:
            return None
        fields = {k: v for k, v in data.items() if k in _DOCUMENT_FIELDS}
        fields["created_at"] = datetime.fromisoformat(fields["created_at"])
        return Document(**fields)

    def get_job(self, job_id: str) -> Job | None:
        data = self._get(job_key(job_id))
        return job_from_item(data) if data else None

    def get_unit(self, job_id: str, unit_id: str) -> Unit | None:
        data = self._get(unit_key(job_id, unit_id))
        return Unit(**{k: v for k, v in data.items() if k in _UNIT_FIELDS}) if data else None

    def list_units(self, job_id: str) -> list[Unit]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :unit)", ConsistentRead=True,
            ExpressionAttributeValues=_values(pk=f"job#{job_id}", unit="unit#"))
        units = [Unit(**{k: v for k, v in d.items() if k in _UNIT_FIELDS}) for d in items]
        return sorted(units, key=lambda u: u.unit_id)

    def list_jobs(self, job_ids: Sequence[str] | None = None) -> list[Job]:
        found: list[dict[str, Any]] = []
        if job_ids is None:
            with mapped(f"dynamodb scan {self.table}"):
                pages = self.client.get_paginator("scan").paginate(
                    TableName=self.table, FilterExpression="sk = :job",
                    ExpressionAttributeValues=_values(job="job"), ConsistentRead=True)
                found = [_decode(i) for page in pages for i in page.get("Items", [])]
        else:
            ids = list(dict.fromkeys(job_ids))
            for start in range(0, len(ids), 100):
                keys = [job_key(j) for j in ids[start:start + 100]]
                request = {self.table: {"Keys": keys, "ConsistentRead": True}}
                while request:
                    with mapped(f"dynamodb batch get {self.table}"):
                        answer = self.client.batch_get_item(RequestItems=request)
                    found += [_decode(i) for i in answer["Responses"].get(self.table, [])]
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
            **{k: _encode(v) for k, v in {
                "job_id": version.job_id, "document_id": version.document_id,
                "status": JobStatus.QUEUED.value, "object_key": version.object_key,
                "source_name": version.source_name, "job_sha256": version.sha256,
                "created_at": created, "updated_at": created, "last_progress_at": created,
                "stalled_s": 0, "n_done": 0, "n_failed": 0, "n_running": 0,
                "gsi_active": ONE, "gsi_split_due": ONE}.items()},
        }
        document_update = {
            "TableName": self.table, "Key": document_key(version.document_id),
            "UpdateExpression": (
                "SET document_id = :d, source_name = :n, sha256 = :s, #b = :b, version = :v, "
                "latest_job_id = :j, #st = :st, source_key = if_not_exists(source_key, :k), "
                "created_at = if_not_exists(created_at, :c)"),
            "ExpressionAttributeNames": {"#b": "bytes", "#st": "status"},
            "ExpressionAttributeValues": _values(
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
                  detected_format: str) -> bool:
        now = _now()
        names = {"#units": "units", "#st": "status"}
        check = {"ConditionCheck": {"TableName": self.table, "Key": job_key(job_id),
                                    "ConditionExpression": self._NO_PLAN,
                                    "ExpressionAttributeNames": names,
                                    "ExpressionAttributeValues": _values(queued="queued")}}
        for start in range(0, len(units), TRANSACTION_ITEMS - 1):
            puts = [{"Put": {"TableName": self.table, "Item": {
                **unit_key(job_id, u.unit_id),
                **{k: _encode(v) for k, v in {
                    "job_id": job_id, "unit_id": u.unit_id, "kind": u.kind,
                    "first_page": u.first_page, "last_page": u.last_page,
                    "sheet_name": u.sheet_name, "status": UnitStatus.PENDING.value,
                    "attempts": 0, "updated_at": now}.items() if v is not None}}}}
                for u in units[start:start + TRANSACTION_ITEMS - 1]]
            if not self._transact([check, *puts]):
                return False
        return self._update(
            job_key(job_id),
            "SET pages = :p, #units = :u, detected_format = :f, updated_at = :now, "
            "last_progress_at = :now, stalled_s = :zero",
            condition=self._NO_PLAN, names=names,
            values=_values(p=pages, u=len(units), f=detected_format, now=now, zero=0,
                           queued="queued"))

    def set_job_error(self, job_id: str, error: str) -> bool:
        return self._update(
            job_key(job_id), "SET #err = :e, updated_at = :now",
            condition="attribute_not_exists(#err) AND #st IN (:q, :x)",
            names={"#err": "error", "#st": "status"},
            values=_values(e=error, now=_now(), q="queued", x="extracting"))

    def _unit_change(self, job_id: str, unit_id: str, new: UnitStatus, *,
                     attempt: int | None = None, error: tuple[str, str] | None = None) -> bool:
        """One unit transition from an open status, with its job's progress, in a transaction.

        The unit is read first so that the job's counters move by the right amount; the
        transaction's condition (the status read) makes a concurrent change retry, not count
        twice."""
        for _ in range(5):
            unit = self.get_unit(job_id, unit_id)
            if unit is None or unit.status not in _OPEN:
                return False
            now = _now()
            sets = ["#st = :new", "updated_at = :now"]
            values = _values(new=new.value, now=now, old=unit.status.value)
            if attempt is not None:
                sets.append("attempts = :a")
                values.update(_values(a=attempt))
            if error is not None:
                sets += ["error_type = :et", "#err = :em"]
                values.update(_values(et=error[0], em=error[1]))
            delta = {"n_running": int(new is UnitStatus.RUNNING)
                     - int(unit.status is UnitStatus.RUNNING),
                     "n_done": int(new is UnitStatus.DONE),
                     "n_failed": int(new is UnitStatus.FAILED)}
            job_sets = "SET last_progress_at = :now, updated_at = :now, stalled_s = :zero"
            job_values = _values(now=now, zero=0, **{f"d_{k}": v for k, v in delta.items()})
            if error is not None:
                job_sets += ", first_failure = if_not_exists(first_failure, :et)"
                job_values.update(_values(et=error[0]))
            unit_update = {"TableName": self.table, "Key": unit_key(job_id, unit_id),
                           "UpdateExpression": "SET " + ", ".join(sets),
                           "ConditionExpression": "#st = :old",
                           "ExpressionAttributeNames": {"#st": "status",
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

    def add_stall(self, stalls: Sequence[tuple[str, float, datetime]]) -> int:
        changed = 0
        for job_id, seconds, since in stalls:
            changed += self._update(
                job_key(job_id), "SET updated_at = :now ADD stalled_s :s",
                condition="last_progress_at = :since AND #st IN (:q, :x)",
                names={"#st": "status"},
                values=_values(now=_now(), s=float(seconds), since=since.isoformat(),
                               q="queued", x="extracting"))
        return changed

    def transition_job(self, job_id: str, expected: JobStatus, new: JobStatus, *,
                       failure_reason: str | None = None, failure_detail: str | None = None,
                       at: datetime) -> bool:
        stamp = at.isoformat()
        sets = {"#st": ":new", "updated_at": ":at", "gsi_event_due": ":one"}
        values = _values(new=new.value, at=stamp, one=ONE, expected=expected.value)
        removes = []
        for name, value in (("failure_reason", failure_reason),
                            ("failure_detail", failure_detail),
                            ("finished_at", stamp if new.terminal else None)):
            if value is None:
                removes.append(name)
            else:
                sets[name] = f":{name}"
                values.update(_values(**{name: value}))
        if new.terminal:
            removes.append("gsi_active")
        if new is JobStatus.SUCCEEDED:
            sets["gsi_to_index"] = ":one"
        expression = "SET " + ", ".join(f"{k} = {v}" for k, v in sets.items())
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        if not self._update(job_key(job_id), expression, condition="#st = :expected",
                            names={"#st": "status"}, values=values):
            return False
        if new.terminal:
            with mapped(f"dynamodb delete password {job_id}"):
                self.client.delete_item(TableName=self.table, Key=password_key(job_id))
            job = self.get_job(job_id)
            if job is not None:
                self._update(document_key(job.document_id), "SET #st = :new",
                             condition="latest_job_id = :j", names={"#st": "status"},
                             values=_values(new=new.value, j=job_id))
        return True

    # --- a job's own password: an item beside the job (never in the job item, so never in a
    # job's stream image or a ``Job``), readable only while the job runs, deleted when it ends.

    def set_job_password(self, job_id: str, password: str) -> bool:
        return self._transact([
            {"ConditionCheck": {
                "TableName": self.table, "Key": job_key(job_id),
                "ConditionExpression": "attribute_exists(pk) AND #st IN (:q, :x)",
                "ExpressionAttributeNames": {"#st": "status"},
                "ExpressionAttributeValues": _values(q="queued", x="extracting")}},
            {"Put": {"TableName": self.table, "Item": {
                **password_key(job_id), "password": {"S": password},
                TTL_ATTRIBUTE: {"N": str(int(time.time() + PASSWORD_TTL_S))}}}}])

    def job_password(self, job_id: str) -> str | None:
        job = self.get_job(job_id)
        if job is None or job.status.terminal:
            return None
        data = self._get(password_key(job_id))
        return str(data["password"]) if data else None

    def jobs_to_index(self) -> list[Job]:
        return [job_from_item(d) for d in self._index("to_index")]

    def mark_indexed(self, job_id: str, at: datetime) -> bool:
        return self._update(job_key(job_id), "SET indexed_at = :at REMOVE gsi_to_index",
                            condition="attribute_exists(pk) AND attribute_not_exists(indexed_at)",
                            values=_values(at=at.isoformat()))

    def mark_index_failed(self, job_id: str, error: str) -> bool:
        return self._update(job_key(job_id), "SET index_error = :e REMOVE gsi_to_index",
                            condition="attribute_exists(pk) AND attribute_not_exists(indexed_at)",
                            values=_values(e=error))

    def mark_index_sent(self, job_ids: Sequence[str]) -> None:
        now = _now()
        for job_id in job_ids:
            self._update(job_key(job_id), "SET index_sent_at = :now",
                         condition="attribute_exists(pk)", values=_values(now=now))

    def unsent_index_jobs(self) -> list[Job]:
        return [job_from_item(d) for d in self._index(
            "to_index", filter_expression="attribute_not_exists(index_sent_at)")]

    def mark_status_event(self, job_id: str, status: JobStatus) -> None:
        self._update(job_key(job_id), "SET status_event = :s REMOVE gsi_event_due",
                     condition="#st = :s", names={"#st": "status"}, values=_values(s=status.value))

    def jobs_missing_status_event(self) -> list[Job]:
        return [job_from_item(d) for d in self._index(
            "event_due", filter_expression="#st <> :queued", names={"#st": "status"},
            values=_values(queued="queued"))]

    def mark_units_sent(self, job_id: str, unit_ids: Sequence[str]) -> None:
        now = _now()
        for unit_id in unit_ids:
            self._update(unit_key(job_id, unit_id), "SET sent_at = :now",
                         condition="attribute_exists(pk)", values=_values(now=now))

    def unsent_units(self, job_id: str) -> list[Unit]:
        items = self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :unit)", ConsistentRead=True,
            FilterExpression="#st = :pending AND attribute_not_exists(sent_at)",
            ExpressionAttributeNames={"#st": "status"},
            ExpressionAttributeValues=_values(pk=f"job#{job_id}", unit="unit#",
                                              pending="pending"))
        return sorted((Unit(**{k: v for k, v in d.items() if k in _UNIT_FIELDS}) for d in items),
                      key=lambda u: u.unit_id)

    def mark_split_sent(self, job_ids: Sequence[str]) -> None:
        now = _now()
        for job_id in job_ids:
            self._update(job_key(job_id), "SET split_sent_at = :now REMOVE gsi_split_due",
                         condition="attribute_exists(pk)", values=_values(now=now))

    def unsent_jobs(self) -> list[Job]:
        return [job_from_item(d) for d in self._index(
            "split_due", filter_expression="#st = :queued", names={"#st": "status"},
            values=_values(queued="queued"))]

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
            values = _values(s=schema, st=strategy, one=ONE)
            if published:
                expression += ", fields_published_at = :p REMOVE fields_sent_at, gsi_fields_due, " \
                              "gsi_fields_pending"
                values.update(_values(p=published))
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
            names={"#st": "status"}, values=_values(failed="failed", ok="succeeded"))]
        return sorted(jobs, key=lambda j: j.finished_at or j.created_at)

    def mark_fields_sent(self, job_ids: Sequence[str]) -> None:
        now = _now()
        for job_id in job_ids:
            self._update(job_key(job_id), "SET fields_sent_at = :now REMOVE gsi_fields_due",
                         condition="attribute_exists(pk)", values=_values(now=now))

    def claim_fields(self, job_id: str, strategy: str, *, document_id: str, claimant: str,
                     at: datetime) -> bool:
        item = {**claim_key(job_id, strategy), **{k: _encode(v) for k, v in {
            "job_id": job_id, "strategy": strategy, "document_id": document_id,
            "status": ClaimStatus.CLAIMED.value, "claimant": claimant,
            "claimed_at": at.isoformat()}.items()}}
        try:
            with mapped(f"dynamodb claim {job_id}/{strategy}"):
                self.client.put_item(TableName=self.table, Item=item,
                                     ConditionExpression="attribute_not_exists(pk)")
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
                    ExpressionAttributeValues=_values(claimed="claimed", me=claimant))
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
        values = _values(new=status.value, r=result, at=at.isoformat(), one=ONE,
                         claimed="claimed", d=document_id, j=job_id, st=strategy)
        if claimant is not None:
            condition = "#st = :claimed AND claimant = :me"
            values.update(_values(me=claimant))
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
            "ExpressionAttributeValues": _values(at=stamp, claimed="claimed")}}
        job = self._get(job_key(job_id))
        items = [claim_update]
        if job and job.get("fields_strategy") == strategy and not job.get("fields_published_at"):
            items.append({"Update": {
                "TableName": self.table, "Key": job_key(job_id),
                "UpdateExpression": "SET fields_published_at = :at "
                                    "REMOVE gsi_fields_due, gsi_fields_pending",
                "ConditionExpression": "fields_strategy = :st",
                "ExpressionAttributeValues": _values(at=stamp, st=strategy)}})
        return self._transact(items)

    def fields_pending(self) -> int:
        return sum(1 for _ in self._index(
            "fields_pending", filter_expression="#st IN (:ok, :failed)", names={"#st": "status"},
            values=_values(ok="succeeded", failed="failed")))

    # --- the poller's lease --------------------------------------------------------------------

    def acquire_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """One conditional put: the lease is free, ours, or expired. DynamoDB's TTL removes
        abandoned lease items a day later (TTL is lazy, so expiry is checked here, not left to
        it)."""
        now = time.time()
        item = {**lease_key(name), "holder": {"S": holder},
                "expires_at": _encode(now + ttl_s),
                TTL_ATTRIBUTE: {"N": str(int(now + ttl_s + 86_400))}}
        try:
            with mapped(f"dynamodb lease {name}"):
                self.client.put_item(
                    TableName=self.table, Item=item,
                    ConditionExpression="attribute_not_exists(pk) OR holder = :h OR expires_at < :now",
                    ExpressionAttributeValues=_values(h=holder, now=now))
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
                                        ExpressionAttributeValues=_values(h=holder))
        except Exception as error:
            if not is_condition_failure(error):
                raise


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
