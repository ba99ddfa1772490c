"""Which files compaction rewrites, and which of their rows it keeps: pure decisions on row
counts, keys and schemas, with no file in sight, so they can be tested (and reasoned about) alone.

``lake.compaction`` runs them between listing a partition and rewriting it
(``lake.compaction_files``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake.events import EVENT_TYPES
from lake.schema import arrow_schema

__all__ = ["KEY_COLUMNS", "TIER_BASE_ROWS", "FANOUT", "tier", "choose_inputs", "output_schema",
           "keep_masks"]

KEY_COLUMNS = ("event_id", "occurred_at")
"""The columns that decide which copy of an event is kept."""

TIER_BASE_ROWS = 10_000
FANOUT = 4


def tier(rows: int, base_rows: int = TIER_BASE_ROWS, fanout: int = FANOUT) -> int:
    """A file's size tier: 0 below ``base_rows`` (the writer's flushes), then one tier per
    factor of ``fanout``: tier k holds files of ``base_rows * fanout**(k-1)`` rows and up."""
    level, bound = 0, base_rows
    while rows >= bound:
        level, bound = level + 1, bound * fanout
    return level


def choose_inputs(rows: list[int], *, min_files: int, target_rows: int,
                  base_rows: int = TIER_BASE_ROWS, fanout: int = FANOUT) -> list[int]:
    """Which files of a partition to rewrite (indexes into ``rows``), size-tiered.

    Files of ``target_rows`` or more are done. The others are grouped by ``tier``; tier 0 (the
    writer's small files) is merged once it has ``min_files`` files, and a higher tier once it
    has ``fanout`` files. So a run rewrites the new small files (and a tier-0 output of at most
    ``base_rows`` rows), not the partition: a row is rewritten about once per tier over its
    life, ``log(target_rows / base_rows) / log(fanout)`` times, instead of on every run.
    Duplicates between tiers stay until their tiers merge; the views drop them meanwhile."""
    tiers: dict[int, list[int]] = {}
    for index, count in enumerate(rows):
        if count < target_rows:
            tiers.setdefault(tier(count, base_rows, fanout), []).append(index)
    chosen = []
    for level, members in sorted(tiers.items()):
        if len(members) >= (min_files if level == 0 else max(fanout, min_files)):
            chosen += members
    return sorted(chosen)


def output_schema(event_type: str, schemas: list[pa.Schema]) -> pa.Schema:
    """Today's schema first, then any column an input has that today's model lacks (never lost)."""
    cls = EVENT_TYPES.get(event_type)
    if cls is None:
        return pa.unify_schemas(schemas)
    current = arrow_schema(cls)
    return pa.unify_schemas([current, *schemas]).with_metadata(current.metadata)


def keep_masks(keys: pa.Table, rows: list[int]) -> list[np.ndarray]:
    """Per input, which rows to keep: the earliest row of each event_id, ties to the first file
    (files are in name order: earlier compactions first, then writes in time order)."""
    total = keys.num_rows
    table = keys.append_column("order", pa.array(np.arange(total, dtype=np.int64)))
    order = pc.sort_indices(table, sort_keys=[
        ("event_id", "ascending"), ("occurred_at", "ascending"), ("order", "ascending")])
    sorted_ids = pc.take(table["event_id"], order).combine_chunks()
    first = pc.fill_null(pc.not_equal(sorted_ids[1:], sorted_ids[:-1]), True)
    first_of_run = np.concatenate([[True], first.to_numpy(zero_copy_only=False)])[:total]
    keep = np.zeros(total, dtype=bool)
    keep[order.to_numpy()[first_of_run]] = True
    bounds = np.cumsum([0, *rows])
    return [keep[bounds[i]:bounds[i + 1]] for i in range(len(rows))]
