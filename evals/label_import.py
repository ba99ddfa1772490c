"""``doclake evals import-labels``: parse a label file, match it to documents, write versions.

A label whose document cannot be found is reported, not guessed at; a label identical to the
document's current one (same values, same form) is skipped, so importing the same file twice
adds no version and changes no figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from evals.labels import DocumentIndex, LabelInput, label_events, parse_labels
from evals.lakeio import read_current_versions, read_documents, read_labels, write_events

__all__ = ["ImportReport", "import_labels"]


@dataclass
class ImportReport:
    read: int = 0
    imported: int = 0
    unchanged: int = 0
    values: int = 0
    replaced_other_labeller: int = 0
    """Imported labels that supersede another person's label of the same document (a second
    reviewer's answers belong in `doclake evals agreement`, not here)."""
    unmatched: list[tuple[str, str, str]] = field(default_factory=list)  # (where, key, why)

    def to_dict(self) -> dict:
        return {"read": self.read, "imported": self.imported, "unchanged": self.unchanged,
                "values": self.values, "replaced_other_labeller": self.replaced_other_labeller,
                "unmatched": len(self.unmatched),
                "unmatched_examples": [{"where": w, "key": k, "why": y}
                                       for w, k, y in self.unmatched[:10]]}


def _same(label: LabelInput, values: dict[str, tuple[str, ...]], value_format: str) -> bool:
    return label.value_format == value_format and dict(label.values) == dict(values)


def import_labels(lake_uri: str, path: Path, file_format: str, *, labeller: str,
                  now: datetime, labelled_at: datetime | None = None) -> ImportReport:
    """Write one label version per matched document; raises ``LabelError`` on a bad file."""
    labels = parse_labels(path, file_format)
    documents = read_documents(lake_uri)
    index = DocumentIndex.from_rows(documents)
    sha_of = read_current_versions(lake_uri)  # a label is written for the version seen now
    current = {label.document_id: label for label in read_labels(lake_uri)}
    report = ImportReport(read=len(labels))
    events = []
    for label in labels:
        document_id, why = index.resolve(label)
        if document_id is None:
            report.unmatched.append((label.where, label.key, why or ""))
            continue
        sha = label.key.lower() if label.key_kind == "sha256" else sha_of.get(document_id)
        existing = current.get(document_id)
        if existing is not None and existing.sha256 in (sha, None) and _same(
                label, dict(existing.values), existing.value_format):
            report.unchanged += 1
            continue
        if labelled_at is not None and label.labelled_at is None:
            label = LabelInput(label.key, label.key_kind, label.values, label.labeller,
                               labelled_at, label.value_format, label.where)
        batch = label_events(label, document_id, labeller=labeller, now=now,
                             source=f"{path.name} ({file_format})", sha256=sha)
        events += batch
        report.imported += 1
        if existing is not None and existing.labeller != (label.labeller or labeller):
            report.replaced_other_labeller += 1
        report.values += len(batch) - 1
    write_events(lake_uri, events)
    return report
