"""Labels in: CSV, JSONL and the Kleister format, parsed into one shape, then made lake events.

A label is what a person says one document contains, field by field. It is never edited: a
corrected answer is a new label version (``LabelRecorded`` plus one ``LabelValueRecorded`` per
value), and the ``labels`` view marks the earlier one ``superseded``. That keeps what was
scored last month reproducible after someone fixes a label today.

Formats (one document may take several CSV rows; a field named with an empty value says "the
document has none", which is what lets an empty gold set be labelled at all):

- csv: columns ``sha256`` and/or ``document_id`` (or ``source_name``), ``field``, ``value``, and
  optionally ``labeller``, ``labelled_at`` and ``provenance``; other columns (the labelling
  sheet's ``extracted``, ``model_version``...) are ignored, so a filled-in sheet imports as it is;
- jsonl: ``{"document_id" | "sha256" | "source_name": ..., "fields": {"party": ["A", "B"],
  "term": "2 years", "jurisdiction": null}, "labeller": ..., "labelled_at": ...}``;
- kleister: ``expected.tsv`` (space-separated ``key=value`` tokens) beside ``in.tsv`` or
  ``in.tsv.xz`` (file names, same order); a document is found by the SHA-256 of
  ``documents/<name>`` when that file is there, else by its source file name. Each label covers
  every field the split names, since the benchmark scores every predicted token;
- label-studio: Label Studio's JSON export of tasks made by ``doclake evals sample --file-format
  label-studio`` (``evals.label_studio``).

A label binds to the bytes labelled: when a row gives a ``sha256`` (the labelling sheet always
does), that version is the one labelled, even if the document has a newer version by the time
the sheet comes back; the label is then *stale* and kept out of scores and exports. A row whose
``sha256`` is not a version of the ``document_id`` it names is refused, with its line.

Provenance says how the labeller came to the answer (``PROVENANCES``): ``blind`` (a sheet without
the model's values), ``pre-filled`` (a sheet showing them: the labeller may anchor on them),
``imported`` (a gold set made elsewhere, the default) or ``reviewer`` (a reviewer's correction).
"""

from __future__ import annotations

import csv
import hashlib
import json
import lzma
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from evals.csv_cells import restore
from lake.events import LabelRecorded, LabelValueRecorded

__all__ = ["DocumentIndex", "FORMATS", "KEY_KINDS", "LabelError", "LabelInput", "PROVENANCES",
           "label_events", "parse_provenance", "parse_time"]

KEY_KINDS = ("sha256", "document_id", "source_name")  # the first one a row gives is its key
PROVENANCES = ("blind", "pre-filled", "imported", "reviewer")
FORMATS = ("csv", "jsonl", "kleister", "label-studio")
LABEL_NAMESPACE = uuid.UUID("2f8e6a1c-5b0d-4f7e-a3c9-8d1e0b7c4a52")


class LabelError(ValueError):
    """A label file that cannot be read as the format it claims; the message names the line."""


@dataclass(frozen=True)
class LabelInput:
    """One document's answer as read from a file, before it is matched to a document id."""

    key: str
    key_kind: str
    values: dict[str, tuple[str, ...]]  # every labelled field; () means "has none"
    labeller: str | None = None
    labelled_at: datetime | None = None
    value_format: str = "text"
    where: str = ""  # file:line, for messages
    document_id: str | None = None
    """The document id a row names beside its ``sha256`` (checked: the bytes must be a version
    of that document)."""
    provenance: str | None = None


@dataclass
class DocumentIndex:
    """What a label's key can name: document ids, every version's SHA-256, source names."""

    ids: set[str] = field(default_factory=set)
    by_sha256: dict[str, set[str]] = field(default_factory=dict)
    by_name: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping]) -> DocumentIndex:
        """Rows with document_id, sha256 and source_name (one per registered version)."""
        index = cls()
        for row in rows:
            index.ids.add(row["document_id"])
            index.by_sha256.setdefault(row["sha256"].lower(), set()).add(row["document_id"])
            index.by_name.setdefault(row["source_name"], set()).add(row["document_id"])
        return index

    def mismatched(self, label: LabelInput) -> bool:
        """The row names a known document and bytes that are not a version of it."""
        return (label.key_kind == "sha256" and bool(label.document_id)
                and label.document_id in self.ids
                and label.document_id not in self.by_sha256.get(label.key.lower(), set()))

    def resolve(self, label: LabelInput) -> tuple[str | None, str | None]:
        """(document id, None) or (None, why it matched nothing or too much). A ``sha256``
        with a ``document_id`` beside it must be a version of that document."""
        if label.key_kind == "document_id":
            return (label.key, None) if label.key in self.ids else (None, "no such document id")
        if label.key_kind == "sha256":
            found = self.by_sha256.get(label.key.lower(), set())
            if label.document_id:
                if label.document_id in found:
                    return label.document_id, None
                if label.document_id not in self.ids:
                    return None, f"no such document id {label.document_id}"
                return None, (f"sha256 {label.key[:12]}... is not a version of document "
                              f"{label.document_id}")
            if len(found) == 1:
                return next(iter(found)), None
            return None, ("no document has this sha256" if not found else
                          f"{len(found)} documents have these bytes; give document_id too")
        names = self.by_name.get(label.key, set())
        if len(names) == 1:
            return next(iter(names)), None
        return None, ("no document has this source name" if not names else
                      f"{len(names)} documents have this source name; key it by sha256")


def parse_time(value: str | None, where: str) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise LabelError(f"{where}: labelled_at {value!r} is not an ISO 8601 time") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _key(row: Mapping, where: str) -> tuple[str, str]:
    for kind in KEY_KINDS:
        if (row.get(kind) or "").strip():
            return str(row[kind]).strip(), kind
    raise LabelError(f"{where}: no document key; give one of {', '.join(KEY_KINDS)}")


def _claimed_id(row: Mapping, kind: str) -> str | None:
    """The document id a row names beside the sha256 that keys it."""
    claimed = str(row.get("document_id") or "").strip()
    return claimed if kind == "sha256" and claimed else None


def parse_provenance(value: object, where: str) -> str | None:
    text = str(value or "").strip().lower()
    if not text:
        return None
    if text not in PROVENANCES:
        raise LabelError(f"{where}: provenance {text!r}: use one of {', '.join(PROVENANCES)}")
    return text


def parse_csv(path: Path) -> list[LabelInput]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or "field" not in reader.fieldnames:
            raise LabelError(f"{path}: a label CSV needs a 'field' column (and 'value', and "
                             "document_id or sha256)")
        grouped: dict[tuple, dict[str, list[str]]] = {}
        first_line: dict[tuple, str] = {}
        for line, raw in enumerate(reader, start=2):
            where = f"{path.name}:{line}"
            row = {k: restore(v) if isinstance(v, str) else v for k, v in raw.items()}
            key, kind = _key(row, where)
            name = (row.get("field") or "").strip()
            if not name:
                raise LabelError(f"{where}: empty field name")
            group = (key, kind, (row.get("labeller") or "").strip() or None,
                     parse_time(row.get("labelled_at"), where), _claimed_id(row, kind),
                     parse_provenance(row.get("provenance"), where))
            first_line.setdefault(group, where)
            values = grouped.setdefault(group, {}).setdefault(name, [])
            value = (row.get("value") or "").strip()
            if value:
                values.append(value)
    labels = []
    for group, values in grouped.items():
        key, kind, labeller, at, claimed, provenance = group
        labels.append(LabelInput(key, kind, {f: tuple(v) for f, v in values.items()}, labeller,
                                 at, where=first_line[group], document_id=claimed,
                                 provenance=provenance))
    return labels


def parse_jsonl(path: Path) -> list[LabelInput]:
    labels = []
    for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        where = f"{path.name}:{line}"
        try:
            row = json.loads(text)
        except json.JSONDecodeError as error:
            raise LabelError(f"{where}: not JSON ({error.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("fields"), dict):
            raise LabelError(f'{where}: expected an object with "fields": {{...}}')
        key, kind = _key(row, where)
        values: dict[str, tuple[str, ...]] = {}
        for name, value in row["fields"].items():
            items = value if isinstance(value, list) else [value]
            values[name] = tuple(_text(v) for v in items if v is not None and _text(v).strip())
        labels.append(LabelInput(key, kind, values, row.get("labeller"),
                                 parse_time(row.get("labelled_at"), where), where=where,
                                 document_id=_claimed_id(row, kind),
                                 provenance=parse_provenance(row.get("provenance"), where)))
    return labels


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _kleister_names(folder: Path) -> list[tuple[str, list[str]]]:
    """(file name, keys asked for) per row of in.tsv(.xz)."""
    plain, packed = folder / "in.tsv", folder / "in.tsv.xz"
    if plain.exists():
        text = plain.read_text(encoding="utf-8")
    elif packed.exists():
        with lzma.open(packed, "rt", encoding="utf-8") as handle:
            text = handle.read()
    else:
        raise LabelError(f"{folder}: no in.tsv or in.tsv.xz beside expected.tsv")
    rows = [line.split("\t", 2) for line in text.split("\n") if line]
    return [(row[0], row[1].split() if len(row) > 1 else []) for row in rows]


def parse_kleister(path: Path) -> list[LabelInput]:
    """``path`` is expected.tsv or the folder holding it."""
    expected = path / "expected.tsv" if path.is_dir() else path
    folder = expected.parent
    names = _kleister_names(folder)
    lines = expected.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(names):
        raise LabelError(f"{expected}: {len(lines)} lines but in.tsv has {len(names)} documents")
    # The benchmark scores every predicted token, whatever keys a row of in.tsv lists, so each
    # label covers every field the split names (a prediction for a field with no gold value
    # counts against precision, as in GEval).
    every_key = sorted({k for _, keys in names for k in keys}
                       | {t.partition("=")[0] for line in lines for t in line.split()})
    labels = []
    for line, ((name, _keys), tokens) in enumerate(zip(names, lines, strict=True), start=1):
        values: dict[str, list[str]] = {key: [] for key in every_key}
        for token in tokens.split():
            key, equals, value = token.partition("=")
            if not equals:
                raise LabelError(f"{expected.name}:{line}: {token!r} is not key=value")
            values.setdefault(key, []).append(value)
        document = folder / "documents" / name
        if document.is_file():
            key, kind = hashlib.sha256(document.read_bytes()).hexdigest(), "sha256"
        else:
            key, kind = name, "source_name"
        labels.append(LabelInput(key, kind, {k: tuple(v) for k, v in values.items()},
                                 value_format="kleister", where=f"{expected.name}:{line}"))
    return labels


def label_id(document_id: str, labeller: str, labelled_at: datetime,
             values: Mapping[str, tuple[str, ...]]) -> str:
    """Derived from the content, so importing the same file twice adds nothing new."""
    content = json.dumps({k: list(v) for k, v in sorted(values.items())}, ensure_ascii=False)
    return str(uuid.uuid5(LABEL_NAMESPACE, "|".join(
        (document_id, labeller, labelled_at.isoformat(), content))))


def label_events(label: LabelInput, document_id: str, *, labeller: str, now: datetime,
                 source: str, sha256: str | None = None, provenance: str = "imported"
                 ) -> list[LabelRecorded | LabelValueRecorded]:
    """One label version: its header and one row per value (none for an empty answer)."""
    who = label.labeller or labeller
    at = label.labelled_at or now
    lid = label_id(document_id, who, at, label.values)
    values = [LabelValueRecorded(document_id=document_id, label_id=lid, field=name, value=value,
                                 value_index=index, occurred_at=now)
              for name, items in label.values.items() for index, value in enumerate(items)]
    header = LabelRecorded(document_id=document_id, label_id=lid, labeller=who, labelled_at=at,
                           fields_labelled=list(label.values), value_count=len(values),
                           value_format=label.value_format, sha256=sha256, source=source,
                           provenance=label.provenance or provenance, occurred_at=now)
    return [header, *values]
