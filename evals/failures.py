"""Failure samples: every token that was not a hit, with the page where the value occurs.

The page of a wrong or spurious value is where the extractor says it found it
(``result_fields.page_number``); for a missed gold value it is searched in the stored page
text, loosely (case, commas, '&'/'and', '_' and spacing ignored), because a reviewer wants to
open the page that proves the label, and None says the text never spells it that way (a date
written 'January 1, 2020' for 2020-01-01, or a scan without text).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from evals.scoring import Scored

__all__ = ["Failure", "failures", "find_page", "loose_text", "markdown"]

PageReader = Callable[[str, str], Sequence[tuple[int, str]]]
"""(document_id, job_id) -> [(page_number, text), ...]"""


@dataclass(frozen=True)
class Failure:
    document_id: str
    job_id: str
    model_version: str
    strategy: str
    field: str
    outcome: str
    expected: str | None
    got: str | None
    expected_page: int | None
    got_page: int | None


def loose_text(text: str) -> str:
    text = text.lower().replace("&", " and ").replace("_", " ")
    return " ".join(re.sub(r"[,\s]+", " ", text).split())


def find_page(value: str, pages: Sequence[tuple[int, str]]) -> int | None:
    needle = loose_text(value)
    if not needle:
        return None
    for number, text in pages:
        if needle in loose_text(text):
            return number
    return None


def failures(scored: Iterable[Scored], read_pages: PageReader | None = None, *,
             field: str | None = None) -> list[Failure]:
    out = []
    for row in scored:
        pages: Sequence[tuple[int, str]] | None = None
        for o in row.outcomes:
            if o.outcome == "hit" or (field and o.field != field):
                continue
            page = None
            if o.expected and read_pages is not None:
                if pages is None:
                    pages = read_pages(row.result.document_id, row.result.job_id)
                page = find_page(o.expected, pages)
            out.append(Failure(row.result.document_id, row.result.job_id,
                               row.result.model_version or "", row.result.strategy, o.field,
                               o.outcome, o.expected, o.got, page, o.page_number))
    return out


COLUMNS = ("document_id", "job_id", "model_version", "strategy", "field", "outcome", "expected",
           "got", "expected_page", "got_page")


def rows(found: Iterable[Failure]) -> list[tuple]:
    return [tuple(getattr(f, c) for c in COLUMNS) for f in found]


def _cell(value: object) -> str:
    return "" if value is None else str(value).replace("|", "\\|")


def markdown(found: Sequence[Failure], title: str = "Extraction failures") -> str:
    """A report to paste: counts by field and outcome, then one line per failure."""
    counts: dict[tuple[str, str], int] = {}
    for f in found:
        counts[(f.field, f.outcome)] = counts.get((f.field, f.outcome), 0) + 1
    lines = [f"# {title}", "", f"{len(found)} tokens were not hits.", "",
             "| field | outcome | count |", "| --- | --- | --- |"]
    lines += [f"| {k[0]} | {k[1]} | {n} |" for k, n in sorted(counts.items())]
    lines += ["", "| document | field | outcome | expected | got | page (expected) | page (got) |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {f.document_id} | {f.field} | {f.outcome} | {_cell(f.expected)} | "
              f"{_cell(f.got)} | {_cell(f.expected_page)} | {_cell(f.got_page)} |" for f in found]
    return "\n".join(lines) + "\n"
