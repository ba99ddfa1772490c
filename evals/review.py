"""A review sheet: the values most worth a second look, chosen the way the data says works.

Where a field's confidence ranks errors (``evals.confidence``: its AUROC on the labelled
documents is clearly above chance) the sheet takes that field's least confident values first,
so a reviewer meets the errors soonest; where it does not (a date whose AUROC is 0.64 is close
to chance) ordering by confidence would only look informed, so the field's values are drawn at
random. Every row says which rule chose it (``selected_by``), and the command prints it per
field. The sheet imports like any label sheet: a reviewer corrects ``value`` (one row per
value; add rows for a missing party) and the label covers the reviewed fields only.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evals.confidence import FieldConfidence
from evals.csv_cells import neutralise
from evals.sample import SHEET_COLUMNS

__all__ = ["REVIEW_COLUMNS", "Item", "choose", "rule_of", "write_review"]

REVIEW_COLUMNS = (*SHEET_COLUMNS, "confidence", "selected_by")


@dataclass(frozen=True)
class Item:
    candidate: Mapping
    field: str
    confidence: float | None
    selected_by: str


def rule_of(found: FieldConfidence | None) -> str:
    """How a field's values are chosen, and why, in words a reviewer reads on the sheet."""
    if found is None or found.auroc is None:
        return "random (no AUROC yet: no labelled right and wrong values with a confidence)"
    if found.ranks_errors:
        return f"lowest confidence first (AUROC {found.auroc:.3f}: confidence ranks errors)"
    return f"random (AUROC {found.auroc:.3f}: {found.why_not})"


def choose(candidates: Sequence[Mapping], figures: Sequence[FieldConfidence], n: int,
           seed: int = 13) -> tuple[list[Item], dict[str, str]]:
    """Up to ``n`` (document, field) items per field, and each field's rule. A document's
    field is an item when it has a value; its confidence is its least confident value's."""
    by_key = {(f.model_version, f.strategy, f.field): f for f in figures}
    pool: dict[str, list[tuple[Mapping, float | None, FieldConfidence | None]]] = {}
    for row in sorted(candidates, key=lambda r: r["document_id"]):
        for name, values in sorted((row.get("values") or {}).items()):
            if not values:
                continue
            sure = [c for c in (row.get("confidences") or {}).get(name, ()) if c is not None]
            found = by_key.get((row.get("model_version") or "", row["strategy"], name))
            pool.setdefault(name, []).append((row, min(sure) if sure else None, found))
    rng = random.Random(seed)
    items, rules = [], {}
    for name, rows in sorted(pool.items()):
        found = next((f for _, _, f in rows if f is not None), None)
        rules[name] = rule_of(found)
        if found is not None and found.ranks_errors:
            chosen = sorted(rows, key=lambda x: (x[1] is None, x[1] if x[1] is not None else 0,
                                                 x[0]["document_id"]))[:n]
        else:
            chosen = rng.sample(rows, min(n, len(rows)))
        items += [Item(row, name, sure, rules[name]) for row, sure, _ in chosen]
    return items, rules


def write_review(path: Path, items: Sequence[Item]) -> int:
    """One row per value of each item's field (pre-filled: the reviewer corrects ``value``),
    provenance ``reviewer``; returns the rows written."""
    count = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(REVIEW_COLUMNS)
        for item in items:
            row = item.candidate
            sure = list((row.get("confidences") or {}).get(item.field, ()))
            for k, (value, page) in enumerate(row["values"][item.field]):
                writer.writerow([neutralise(cell) for cell in (
                    row["document_id"], row.get("sha256") or "", row.get("source_name") or "",
                    row.get("model_version") or "", row["strategy"], item.field, value, value,
                    "" if page is None else page, "reviewer",
                    "" if k >= len(sure) or sure[k] is None else f"{sure[k]:.4f}",
                    item.selected_by)])
                count += 1
    return count
