"""The AWS deployment end to end on the synthesized template: ``cdk synth``, every resource the
pipeline touches created in moto from the template's own properties (``support.awsstack``), IAM
enforced, and each Lambda handler run in-process with its function's environment and its own
role's key. A grant missing from the stack fails here as it would on AWS: AccessDenied.

One run carries a text PDF, a Word file (the convert queue, LibreOffice), a spreadsheet (the
sheet queue), the fields stage and its published result JSON, the lake's tables, and a poison
message that ends in the DLQ and fails its job."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
httpx = pytest.importorskip("httpx")
pytest.importorskip("aws_lambda_powertools")

from conftest import CORPUS  # noqa: E402
from support.awsstack import StackDeployment, synth  # noqa: E402

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

NDA = ["NON-DISCLOSURE AGREEMENT made as of March 3, 2015",
       "This Agreement is governed by the laws of the State of New York.",
       "This Agreement shall remain in effect for two (2) years."]


@pytest.fixture
def deployed(iam_moto):
    template = synth((("fields_schema", "nda"),))
    return StackDeployment(template, iam_moto)


def _slot(deployed: StackDeployment, name: str, content_type: str) -> dict:
    answer = deployed.invoke("presigner", {"body": json.dumps({
        "source_name": name, "content_type": content_type})})
    assert answer["statusCode"] == 201, answer
    return json.loads(answer["body"])


def _upload(slot: dict, data: bytes, content_type: str) -> None:
    upload = slot["upload"]
    response = httpx.post(upload["url"], data=upload["fields"],
                          files={"file": ("ignored", data, content_type)})
    assert response.status_code in (200, 201, 204), response.text


def test_the_template_deployed_with_iam_enforced_runs_every_kind_of_document(
        deployed, tmp_path, pdf_factory):
    from support.pdfgen import make_pdf

    files = {"nda.pdf": ("application/pdf", make_pdf(tmp_path / "nda.pdf", NDA).read_bytes())}
    if CORPUS.is_dir():  # a Word file (LibreOffice, when installed) and a scanned page (OCR)
        if shutil.which("soffice") or shutil.which("libreoffice"):
            files["comments.docx"] = (DOCX, (CORPUS / "docx/python-docx_comments.docx")
                                      .read_bytes())
        if shutil.which("tesseract"):
            files["scan.pdf"] = ("application/pdf", (
                CORPUS / "pdf_scanned/ocrmypdf_ccitt_g4_scan.pdf").read_bytes())
    if shutil.which("tesseract"):  # an image is a scanned page on AWS too (one frame, OCR)
        from support.imagegen import line_of_text

        line_of_text("Lambda reads this picture").save(tmp_path / "photo.png")
        files["photo.png"] = ("image/png", (tmp_path / "photo.png").read_bytes())
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["party", "amount"])
    book.active.append(["Acme Corp", 1200])
    book.save(tmp_path / "parties.xlsx")
    files["parties.xlsx"] = ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                             (tmp_path / "parties.xlsx").read_bytes())

    slots = {}
    for name, (content_type, data) in files.items():
        slots[name] = _slot(deployed, name, content_type)
        _upload(slots[name], data, content_type)
    records, failed = deployed.drain("ingest", batches=3)
    assert (records, failed) == (len(files), 0)  # S3 -> EventBridge rule -> the ingest queue
    deployed.run_until_still()

    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        jobs = {j.source_name: j for j in shared().store.list_jobs()}
    assert {n: (j.status.value, j.failure_reason) for n, j in jobs.items()} == {
        n: ("succeeded", None) for n in files}

    assert deployed.publish() == len(files)
    assert deployed.publish() == 0  # nothing new on the stream
    for name, slot in slots.items():
        body = httpx.get(slot["result_url"]).json()
        assert (body["document_id"], body["schema"]) == (slot["document_id"], "nda"), name
        # a file that is no NDA (the corpus's Word file, the spreadsheet) may be not_applicable
        assert body["status"] in ("succeeded", "not_applicable"), (name, body["status"])
    body = httpx.get(slots["nda.pdf"]["result_url"]).json()
    assert (body["extracted_fields"]["jurisdiction"], body["extracted_fields"]["term"]) == (
        "New York", "2 years")

    from lake.catalog import query

    with deployed.as_deployer():
        rows = query(deployed.lake_uri(), "SELECT d.source_name, j.status FROM jobs j "
                     "JOIN documents d USING (document_id) ORDER BY 1").to_pylist()
        results = query(deployed.lake_uri(), "SELECT count(*) AS n FROM results").to_pylist()
    assert rows == [{"source_name": n, "status": "succeeded"} for n in sorted(files)]
    assert results == [{"n": len(files)}]


def _jobs(deployed: StackDeployment) -> dict:
    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        return {j.source_name: j for j in shared().store.list_jobs()}


def test_a_message_whose_worker_keeps_dying_ends_in_the_dlq_and_fails_its_job(
        deployed, pdf_factory):
    slot = _slot(deployed, "poison.pdf", "application/pdf")
    _upload(slot, pdf_factory("poison.pdf", 3, textless=[1]).read_bytes(), "application/pdf")
    deployed.drain("ingest")
    deployed.drain("split")

    # The read worker dies (timeout, out of memory) on every delivery: never an answer, as
    # often as the template's redrive allows (5).
    deployed.dies_on_every_delivery("read")

    deployed.poll()  # the DLQ pass fails the unit (the poller's role reads the DLQs)...
    deployed.poll()  # ...and the next pass the job
    deployed.run_until_still(skip=("read",))  # the fields message of a failed job: a failed result
    (job,) = _jobs(deployed).values()
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    assert deployed.publish() == 1
    body = httpx.get(slot["result_url"]).json()
    assert (body["status"], body["extracted_fields"], body["error"]["reason"]) == (
        "failed", None, "job_failed")


def _without(template: dict, resource_suffix: str) -> dict:
    """The template with every policy statement on ``*<resource_suffix>`` taken out."""
    import copy

    template = copy.deepcopy(template)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            document = resource["Properties"]["PolicyDocument"]
            document["Statement"] = [s for s in document["Statement"]
                                     if resource_suffix not in json.dumps(s["Resource"])]
    return template


def test_without_the_decrypted_grant_a_spreadsheet_fails_as_access_denied(iam_moto, tmp_path):
    """Finding 1: the HEAD on ``decrypted/<doc>/<job>`` every upload reader makes is a 403 on a
    role without the grant; it fails the job at once as ``access_denied`` (not five deliveries
    of an unknown error ending in the DLQ). With the stack's grant the same file succeeds (the
    end-to-end test above)."""
    import openpyxl

    deployed = StackDeployment(_without(synth(), "/decrypted/*"), iam_moto)
    book = openpyxl.Workbook()
    book.active.append(["party", "Acme Corp"])
    book.save(tmp_path / "one.xlsx")
    content_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    _upload(_slot(deployed, "one.xlsx", content_type), (tmp_path / "one.xlsx").read_bytes(),
            content_type)
    deployed.drain("ingest")
    deployed.run_until_still()
    (job,) = _jobs(deployed).values()
    assert (job.status.value, job.failure_reason) == ("failed", "access_denied")


def test_a_vision_page_is_read_by_the_model_with_its_key_from_secrets_manager(
        iam_moto, pdf_factory):
    """Finding 2: ``-c reader=gemini`` makes the key's secret; only the functions that call the
    model know it and may read it; a read function's container takes the key from Secrets
    Manager with its role (no key in any environment) and reads the page through the model."""
    from support.fake_gemini import FakeGemini, answer

    with FakeGemini(lambda call: answer("# Vision page\n\nRead by the model.", 1290, 9)) as fake:
        deployed = StackDeployment(synth((("reader", "gemini"),)), iam_moto,
                                   environment={"DOCLAKE_GEMINI_BASE_URL": fake.url})
        read_env = deployed.functions["read"].environment
        assert read_env["DOCLAKE_READER"] == "gemini"
        assert not any(k.removeprefix("DOCLAKE_") == "GEMINI_API_KEY" for k in read_env)
        assert "DOCLAKE_GEMINI_API_KEY_SECRET" not in deployed.functions["split"].environment
        deployed.client("secretsmanager").put_secret_value(
            SecretId=read_env["DOCLAKE_GEMINI_API_KEY_SECRET"], SecretString="key-from-sm")
        slot = _slot(deployed, "vision.pdf", "application/pdf")
        _upload(slot, pdf_factory("vision.pdf", 1).read_bytes(), "application/pdf")
        deployed.drain("ingest")
        deployed.run_until_still()
    (job,) = _jobs(deployed).values()
    assert (job.status.value, job.failure_reason) == ("succeeded", None)
    assert [c.model for c in fake.calls] == ["gemini-2.5-flash"]
    page = deployed.client("s3").get_object(
        Bucket=read_env["DOCLAKE_RESULTS_BUCKET"],
        Key=f"pages/{job.document_id}/{job.job_id}/00001.md")["Body"].read().decode()
    assert "Read by the model." in page


def test_results_the_stream_never_published_are_published_by_the_poller(iam_moto, tmp_path):
    """Finding 5: the stream's publisher is not the only road: a settled result still in the
    unpublished outbox after the grace is published by the poller's pass (with the poller's
    role), and the stream's late record then publishes nothing twice."""
    from support.pdfgen import make_pdf

    deployed = StackDeployment(synth((("fields_schema", "nda"),)), iam_moto,
                               environment={"DOCLAKE_PUBLISH_GRACE_S": "0"})
    slot = _slot(deployed, "nda.pdf", "application/pdf")
    _upload(slot, make_pdf(tmp_path / "nda.pdf", NDA).read_bytes(), "application/pdf")
    deployed.drain("ingest")
    deployed.run_until_still()  # its passes publish the settled claim: no stream record was delivered
    body = httpx.get(slot["result_url"]).json()
    assert (body["status"], body["extracted_fields"]["jurisdiction"]) == ("succeeded",
                                                                            "New York")
    assert deployed.publish() == 0  # the stream's records, late: already published


def test_a_put_slot_takes_one_upload_of_its_declared_size(deployed, pdf_factory):
    """Finding 6: a PUT slot signs the file's size and ``If-None-Match: *``: S3 stores one
    upload (its event plans the slot's job) and refuses a second to the same key (the bytes
    being processed stay as they are); a size over the limit or none at all gets no slot."""
    pdf = pdf_factory("once.pdf", 1).read_bytes()
    answer = deployed.invoke("presigner", {"body": json.dumps({
        "source_name": "once.pdf", "content_type": "application/pdf", "method": "PUT",
        "size": len(pdf)})})
    put = json.loads(answer["body"])["upload"]
    signed = put["url"].split("X-Amz-SignedHeaders=", 1)[1].split("&", 1)[0]
    assert {"content-length", "if-none-match"} <= set(signed.replace("%3B", ";").split(";"))
    assert httpx.put(put["url"], content=pdf, headers=put["headers"]).status_code == 200
    assert deployed.drain("ingest") == (1, 0)  # a PUT upload's event plans its job as a POST's
    (job,) = _jobs(deployed).values()
    assert (job.document_id, job.source_name) == (json.loads(answer["body"])["document_id"],
                                                  "once.pdf")
    again = httpx.put(put["url"], content=b"%PDF-1.4 other bytes", headers={
        **put["headers"], "Content-Length": "20"})
    assert again.status_code == 412  # the object exists: not overwritten
    for size in (None, 10**12):
        refused = deployed.invoke("presigner", {"body": json.dumps({
            "source_name": "x.pdf", "method": "PUT", "size": size})})
        assert refused["statusCode"] == 400, refused
