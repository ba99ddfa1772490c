"""Labelling in Label Studio: tasks exported in its JSON task format (pages as text, the model's
values as pre-annotations, none when blind), its completed annotations imported, bound by
sha256 like the sheet: an annotation of a version that was replaced meanwhile is stale."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

from test_fields_cli import invoke, sql

from evals.lakeio import write_events
from infra.local.objectstore import FolderObjectStore
from lake import events as ev
from lake.layout import page_key

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
DOCS = [(f"0196a0b0-0000-7000-8000-{i:012d}", f"0196a0b0-0000-7000-9000-{i:012d}", f"{i:064x}")
        for i in range(2)]
PAGES = ["MUTUAL NON-DISCLOSURE AGREEMENT between Acme Inc. and Beta LLC",
         "This Agreement is governed by the laws of Delaware."]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    store = FolderObjectStore(home / "objects")
    events = []
    for doc, job, sha in DOCS:
        events += [ev.DocumentRegistered(document_id=doc, job_id=job, source_name=f"{doc}.pdf",
                                         sha256=sha, bytes=1, occurred_at=T0),
                   ev.JobCreated(document_id=doc, job_id=job, occurred_at=T0),
                   ev.JobSucceeded(document_id=doc, job_id=job, occurred_at=T0),
                   ev.ResultPublished(document_id=doc, job_id=job, status="succeeded",
                                      strategy="rules", model_version="v1", schema_name="nda",
                                      occurred_at=T0),
                   *[ev.ResultFieldExtracted(document_id=doc, job_id=job, field="party",
                                             value=v, value_index=k, strategy="rules",
                                             model_version="v1", occurred_at=T0)
                     for k, v in enumerate(["Acme Inc.", "Beta"])]]
        for number, text in enumerate(PAGES, start=1):
            store.put(page_key(doc, job, number), text.encode())
    write_events(str(home / "lake"), events)
    return home


def _export(home: Path, out: Path, *flags: str) -> list[dict]:
    result = invoke("evals", "sample", "--home", str(home), "--file-format", "label-studio", "--out",
                    str(out), *flags)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_tasks_carry_pages_and_pre_annotations_only_when_pre_filled(tmp_path: Path):
    home = _home(tmp_path)
    blind = _export(home, tmp_path / "blind.json")
    assert len(blind) == 2 and not any("predictions" in t for t in blind)
    data = blind[0]["data"]
    assert data["text"] == f"--- page 1 ---\n{PAGES[0]}\n\n--- page 2 ---\n{PAGES[1]}"
    assert (data["provenance"], data["fields"]) == (
        "blind", ["effective_date", "jurisdiction", "party", "term"])
    assert {t["data"]["sha256"] for t in blind} == {sha for _, _, sha in DOCS}
    config = ET.fromstring((tmp_path / "blind.label-config.xml").read_text())
    assert [a.get("name") for a in config.iter("TextArea")] == data["fields"]
    assert all(a.get("toName") == "text" for a in config.iter("TextArea"))

    shown = _export(home, tmp_path / "shown.json", "--pre-filled")
    (prediction,) = shown[0]["predictions"]
    assert prediction["result"] == [{"from_name": "party", "to_name": "text",
                                     "type": "textarea",
                                     "value": {"text": ["Acme Inc.", "Beta"]}}]
    assert shown[0]["data"]["provenance"] == "pre-filled"


def _annotated(tasks: list[dict], party: list[str]) -> list[dict]:
    """What Label Studio's JSON export holds once each task is labelled (and one cancelled)."""
    out = []
    for k, task in enumerate(tasks):
        annotations = [{"id": 10 + k, "completed_by": {"id": 3, "email": "ann@example.com"},
                        "was_cancelled": False, "created_at": "2026-05-05T10:00:00.0Z",
                        "updated_at": "2026-05-05T10:05:00.0Z",
                        "result": [{"from_name": "party", "to_name": "text",
                                    "type": "textarea", "value": {"text": party}},
                                   {"from_name": "term", "to_name": "text",
                                    "type": "textarea", "value": {"text": ["2 years"]}}]},
                       {"id": 90 + k, "completed_by": 4, "was_cancelled": True,
                        "updated_at": "2026-05-06T10:00:00.0Z", "result": []}]
        out.append({"id": k + 1, **task, "annotations": annotations})
    return out


def test_completed_annotations_import_bound_by_sha256(tmp_path: Path):
    home = _home(tmp_path)
    tasks = _export(home, tmp_path / "tasks.json")
    # while the tasks are out, the first document gets a new version
    doc, _, _ = DOCS[0]
    write_events(str(home / "lake"), [ev.DocumentRegistered(
        document_id=doc, job_id="0196a0b0-0000-7000-9000-00000000000f", source_name="x.pdf",
        sha256="f" * 64, bytes=2, version=2, occurred_at=T0 + timedelta(hours=1))])
    exported = tmp_path / "export.json"
    exported.write_text(json.dumps(_annotated(tasks, ["Acme Inc.\nBeta"])))
    result = invoke("evals", "import-labels", str(exported), "--file-format", "label-studio",
                    "--home", str(home), "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["imported"], report["stale"], report["provenance"]) == (2, 1, {"blind": 2})
    assert report["stale_examples"][0]["document_id"] == doc
    labels = sql(str(home), "SELECT l.document_id, l.labeller, l.provenance, l.sha256, "
                 "strftime(l.labelled_at, '%Y-%m-%dT%H:%M') AS at, list(v.value ORDER BY "
                 "v.field, v.value_index) AS v FROM labels AS l JOIN label_values AS v USING "
                 "(label_id) GROUP BY ALL ORDER BY 1")
    assert [(x["labeller"], x["provenance"], x["at"], x["v"]) for x in labels] == [
        ("ann@example.com", "blind", "2026-05-05T10:05", ["Acme Inc.", "Beta", "2 years"])] * 2
    assert {x["sha256"] for x in labels} == {sha for _, _, sha in DOCS}
    scored = json.loads(invoke("evals", "score", "--home", str(home), "--format", "json",
                               "--dry-run").stdout)
    assert (scored["scored_documents"], scored["stale_labels"]) == (1, 1)


def test_a_task_whose_sha256_is_not_a_version_of_its_document_is_refused(tmp_path: Path):
    home = _home(tmp_path)
    tasks = _export(home, tmp_path / "tasks.json")
    tasks[0]["data"]["sha256"] = DOCS[1][2] if tasks[0]["data"]["sha256"] == DOCS[0][2] \
        else DOCS[0][2]
    exported = tmp_path / "export.json"
    exported.write_text(json.dumps(_annotated(tasks[:1], ["Acme Inc."])))
    result = invoke("evals", "import-labels", str(exported), "--file-format", "label-studio",
                    "--home", str(home))
    assert result.exit_code == 2
    assert "refused export.json: task 1: sha256" in result.output
    assert "is not a version of document" in result.output


def _as_label_studio_exports(tasks: list[dict]) -> list[dict]:
    """Label Studio 1.x's JSON export as it comes by default: ``completed_by`` is the user's
    number, and the user appears only in ``created_username`` ("First Last e-mail, id"); the
    second task's annotation is by a user with a first and last name."""
    users = [(1, " ann@example.com, 1"), (7, "Bo Lee bo.lee@example.org, 7")]
    out = []
    for k, task in enumerate(tasks):
        user, username = users[k % 2]
        out.append({
            "id": 40 + k, "data": task["data"], "meta": {}, "drafts": [], "predictions": [],
            "created_at": "2026-05-04T12:00:00.000000Z", "updated_at": "2026-05-05T10:05:00Z",
            "inner_id": k + 1, "total_annotations": 1, "cancelled_annotations": 0,
            "total_predictions": 0, "comment_count": 0, "unresolved_comment_count": 0,
            "last_comment_updated_at": None, "project": 3, "updated_by": user,
            "file_upload": 12, "comment_authors": [],
            "annotations": [{
                "id": 100 + k, "created_username": username, "created_ago": "2 minutes",
                "completed_by": user,
                "result": [{"value": {"text": ["Acme Inc."]}, "id": "Xy1", "from_name": "party",
                            "to_name": "text", "type": "textarea", "origin": "manual"}],
                "was_cancelled": False, "ground_truth": False,
                "created_at": "2026-05-05T10:00:00.123456Z",
                "updated_at": "2026-05-05T10:05:00.654321Z", "draft_created_at": None,
                "lead_time": 41.2, "import_id": None, "last_action": None, "bulk_created": False,
                "task": 40 + k, "project": 3, "updated_by": user, "parent_prediction": None,
                "parent_annotation": None, "last_created_by": None}]})
    return out


def test_a_numbered_completed_by_is_recorded_as_the_annotators_email(tmp_path: Path):
    home = _home(tmp_path)
    tasks = _export(home, tmp_path / "tasks.json")
    exported = tmp_path / "project-3-at-2026-05-05.json"
    exported.write_text(json.dumps(_as_label_studio_exports(tasks)))
    result = invoke("evals", "import-labels", str(exported), "--file-format", "label-studio",
                    "--home", str(home))
    assert result.exit_code == 0, result.output
    labels = sql(str(home), "SELECT labeller FROM labels ORDER BY labeller")
    assert [x["labeller"] for x in labels] == ["ann@example.com", "bo.lee@example.org"]
