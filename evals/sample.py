"""Documents to label: a stratified sample of recent results, written as a labelling sheet.

Only documents that can be scored are drawn (their latest job succeeded and their result is not
an infrastructure failure), unless asked: a label of a corrupt or encrypted file can never be
scored. Strata are (applicability, format) (``draw``): every stratum present gets a document
when ``n`` allows and the rest goes to the documents the schema applies to, which carry the
values the figure is about; the draw is seeded, so the sheet is reproducible.

The sheet is the label CSV layout: blind (one empty
row per field, no model values: the default), or pre-filled (``value`` = ``extracted``, one row
per value plus one empty row per field with no value); the labeller fills or corrects ``value``
and adds rows, then imports the file. Every row carries the version's ``sha256``, which binds the
answer to the bytes read, and the sheet's ``provenance`` (blind or pre-filled).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from evals.csv_cells import neutralise

__all__ = ["Design", "applicability", "draw", "size_bucket", "stratified", "stratum_of",
           "write_sheet", "sample_candidates", "SHEET_COLUMNS"]

SHEET_COLUMNS = ("document_id", "sha256", "source_name", "model_version", "strategy", "field",
                 "extracted", "value", "page_number", "provenance")


def size_bucket(pages: int | None) -> str:
    if pages is None:
        return "unknown"
    return next(name for limit, name in ((5, "1-5"), (20, "6-20"), (100, "21-100"))
                if pages <= limit) if pages <= 100 else "over 100"


def applicability(row: Mapping) -> str:
    """``applies`` or ``not applicable`` (the schema's verdict on the document, from its
    result), or ``failed`` when the document failed before a model could see it."""
    from evals.scoring import INFRASTRUCTURE_FAILURES

    if row.get("status") == "not_applicable":
        return "not applicable"
    if row.get("status") == "failed" and row.get("failure_reason") in INFRASTRUCTURE_FAILURES:
        return "failed"
    return "applies"


def stratum_of(row: Mapping) -> tuple[str, str]:
    """(applicability, detected format): the strata of the sample and of the weighted F1."""
    return (applicability(row), row.get("detected_format") or "unknown")


@dataclass(frozen=True)
class Design:
    """How a sample was drawn: each stratum's candidates and documents drawn."""

    strata: tuple[tuple[tuple[str, str], int, int], ...]
    """(stratum, candidates, drawn)."""

    def lines(self) -> list[str]:
        head = ("design: stratified by applicability and format; one document per stratum, "
                "the rest to the strata the schema applies to, in proportion to their size "
                "(documents the schema does not apply to hold no value to score)")
        return [head, *[f"  {a}, {f}: {drawn} of {n}" for (a, f), n, drawn in self.strata]]


def stratified(candidates: Sequence[dict], n: int, seed: int = 13) -> list[dict]:
    """``candidates``: dicts with status and detected_format (``stratum_of``)."""
    return draw(candidates, n, seed)[0]


def draw(candidates: Sequence[dict], n: int, seed: int = 13) -> tuple[list[dict], Design]:
    """A sample designed for the F1: every stratum (``stratum_of``) gets one document when
    ``n`` allows, the rest goes to the strata the schema applies to in proportion to their
    sizes (largest remainders), since only those carry values to score; strata the schema does
    not apply to get more only when the applicable ones run out. Seeded: reproducible."""
    strata: dict[tuple, list[dict]] = {}
    for row in sorted(candidates, key=lambda r: r["document_id"]):
        strata.setdefault(stratum_of(row), []).append(row)
    rng = random.Random(seed)
    for rows in strata.values():
        rng.shuffle(rows)
    quota = dict.fromkeys(strata, 0)
    for key in sorted(strata, key=lambda k: (k[0] != "applies", -len(strata[k]), k))[:n]:
        quota[key] = 1
    for pool in ([k for k in strata if k[0] == "applies"], list(strata)):
        left = n - sum(quota.values())
        room = {k: len(strata[k]) - quota[k] for k in pool if len(strata[k]) > quota[k]}
        total = sum(room.values())
        if left <= 0 or not total:
            continue
        exact = {k: min(room[k], left * room[k] / total) for k in room}
        for k in room:
            quota[k] += int(exact[k])
        for k in sorted(room, key=lambda k: (-(exact[k] % 1), k)):  # largest remainders
            if sum(quota.values()) >= n:
                break
            if quota[k] < len(strata[k]):
                quota[k] += 1
    picked = [row for key in sorted(strata) for row in strata[key][:quota[key]]]
    return picked, Design(tuple((k, len(strata[k]), quota[k]) for k in sorted(strata)))


def write_sheet(path: Path, picked: Iterable[dict],
                fields: Sequence[str] | Callable[[dict], Sequence[str]], *,
                blind: bool = False) -> int:
    """One CSV row per extracted value, and one empty row per field without a value; ``blind``:
    one empty row per field, no extracted value, model or page (the labeller reads the
    document, not the model's answer). A cell that a spreadsheet would run as a formula is
    written as text (``evals.csv_cells``)."""
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(SHEET_COLUMNS)
        for row in picked:
            base = [row["document_id"], row.get("sha256") or "", row.get("source_name") or "",
                    "" if blind else row.get("model_version") or "",
                    "" if blind else row["strategy"]]
            values = {} if blind else row.get("values") or {}
            names = fields(row) if callable(fields) else fields  # each document's own schema
            for name in [*names, *sorted(set(values) - set(names))]:
                for value, page in values.get(name) or [("", None)]:
                    writer.writerow([neutralise(cell) for cell in (
                        *base, name, value, value, "" if page is None else page,
                        "blind" if blind else "pre-filled")])
            count += 1
    return count


def sample_candidates(lake_uri: str, since: datetime | None = None, *,
                      include_labelled: bool = False,
                      include_unscorable: bool = False) -> list[dict]:
    """Documents that may be drawn: each one's latest result (published since ``since``), with
    the document's name, format, pages and latest job's status, leaving out labelled documents
    unless asked (a stale label, of an older version, does not count) and documents that cannot
    be scored (latest job not succeeded, or an infrastructure failure) unless asked."""
    from evals.lakeio import read_current_versions, read_labels, read_results, read_rows
    from evals.scoring import split_stale

    documents = {r["document_id"]: r for r in read_rows(lake_uri, """
        SELECT d.document_id, d.sha256, d.source_name, d.detected_format, j.pages,
               d.status AS job_status
        FROM documents AS d LEFT JOIN jobs AS j ON j.dt = d.dt AND j.job_id = d.latest_job_id""")}
    # a document whose only label is stale (of an older version) is drawn again
    labelled = set() if include_labelled else {x.document_id for x in split_stale(
        read_labels(lake_uri), read_current_versions(lake_uri))[0]}
    latest = {}
    for r in sorted(read_results(lake_uri), key=lambda r: r.published_at):
        if (since is None or r.published_at >= since) and r.document_id not in labelled:
            latest[r.document_id] = r

    def scorable(document_id: str) -> bool:
        job = documents.get(document_id, {}).get("job_status")
        return job == "succeeded" and not latest[document_id].infrastructure_failure

    # the version whose result is shown: its sha256 binds the labeller's answer to those bytes
    return [{**documents.get(d, {}), "document_id": d, "model_version": r.model_version,
             "strategy": r.strategy, "schema_name": r.schema_name, "values": r.values,
             "status": r.status, "failure_reason": r.failure_reason, "job_id": r.job_id,
             "confidences": r.confidences,
             "sha256": r.sha256 or documents.get(d, {}).get("sha256")}
            for d, r in latest.items() if include_unscorable or scorable(d)]
