"""A password per document (issue 9): ``doclake run --passwords FILE`` and serve's POST /uploads
``password``. Each job opens with its own password before the run's ``--password``; the password
lives in the job store only while the job runs, and nowhere in the lake, events or objects.

pypdfium2 cannot write encrypted PDFs (and pikepdf is not installed), so the encrypted samples are
the shared corpus's, whose passwords its MANIFEST gives.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import CORPUS, needs_corpus
from test_cli import invoke

from infra.local.jobstore import SqliteJobStore
from ingest.planner import load_passwords, passwords_for

OPEN = CORPUS / "pdf_encrypted" / "libreoffice_user_pw_openpassword.pdf"  # "openpassword"
RC4 = CORPUS / "pdf_encrypted" / "qpdf_r2_rc4_40_user_pw_asdfzxcv.pdf"  # "asdfzxcv"
WRONG = "nope-Wr0ng-pw"


def test_a_passwords_file_is_csv_or_json(tmp_path):
    csv_file = tmp_path / "pw.csv"
    csv_file.write_text('name,password\na.pdf,one\n"sub/b.pdf"," two, with comma"\n\n')
    assert load_passwords(csv_file) == {"a.pdf": "one", "sub/b.pdf": " two, with comma"}
    json_file = tmp_path / "pw.json"
    json_file.write_text(json.dumps({"a.pdf": "one", "/sub/b.pdf": "two"}))
    assert load_passwords(json_file) == {"a.pdf": "one", "sub/b.pdf": "two"}
    (tmp_path / "bad.json").write_text('{"a.pdf": 3}')
    with pytest.raises(ValueError, match="JSON object"):
        load_passwords(tmp_path / "bad.json")
    (tmp_path / "bad.csv").write_text("a.pdf,secret-one,extra\n")
    with pytest.raises(ValueError, match="two columns") as raised:
        load_passwords(tmp_path / "bad.csv")
    assert "secret-one" not in str(raised.value)


def test_a_relative_path_wins_over_a_name(tmp_path):
    root = tmp_path / "docs"
    (root / "x").mkdir(parents=True)
    files = [root / "a.pdf", root / "x" / "a.pdf"]
    for file in files:
        file.write_bytes(b"%PDF")
    found, unmatched = passwords_for(files, [root], {"a.pdf": "name", "x/a.pdf": "path",
                                                     "ghost.pdf": "g"})
    assert found == {files[0]: "name", files[1]: "path"}
    assert unmatched == ["ghost.pdf"]


def _no_trace(home: Path, secrets: list[str]) -> None:
    """Not in any file of the home: the lake's Parquet files (raw bytes and decoded rows), the
    objects, the queue, the job store."""
    import pyarrow.parquet as pq

    parquet = list(home.rglob("*.parquet"))
    assert parquet, "the run wrote no Parquet files"
    for path in parquet:
        rows = str(pq.read_table(path).to_pylist())
        for secret in secrets:
            assert secret not in rows, f"{secret!r} in the rows of {path}"
    for path in (p for p in home.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret!r} in {path}"


@needs_corpus()
def test_each_document_opens_with_its_own_password(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    shutil.copy(OPEN, docs / "a.pdf")
    shutil.copy(RC4, docs / "sub" / "b.pdf")
    # Different bytes (a trailing comment), the same encryption: a wrong password for it.
    (docs / "c.pdf").write_bytes(OPEN.read_bytes() + b"\n% another copy\n")
    table = tmp_path / "passwords.csv"
    table.write_text(f"path,password\na.pdf,openpassword\nsub/b.pdf,asdfzxcv\nc.pdf,{WRONG}\n")
    home = tmp_path / "home"
    # The run's --password would open c.pdf: its own (wrong) password goes first.
    result = invoke("run", str(docs), "--home", str(home), "--passwords", str(table),
                    "--password", "openpassword", "--reader", "text")
    assert result.exit_code == 0, result.output
    store = SqliteJobStore(home / "jobs.db")
    try:
        jobs = {j.source_name: j for j in store.list_jobs()}
        assert {n: (j.status.value, j.failure_reason) for n, j in jobs.items()} == {
            "a.pdf": ("succeeded", None), "b.pdf": ("succeeded", None),
            "c.pdf": ("failed", "encrypted")}
        assert all(store.job_password(j.job_id) is None for j in jobs.values())
        assert store._db.execute("SELECT COUNT(*) FROM job_passwords").fetchone()[0] == 0
    finally:
        store.close()
    # b.pdf's page text reads "password: asdfzxcv" (the sample says so), so that one is in its
    # pages and the search index by right; the others must be nowhere.
    _no_trace(home, ["openpassword", WRONG])


@needs_corpus()
def test_a_password_is_kept_only_while_its_job_runs(tmp_path):
    from datetime import UTC, datetime

    from extract.ports import NewVersion
    from extract.state import JobStatus

    store = SqliteJobStore(tmp_path / "jobs.db")
    store.create_job(NewVersion(document_id="d", job_id="j", source_name="a.pdf",
                                source_key="/a.pdf", sha256="0" * 64, bytes=1, version=1,
                                object_key="k", created_at=datetime.now(UTC)))
    assert store.set_job_password("j", "s3cret") and store.job_password("j") == "s3cret"
    assert not store.set_job_password("missing", "x") and store.job_password("missing") is None
    assert store.get_job("j").model_dump_json().find("s3cret") == -1
    store.transition_job("j", JobStatus.QUEUED, JobStatus.FAILED, failure_reason="encrypted",
                         at=datetime.now(UTC))
    assert store.job_password("j") is None
    assert not store.set_job_password("j", "again")  # terminal: nothing kept
    store.close()
    for path in tmp_path.iterdir():
        assert b"s3cret" not in path.read_bytes(), path


@needs_corpus()
def test_serve_takes_a_password_with_the_upload(settings):
    httpx = pytest.importorskip("httpx")
    from infra.serve.server import ServeApp

    app = ServeApp(settings).start()
    try:
        refused = httpx.post(f"{app.base_url}/uploads", json={"password": 42})
        assert refused.status_code == 400
        slot = httpx.post(f"{app.base_url}/uploads",
                          json={"source_name": "a.pdf", "password": "openpassword"}).json()
        assert "openpassword" not in json.dumps(slot)
        put = httpx.put(slot["upload"]["url"], content=OPEN.read_bytes(),
                        headers=slot["upload"]["headers"])
        assert put.status_code == 201
        deadline = time.monotonic() + 60
        while (answer := httpx.get(slot["result_url"])).status_code == 404:
            assert time.monotonic() < deadline, "no result within 60 s"
            time.sleep(0.2)
        assert answer.json()["status"] == "succeeded"
        (job,) = app.store.list_jobs()
        assert app.store.job_password(job.job_id) is None
        assert not app._passwords
    finally:
        app.stop()
    _no_trace(settings.home, ["openpassword"])
