"""Documents to label: a stratified sample of recent results, written as a labelling sheet.

Strata are (model_version, strategy, format, size bucket): every stratum present gets at least
one document when ``n`` allows, the rest is shared in proportion to the strata's sizes, and the
draw is seeded, so the sheet is reproducible. The sheet is the label CSV layout: blind (one empty
row per field, no model values: the default), or pre-filled (``value`` = ``extracted``, one row
per value plus one empty row per field with no value); the labeller fills or corrects ``value``
and adds rows, then imports the file. Every row carries the version's ``sha256``, which binds the
answer to the bytes read, and the sheet's ``provenance`` (blind or pre-filled).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path

from evals.csv_cells import neutralise

__all__ = ["size_bucket", "stratified", "write_sheet", "sample_candidates", "SHEET_COLUMNS"]

SHEET_COLUMNS = ("document_id", "sha256", "source_name", "model_version", "strategy", "field",
                 "extracted", "value", "page_number", "provenance")


def size_bucket(pages: int | None) -> str:
    if pages is None:
        return "unknown"
    return next(name for limit, name in ((5, "1-5"), (20, "6-20"), (100, "21-100"))
                if pages <= limit) if pages <= 100 else "over 100"


def stratified(candidates: Sequence[dict], n: int, seed: int = 13) -> list[dict]:
    """``candidates``: dicts with model_version, strategy, detected_format, pages."""
    strata: dict[tuple, list[dict]] = {}
    for row in sorted(candidates, key=lambda r: r["document_id"]):
        key = (row.get("model_version") or "", row["strategy"], row.get("detected_format") or "",
               size_bucket(row.get("pages")))
        strata.setdefault(key, []).append(row)
    rng = random.Random(seed)
    for rows in strata.values():
        rng.shuffle(rows)
    total = sum(len(rows) for rows in strata.values())
    if n >= total:
        return [row for key in sorted(strata) for row in strata[key]]
    quota = {key: (1 if n >= len(strata) else 0) for key in strata}
    left = n - sum(quota.values())
    shares = sorted(strata, key=lambda k: -len(strata[k]) * left / total % 1)
    for key in strata:
        quota[key] += min(len(strata[key]) - quota[key], int(len(strata[key]) * left / total))
    for key in shares:  # the remainder to the largest fractional shares
        if sum(quota.values()) >= n:
            break
        if quota[key] < len(strata[key]):
            quota[key] += 1
    picked = [row for key in sorted(strata) for row in strata[key][:quota[key]]]
    return picked[:n]


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
                      include_labelled: bool = False) -> list[dict]:
    """Documents that may be drawn: each one's latest result (published since ``since``), with
    the document's name, format and pages, leaving out labelled documents unless asked (a
    stale label, of an older version, does not count)."""
    from evals.lakeio import read_current_versions, read_labels, read_results, read_rows
    from evals.scoring import split_stale

    documents = {r["document_id"]: r for r in read_rows(lake_uri, """
        SELECT d.document_id, d.sha256, d.source_name, d.detected_format, j.pages
        FROM documents AS d LEFT JOIN jobs AS j ON j.dt = d.dt AND j.job_id = d.latest_job_id""")}
    # a document whose only label is stale (of an older version) is drawn again
    labelled = set() if include_labelled else {x.document_id for x in split_stale(
        read_labels(lake_uri), read_current_versions(lake_uri))[0]}
    latest = {}
    for r in sorted(read_results(lake_uri), key=lambda r: r.published_at):
        if (since is None or r.published_at >= since) and r.document_id not in labelled:
            latest[r.document_id] = r
    # the version whose result is shown: its sha256 binds the labeller's answer to those bytes
    return [{**documents.get(d, {}), "document_id": d, "model_version": r.model_version,
             "strategy": r.strategy, "schema_name": r.schema_name, "values": r.values,
             "job_id": r.job_id, "sha256": r.sha256 or documents.get(d, {}).get("sha256")}
            for d, r in latest.items()]
