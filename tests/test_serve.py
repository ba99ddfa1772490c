"""``doclake serve`` over real HTTP (httpx against the running server on 127.0.0.1): the slot,
the signed single-key upload, the job worked to its result JSON, and each refusal a clear 4xx
that stores nothing."""

from __future__ import annotations

import time

import pytest

from infra.serve.server import ServeApp
from infra.serve.signing import ExpiredError, SignatureError, sign, verify

httpx = pytest.importorskip("httpx")


@pytest.fixture
def app(settings):
    server = ServeApp(settings, max_bytes=64 * 1024).start()
    yield server
    server.stop()


def _slot(app, name="nda.pdf") -> dict:
    answer = httpx.post(f"{app.base_url}/uploads", json={"source_name": name})
    assert answer.status_code == 201
    return answer.json()


def _put(slot: dict, data: bytes, url: str | None = None) -> httpx.Response:
    return httpx.put(url or slot["upload"]["url"], content=data,
                     headers=slot["upload"]["headers"])


def _nothing_stored(app) -> None:
    assert app.objects.list("uploads/") == []
    assert app.store.list_jobs() == []


def test_upload_is_processed_and_its_result_appears_at_its_address(app, pdf_factory):
    slot = _slot(app)
    assert httpx.get(slot["result_url"]).status_code == 404  # not before it is published
    stored = _put(slot, pdf_factory("nda.pdf", 6).read_bytes())
    assert stored.status_code == 201 and stored.json()["document_id"] == slot["document_id"]
    deadline = time.monotonic() + 60
    while (result := httpx.get(slot["result_url"])).status_code == 404:
        assert time.monotonic() < deadline, "no result within 60 s"
        time.sleep(0.2)
    body = result.json()
    assert (body["document_id"], body["status"], body["pages"]) == (
        slot["document_id"], "succeeded", 6)
    (job,) = app.store.list_jobs()
    assert (job.source_name, job.document_id) == ("nda.pdf", slot["document_id"])


def test_with_fields_an_uploads_result_holds_its_fields(settings):
    """``doclake serve --fields nda``: every upload's fields are extracted (as ``run --fields``
    and the stack's ``fields_schema``), and the result at its address carries them."""
    from pathlib import Path

    example = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.pdf"))[0]
    server = ServeApp(settings, fields=("nda", "rules")).start()
    try:
        slot = _slot(server, example.name)
        assert _put(slot, example.read_bytes()).status_code == 201
        deadline = time.monotonic() + 90
        while (result := httpx.get(slot["result_url"])).status_code == 404:
            assert time.monotonic() < deadline, "no result within 90 s"
            time.sleep(0.2)
    finally:
        server.stop()
    body = result.json()
    assert (body["status"], body["schema"], body["strategy"]) == ("succeeded", "nda", "rules")
    assert body["extracted_fields"] and any(body["extracted_fields"].values()), body


def test_serve_refuses_a_model_reader_without_its_key_before_listening(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from infra.cli.main import app as cli

    monkeypatch.delenv("DOCLAKE_GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    result = CliRunner().invoke(cli, ["serve", "--home", str(tmp_path / "h"), "--reader",
                                      "gemini", "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "doclake serve on" not in result.output


def test_the_operators_page_client_example_runs_against_a_live_server(settings):
    """docs/operators.md's client block (curl and python3), as a person pastes it: a slot, the
    PUT, then the result once processed, against a running server on its own port."""
    import shutil
    import subprocess
    from pathlib import Path

    from support.docs_examples import _blocks

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    root = Path(__file__).resolve().parents[1]
    page = root / "docs" / "operators.md"
    (body,) = [block.body for block in _blocks(page)
               if block.language == "bash" and block.skip and "tests/test_serve.py" in block.skip]
    server = ServeApp(settings, fields=("nda", "rules")).start()
    try:
        script = "\n".join(body).replace("127.0.0.1:8480", server.base_url.split("//")[1])
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=root,
                              capture_output=True, text=True, timeout=120)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert '"document_id"' in done.stdout and '"status": "succeeded"' in done.stdout, done.stdout


def test_a_wrong_signature_is_refused_and_nothing_is_stored(app):
    slot = _slot(app)
    url = slot["upload"]["url"]
    tampered = url.replace("max_bytes=65536", "max_bytes=99999999")
    for bad in (tampered, url[:-4] + "0000", url.split("?")[0]):
        answer = _put(slot, b"%PDF-1.7 hello", url=bad)
        assert answer.status_code == 403, bad
        assert "signature" in answer.json()["error"]
    # A signature for one slot does not open another.
    other = _slot(app)
    crossed = other["upload"]["url"].split("?")[0] + "?" + url.split("?")[1]
    assert _put(slot, b"%PDF-1.7 hello", url=crossed).status_code == 403
    _nothing_stored(app)


def test_an_expired_url_is_refused(settings):
    server = ServeApp(settings, expiry_s=1, run_workers=False).start()
    try:
        slot = _slot(server)
        time.sleep(2.1)
        answer = _put(slot, b"%PDF-1.7 late")
        assert answer.status_code == 403 and "expired" in answer.json()["error"]
        _nothing_stored(server)
    finally:
        server.stop()


def test_a_second_upload_to_the_same_slot_is_refused(settings, pdf_factory):
    server = ServeApp(settings, run_workers=False).start()
    try:
        slot = _slot(server)
        first = pdf_factory("a.pdf", 1).read_bytes()
        assert _put(slot, first).status_code == 201
        again = _put(slot, b"%PDF-1.7 something else")
        assert again.status_code == 409 and "slot" in again.json()["error"]
        key = f"uploads/{slot['document_id']}/"
        (stored,) = server.objects.list(key)
        assert server.objects.get(stored) == first  # the first upload is untouched
        assert len(server.store.list_jobs()) == 1
    finally:
        server.stop()


def test_an_oversize_body_is_refused_before_it_is_read(settings):
    server = ServeApp(settings, max_bytes=1000, run_workers=False).start()
    try:
        slot = _slot(server)
        answer = _put(slot, b"%PDF" + b"x" * 5000)
        assert answer.status_code == 413 and "limit of 1000" in answer.json()["error"]
        _nothing_stored(server)
        assert httpx.post(f"{server.base_url}/uploads", content=b"[1, 2]").status_code == 400
        assert httpx.get(f"{server.base_url}/results/nope.json").status_code == 404
    finally:
        server.stop()


def test_signing_is_bound_to_key_expiry_and_limit():
    secret = b"s" * 32
    query = sign(secret, "uploads/a/b", expires=100, max_bytes=10)
    assert verify(secret, "uploads/a/b", query, now=99).max_bytes == 10
    with pytest.raises(ExpiredError):
        verify(secret, "uploads/a/b", query, now=101)
    with pytest.raises(SignatureError):
        verify(secret, "uploads/a/c", query, now=99)
    with pytest.raises(SignatureError):
        verify(b"t" * 32, "uploads/a/b", query, now=99)
