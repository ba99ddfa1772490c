"""``doclake evals import-labels``: parse a label file, match it to documents, write versions.

A label binds to the bytes labelled: a row's ``sha256`` (every labelling sheet has one) names
the version, whatever the document's latest version is by the time the file comes back. A label
of a version that is no longer the latest is written, counted as stale and kept out of scores
and exports until someone labels the new content. A row whose ``sha256`` is not a version of the
document it names is refused, with its line. A label whose document cannot be found is reported,
not guessed at; a label identical to the version's current one (same values, same form) is
skipped, so importing the same file twice adds no version and changes no figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from evals.label_files import parse_labels
from evals.labels import PROVENANCES, DocumentIndex, LabelError, LabelInput, label_events
from evals.lakeio import read_current_versions, read_documents, read_labels, write_events

__all__ = ["ImportReport", "import_labels", "import_inputs"]


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
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    """Rows whose sha256 is not a version of the document id they name (where, key, why)."""
    stale: list[tuple[str, str]] = field(default_factory=list)
    """(where, document_id) of labels written for a version that is no longer the latest."""
    provenance: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"read": self.read, "imported": self.imported, "unchanged": self.unchanged,
                "values": self.values, "replaced_other_labeller": self.replaced_other_labeller,
                "stale": len(self.stale), "refused": len(self.refused),
                "unmatched": len(self.unmatched),
                "provenance": dict(sorted(self.provenance.items())),
                "stale_examples": [{"where": w, "document_id": d} for w, d in self.stale[:10]],
                "refused_examples": [{"where": w, "key": k, "why": y}
                                     for w, k, y in self.refused[:10]],
                "unmatched_examples": [{"where": w, "key": k, "why": y}
                                       for w, k, y in self.unmatched[:10]]}


def _same(label: LabelInput, values: dict[str, tuple[str, ...]], value_format: str) -> bool:
    return label.value_format == value_format and dict(label.values) == dict(values)


def import_labels(lake_uri: str, path: Path, file_format: str, *, labeller: str,
                  now: datetime, labelled_at: datetime | None = None,
                  provenance: str = "imported") -> ImportReport:
    """Write one label version per matched document; raises ``LabelError`` on a bad file.
    ``provenance`` is for rows that do not say (a sheet's own column wins)."""
    return import_inputs(lake_uri, parse_labels(path, file_format), labeller=labeller, now=now,
                         labelled_at=labelled_at, provenance=provenance,
                         source=f"{path.name} ({file_format})")


def import_inputs(lake_uri: str, labels: list[LabelInput], *, labeller: str, now: datetime,
                  source: str, labelled_at: datetime | None = None,
                  provenance: str = "imported") -> ImportReport:
    """``import_labels`` for labels already parsed (a Label Studio export, say)."""
    if provenance not in PROVENANCES:
        raise LabelError(f"provenance {provenance!r}: use one of {', '.join(PROVENANCES)}")
    index = DocumentIndex.from_rows(read_documents(lake_uri))
    latest = read_current_versions(lake_uri)
    current = {(label.document_id, label.sha256): label for label in read_labels(lake_uri)}
    report = ImportReport(read=len(labels))
    events = []
    for label in labels:
        document_id, why = index.resolve(label)
        if document_id is None:
            (report.refused if index.mismatched(label) else report.unmatched).append(
                (label.where, label.key, why or ""))
            continue
        # the bytes labelled: the row's sha256, else the version current now
        sha = label.key.lower() if label.key_kind == "sha256" else latest.get(document_id)
        existing = current.get((document_id, sha)) or current.get((document_id, None))
        if existing is not None and _same(label, dict(existing.values), existing.value_format):
            report.unchanged += 1
            continue
        if labelled_at is not None and label.labelled_at is None:
            label = LabelInput(label.key, label.key_kind, label.values, label.labeller,
                               labelled_at, label.value_format, label.where, label.document_id,
                               label.provenance)
        batch = label_events(label, document_id, labeller=labeller, now=now, source=source,
                             sha256=sha, provenance=provenance)
        events += batch
        report.imported += 1
        kind = label.provenance or provenance
        report.provenance[kind] = report.provenance.get(kind, 0) + 1
        if sha and latest.get(document_id) not in (None, sha):
            report.stale.append((label.where, document_id))
        if existing is not None and existing.labeller != (label.labeller or labeller):
            report.replaced_other_labeller += 1
        report.values += len(batch) - 1
    write_events(lake_uri, events)
    return report
