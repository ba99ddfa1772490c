"""Labelling in Label Studio: tasks out in its JSON task format, completed annotations back in.

Export (``doclake evals sample --file-format label-studio``): one task per document, its ``data``
holding the document's pages as text (``text``, each page under a ``--- page N ---`` line),
the ``document_id`` and ``sha256`` of the version shown, the schema's ``fields`` and the
sheet's ``provenance``; with ``--pre-filled``, the model's values as ``predictions`` (one
TextArea result per field, the values as its lines: Label Studio shows them as a
pre-annotation to correct), none when blind. ``label_config`` is the labelling interface to
paste into the project: the text, and one TextArea per field.

Import (``doclake evals import-labels FILE --file-format label-studio``): Label Studio's JSON export
of the project, each task's latest annotation that was not cancelled; a TextArea's lines are the
field's values, a field with no result has none. The task's ``sha256`` binds the answer to the
bytes labelled, as on the CSV sheet; the labeller is the annotator's e-mail (``completed_by``
arrives as a user number: resolved from the export's ``created_username``) and ``updated_at``
(else ``created_at``) when.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from html import escape
from pathlib import Path

from evals.labels import LabelError, LabelInput, parse_provenance, parse_time

__all__ = ["annotators", "label_config", "tasks", "parse_annotations"]

TEXT = "text"


def label_config(fields: Sequence[str]) -> str:
    """The project's labelling interface: the document's text and one TextArea per field."""
    areas = "\n".join(
        f'  <Header value="{escape(name)} (one value a line; leave empty if none)"/>\n'
        f'  <TextArea name="{escape(name)}" toName="{TEXT}" editable="true" rows="2"/>'
        for name in fields)
    return (f'<View>\n  <Text name="{TEXT}" value="${TEXT}"/>\n{areas}\n</View>\n')


def _page_text(pages: Sequence[tuple[int, str]]) -> str:
    return "\n\n".join(f"--- page {number} ---\n{text}" for number, text in pages)


def tasks(picked: Iterable[dict], fields: Callable[[dict], Sequence[str]],
          read_pages: Callable[[str, str], list[tuple[int, str]]], *,
          blind: bool = True) -> list[dict]:
    """One task per picked document (``evals.sample`` rows with ``job_id``)."""
    out = []
    for row in picked:
        names = list(fields(row))
        values = {} if blind else row.get("values") or {}
        task = {"data": {TEXT: _page_text(read_pages(row["document_id"], row["job_id"])),
                         "document_id": row["document_id"], "sha256": row.get("sha256") or "",
                         "source_name": row.get("source_name") or "", "fields": names,
                         "provenance": "blind" if blind else "pre-filled"}}
        if not blind:
            task["predictions"] = [{
                "model_version": f"{row.get('strategy')} {row.get('model_version') or ''}".strip(),
                "result": [{"from_name": name, "to_name": TEXT, "type": "textarea",
                            "value": {"text": [v for v, _ in values[name]]}}
                           for name in names if values.get(name)]}]
        out.append(task)
    return out


_CREATED_BY = re.compile(r"(?:^|\s)(?P<email>[^\s,]+@[^\s,]+),\s*(?P<id>\d+)\s*$")
"""Label Studio's ``created_username``: "First Last ann@example.com, 3" (its
``AnnotationSerializer.get_created_username``: names, then the e-mail, a comma and the user id)."""


def _labeller(annotation: dict, annotators: dict[str, str]) -> str | None:
    """The annotator's e-mail. An export holds ``completed_by`` as the user's number (the
    default) or as the user object (``?include=completed_by``); the number is resolved from
    the annotation's own ``created_username`` or, failing that, from any annotation of the
    export that names the same user (``annotators``). Only a user the export never names is
    recorded as "label-studio user N"."""
    completed_by = annotation.get("completed_by")
    if isinstance(completed_by, dict):
        who = completed_by.get("email") or completed_by.get("username") or completed_by.get("id")
        return None if who is None else str(who)
    if completed_by is None:
        return None
    found = _CREATED_BY.search(str(annotation.get("created_username") or ""))
    if found and found.group("id") == str(completed_by):
        return found.group("email")
    return annotators.get(str(completed_by), f"label-studio user {completed_by}")


def annotators(exported: Sequence[object]) -> dict[str, str]:
    """user id -> e-mail, from every annotation of an export that says who its user is."""
    found: dict[str, str] = {}
    for task in exported:
        for annotation in (task.get("annotations") or []) if isinstance(task, dict) else []:
            if not isinstance(annotation, dict):
                continue
            user = annotation.get("completed_by")
            if isinstance(user, dict) and user.get("id") is not None and user.get("email"):
                found.setdefault(str(user["id"]), str(user["email"]))
            named = _CREATED_BY.search(str(annotation.get("created_username") or ""))
            if named:
                found.setdefault(named.group("id"), named.group("email"))
    return found


def _values(result: Sequence[dict], names: Sequence[str], where: str) -> dict[str, tuple]:
    values: dict[str, list[str]] = {name: [] for name in names}
    for item in result:
        name, value = item.get("from_name"), item.get("value") or {}
        if not isinstance(name, str):
            raise LabelError(f"{where}: a result without from_name")
        texts = value.get("text", value.get("choices", []))
        texts = [texts] if isinstance(texts, str) else texts
        for text in texts:
            # one value a line: a TextArea submitted with several lines holds several values
            values.setdefault(name, []).extend(
                line.strip() for line in str(text).splitlines() if line.strip())
    return {name: tuple(items) for name, items in values.items()}


def parse_annotations(path: Path) -> list[LabelInput]:
    """Every task with a completed annotation, as labels keyed by the task's sha256."""
    try:
        exported = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise LabelError(f"{path.name}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(exported, list):
        raise LabelError(f"{path.name}: expected Label Studio's JSON export, a list of tasks")
    labels = []
    users = annotators(exported)
    for number, task in enumerate(exported, start=1):
        data = task.get("data") or {} if isinstance(task, dict) else {}
        where = f"{path.name}: task {task.get('id', number) if isinstance(task, dict) else number}"
        done = [a for a in (task.get("annotations") or []) if not a.get("was_cancelled")] \
            if isinstance(task, dict) else []
        if not done:
            continue
        sha, document_id = str(data.get("sha256") or ""), str(data.get("document_id") or "")
        if not sha and not document_id:
            raise LabelError(f"{where}: the task's data has no sha256 or document_id (export "
                             "tasks with `doclake evals sample --file-format label-studio`)")
        latest = max(done, key=lambda a: str(a.get("updated_at") or a.get("created_at") or ""))
        names = [str(n) for n in data.get("fields") or []]
        key, kind = (sha, "sha256") if sha else (document_id, "document_id")
        labels.append(LabelInput(
            key, kind, _values(latest.get("result") or [], names, where),
            _labeller(latest, users),
            parse_time(latest.get("updated_at") or latest.get("created_at"), where), where=where,
            document_id=document_id if sha and document_id else None,
            provenance=parse_provenance(data.get("provenance"), where)))
    return labels
