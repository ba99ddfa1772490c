"""Which documents a fine-tuning set is made of, read from the lake: labelled documents with the
text of their latest successful result, and optionally unlabelled documents confirmed by the
agreement of two or more model versions or strategies.

The command and any scheduled job call the same functions; the caller supplies how to read a
job's stored pages (``read_pages(document_id, job_id) -> [(page_number, text)]``), since where
pages live is the runtime's business, not the evals package's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evals.finetune import FinetuneDocument
from evals.lakeio import read_current_versions, read_labels, read_results
from evals.scoring import Label, Result, group_of, split_stale

__all__ = ["PageReader", "agreeing_documents", "labelled_documents", "finetune_documents"]

PageReader = Callable[[str, str], list[tuple[int, str]]]
INCLUDE_RULES = ("labelled", "agreement")


def labelled_documents(labels: Sequence[Label], results: Sequence[Result],
                       read_pages: PageReader) -> list[FinetuneDocument]:
    """Each labelled document with the pages of its latest successful result *of the version
    the label was written for* (its SHA-256): a label never meets another version's text."""
    by_document: dict[str, list[Result]] = {}
    for result in sorted(results, key=lambda r: r.published_at):
        if result.status == "succeeded":
            by_document.setdefault(result.document_id, []).append(result)
    out = []
    for label in labels:
        matching = [r for r in by_document.get(label.document_id, [])
                    if not (label.sha256 and r.sha256 and r.sha256 != label.sha256)]
        if matching:
            r = matching[-1]
            out.append(FinetuneDocument(label.document_id, "labelled",
                                        read_pages(label.document_id, r.job_id), label.values,
                                        label.value_format, r.schema_name or "nda",
                                        r.sha256 or label.sha256))
    return out


def agreeing_documents(results: Sequence[Result], labelled: set[str],
                       read_pages: PageReader) -> list[tuple]:
    """Unlabelled documents whose latest result per (model_version, strategy), two or more of
    them, carry the same values (case-insensitively): a confirmation by agreement. Agreeing on
    nothing confirms nothing: two versions that both found no value (a scan without text, a
    reader that failed quietly) agree without either having read the document, so a document
    whose agreed answer is empty is not taken."""
    by_document: dict[str, dict] = {}
    for r in sorted(results, key=lambda r: r.published_at):
        if r.status == "succeeded" and r.document_id not in labelled:
            by_document.setdefault(r.document_id, {})[group_of(r)] = r
    chosen = []
    for document_id, groups in sorted(by_document.items()):
        answers = {tuple(sorted((k, tuple(v.upper() for v, _ in vs))
                                for k, vs in r.values.items())) for r in groups.values()}
        if len(groups) >= 2 and len(answers) == 1:
            newest = max(groups.values(), key=lambda r: r.published_at)
            if not any(value.strip() for values in newest.values.values()
                       for value, _ in values):
                continue
            chosen.append(FinetuneDocument(
                document_id, "confirmed", read_pages(document_id, newest.job_id),
                {k: tuple(v for v, _ in vs) for k, vs in newest.values.items()}, "text",
                newest.schema_name or "nda", newest.sha256))
    return chosen


def finetune_documents(lake_uri: str, read_pages: PageReader, include: str) -> list[tuple]:
    """The documents of a fine-tuning set under an ``include`` rule (``INCLUDE_RULES``)."""
    if include not in INCLUDE_RULES:
        raise ValueError(f"unknown include rule {include!r}")
    labels, _stale = split_stale(read_labels(lake_uri), read_current_versions(lake_uri))
    results = read_results(lake_uri)
    documents = labelled_documents(labels, results, read_pages)
    if include == "agreement":
        documents += agreeing_documents(results, {label.document_id for label in labels},
                                        read_pages)
    return documents
