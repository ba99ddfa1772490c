"""The first deploy as a person goes through it, on the template-built moto deployment
(``support.awsstack``: every resource type created from the template's own properties, or named
with the reason it is not): the stack's outputs read from CloudFormation, ``doclake aws setup``
running exactly the printed Athena SQL, ``doclake aws smoke`` taking one document from the front
door to its result JSON, and the analyst policy."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
pytest.importorskip("awswrangler")

from support.awsstack import NOT_CREATED, StackDeployment, synth  # noqa: E402

from infra.aws import outputs as names  # noqa: E402
from lake.athena import script_statements  # noqa: E402

CONTEXT = (("fields_schema", "nda"),)


@pytest.fixture(scope="module")
def deployed(iam_moto):
    deployment = StackDeployment(synth(CONTEXT), iam_moto)
    yield deployment
    deployment.close()


def _doclake(deployed: StackDeployment, *args: str, credentials=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "infra.cli.main", *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=deployed.cli_environment(credentials))


def _run(deployed: StackDeployment, *args: str, credentials=None) -> str:
    process = _doclake(deployed, *args, credentials=credentials)
    out, err = process.communicate(timeout=240)
    assert process.returncode == 0, (args, out, err)
    return out


def test_every_resource_type_is_created_from_the_template_or_named_with_its_reason(deployed):
    template = deployed.template["Resources"]
    print("not created:", json.dumps(deployed.not_created, indent=2))
    assert deployed.not_created == {k: NOT_CREATED[k] for k in (
        "AWS::Lambda::EventInvokeConfig", "AWS::Lambda::Permission", "AWS::Logs::LogGroup",
        "AWS::S3::BucketPolicy", "AWS::SNS::TopicPolicy", "AWS::SQS::QueuePolicy")}
    assert all(len(reason) > 20 for reason in deployed.not_created.values())

    def count(kind: str) -> int:
        return sum(r["Type"] == kind for r in template.values())

    glue = deployed.client("glue")
    database = deployed.outputs[names.DATABASE]
    tables = glue.get_tables(DatabaseName=database)["TableList"]
    assert len(tables) == count("AWS::Glue::Table") > 0
    assert glue.get_database(Name=database)["Database"]["Parameters"]["doclake_owner"] == (
        "cloudformation")
    alarms = deployed.client("cloudwatch").describe_alarms()["MetricAlarms"]
    ours = [a for a in alarms if a["AlarmName"].startswith(deployed.prefix)]
    assert len(ours) == count("AWS::CloudWatch::Alarm") > 0
    topic = deployed.outputs[names.ALARMS_TOPIC]
    assert all(a["AlarmActions"] == [topic] for a in ours)
    workgroup = deployed.client("athena").get_work_group(
        WorkGroup=deployed.outputs[names.WORKGROUP])["WorkGroup"]
    assert workgroup["Configuration"]["ResultConfiguration"]["OutputLocation"] == (
        deployed.outputs[names.ATHENA_RESULTS])


def test_a_glue_table_naming_a_database_the_template_does_not_create_fails_the_deploy(
        iam_moto):
    """What a first ``cdk deploy`` met: ``DatabaseInput: {}`` (jsii dropped the PascalCase
    keys) and every table naming ``doclake``; CloudFormation rolls back, and so does this."""
    template = copy.deepcopy(synth(CONTEXT))
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Glue::Database":
            resource["Properties"]["DatabaseInput"] = {}
        if resource["Type"] == "AWS::Glue::Table":
            resource["Properties"]["DatabaseName"] = "doclake"
    with pytest.raises(LookupError, match="names database 'doclake', which the template does "
                       "not create"):
        StackDeployment(template, iam_moto)


def test_the_cli_reads_every_name_from_the_stacks_outputs(deployed):
    """``describe_stacks`` answers the template's outputs, resolved: the CLI needs nothing
    else. (The harness publishes them as a CloudFormation stack of the deployment's name.)"""
    from infra.aws.outputs import StackNotFound, stack_outputs

    found = stack_outputs(deployed.client("cloudformation"), deployed.stack_name)
    assert set(found.values) == set(deployed.template["Outputs"])
    s3 = deployed.client("s3")
    for key in (names.UPLOADS_BUCKET, names.RESULTS_BUCKET, names.LAKE_BUCKET):
        s3.head_bucket(Bucket=found[key])  # each names a bucket the stack made
    assert found[names.STATE_TABLE] == deployed.resource("AWS::DynamoDB::Table", "State")["Ref"]
    with pytest.raises(StackNotFound, match="no output 'Nope'"):
        found["Nope"]
    with pytest.raises(StackNotFound):
        stack_outputs(deployed.client("cloudformation"), "no-such-stack")
    process = _doclake(deployed, "aws", "setup", "--stack", "no-such-stack")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2 and "no-such-stack" in err, (out, err)


def test_setup_runs_in_the_workgroup_exactly_the_sql_lake_views_prints(deployed):
    printed = _run(deployed, "lake", "views", "--dialect", "athena", "--bucket",
                   deployed.outputs[names.LAKE_BUCKET], "--database",
                   deployed.outputs[names.DATABASE], "--projection-start",
                   deployed.outputs[names.PROJECTION_START])
    assert _run(deployed, "aws", "setup", "--stack", deployed.stack_name, "--print") == printed
    out = _run(deployed, "aws", "setup", "--stack", deployed.stack_name)
    print(out)
    ids = re.findall(r"query ([0-9a-f-]{36})\)", out)
    athena = deployed.client("athena")
    executions = [athena.get_query_execution(QueryExecutionId=i)["QueryExecution"] for i in ids]
    wanted = script_statements(printed)
    assert [e["Query"] for e in executions] == wanted
    assert {e["WorkGroup"] for e in executions} == {deployed.outputs[names.WORKGROUP]}
    jobs = [e["Query"] for e in executions if e["Query"].startswith(
        f"CREATE OR REPLACE VIEW {deployed.outputs[names.DATABASE]}.jobs AS")]
    assert len(jobs) == 1 and "FROM" in jobs[0]
    assert f"done: {len(wanted)} statements" in out


def test_smoke_takes_one_document_from_the_front_door_to_its_result(deployed):
    process = _doclake(deployed, "aws", "smoke", "--stack", deployed.stack_name, "--timeout",
                       "200")
    deployed.play_while(process)
    out, err = process.communicate()
    print(out, err)
    assert process.returncode == 0, (out, err)
    head = out.splitlines()[0]
    # the smoke page is no NDA: read, indexed, and the fields schema does not apply
    match = re.fullmatch(r"document ([0-9a-f-]{36}): (not_applicable|succeeded) in ([0-9.]+) s",
                         head)
    assert match, head
    body = json.loads(out.split("\n", 1)[1])
    assert (body["document_id"], body["status"]) == (match[1], match[2])
    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        (job,) = [j for j in shared().store.list_jobs() if j.document_id == match[1]]
    assert (job.status.value, job.source_name, job.pages) == ("succeeded", "doclake-smoke.pdf", 1)
    assert 0 < float(match[3]) < 200


def test_the_analyst_policy_reads_the_catalog_lake_and_results_and_writes_nothing_else(
        deployed):
    from botocore.exceptions import ClientError

    analyst = deployed.user_with("AnalystPolicy")
    s3_admin = deployed.client("s3")
    results, lake = deployed.outputs[names.RESULTS_BUCKET], deployed.outputs[names.LAKE_BUCKET]
    uploads = deployed.outputs[names.UPLOADS_BUCKET]
    s3_admin.put_object(Bucket=results, Key="results/x.json", Body=b"{}")
    s3_admin.put_object(Bucket=uploads, Key="uploads/x/y", Body=b"secret")
    s3 = deployed.server.client("s3", analyst)
    assert s3.get_object(Bucket=results, Key="results/x.json")["Body"].read() == b"{}"
    s3.put_object(Bucket=lake, Key="athena-results/q.csv", Body=b"a")  # Athena writes as them
    for call in (lambda: s3.get_object(Bucket=uploads, Key="uploads/x/y"),
                 lambda: s3.put_object(Bucket=results, Key="results/x.json", Body=b"x"),
                 lambda: s3.put_object(Bucket=lake, Key="events/x.parquet", Body=b"x")):
        with pytest.raises(ClientError, match="AccessDenied"):
            call()
    glue = deployed.server.client("glue", analyst)
    database = deployed.outputs[names.DATABASE]
    assert glue.get_tables(DatabaseName=database)["TableList"]
    for call in (lambda: glue.delete_table(DatabaseName=database, Name="raw_job_created"),
                 lambda: glue.get_tables(DatabaseName="another_database")):
        with pytest.raises(ClientError, match="AccessDenied"):
            call()


def test_a_key_put_after_the_first_uploads_gets_every_document_read(pdf_factory):
    """The stack's secret starts as the placeholder: the first uploads' reads are retried as
    ``model_key_not_set`` (no model asked); a wrong key (Gemini's 400 "API key not valid") is
    retried too, never the terminal ``model_rejected``; once the right key is put, the next
    deliveries read every page and every document succeeds. The functions here reread the
    secret on each invocation (the harness starts each one cold); a warm container's minute
    of cache is ``test_the_key_is_read_again_once_its_max_age_has_passed``."""
    from support.awsstack import PIPELINE, IamMoto
    from support.fake_gemini import FakeGemini, answer, error
    from support.simclock import SimClock

    from extract.models.config import KEY_PLACEHOLDER

    def respond(call):
        if call.api_key != "the-real-key":
            return error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API "
                         "key.")
        return answer(f"page text {call.n}")

    server = IamMoto()
    try:
        with FakeGemini(respond) as fake, SimClock(server) as clock:
            deployed = StackDeployment(synth((("reader", "gemini"),)), server,
                                       environment={"DOCLAKE_GEMINI_BASE_URL": fake.url})
            secret = deployed.outputs[names.GEMINI_KEY_SECRET]
            secrets = deployed.client("secretsmanager")
            assert secrets.get_secret_value(SecretId=secret)["SecretString"] == KEY_PLACEHOLDER
            slots = [_slot_and_upload(deployed, f"doc{n}.pdf",
                                      pdf_factory(f"doc{n}.pdf", 2).read_bytes())
                     for n in range(3)]

            def play() -> list:
                for function in PIPELINE:
                    deployed.drain(function, batches=10)
                deployed.poll()
                return _jobs(deployed)

            play()
            assert fake.calls == []  # the placeholder: no model asked
            secrets.put_secret_value(SecretId=secret, SecretString="a-wrong-key")
            clock.advance(clock.next_visible_s() + 0.01)
            jobs = play()
            assert fake.calls and {c.api_key for c in fake.calls} == {"a-wrong-key"}
            assert {j.status.value for j in jobs} == {"extracting"}, jobs
            secrets.put_secret_value(SecretId=secret, SecretString="the-real-key")
            for _ in range(20):
                # A message may turn visible while play() runs (the clocks tick with real time:
                # on a loaded machine its retry is due before the next read drain): then nothing
                # is hidden and the next play() takes it; the loop ends on the jobs, not the queue.
                due = clock.next_visible_s()
                if due is not None:
                    clock.advance(due + 0.01)
                jobs = play()
                if all(j.status.terminal for j in jobs):
                    break
            ledger = _query_lake(deployed, "SELECT outcome, http_status FROM model_calls")
    finally:
        server.close()
    assert sorted((j.source_name, j.status.value, j.failure_reason) for j in jobs) == [
        (f"doc{n}.pdf", "succeeded", None) for n in range(3)]
    assert len(slots) == 3
    assert {(c["outcome"], c["http_status"]) for c in ledger} >= {("ok", 200), ("error", 400)}


def test_the_key_is_read_again_once_its_max_age_has_passed(iam_moto, monkeypatch):
    """A warm container keeps the key it read for ``KEY_MAX_AGE_S``, then asks again: a key put
    after the deploy takes within a minute without a new container."""
    import time

    import boto3
    import time_machine

    from infra.aws.runtime import KEY_MAX_AGE_S, ModelKey

    admin = iam_moto.client("secretsmanager")
    arn = admin.create_secret(Name="key-age-test", SecretString="first")["ARN"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", iam_moto.endpoint)
    session = boto3.session.Session(aws_access_key_id=iam_moto.admin[0],
                                    aws_secret_access_key=iam_moto.admin[1],
                                    region_name="us-east-1")
    with time_machine.travel(time.time(), tick=False) as traveller:
        key = ModelKey(session, arn)
        assert key.current() == "first"
        admin.put_secret_value(SecretId=arn, SecretString="second")
        traveller.shift(KEY_MAX_AGE_S - 1)
        assert key.current() == "first"  # cached
        traveller.shift(2)
        assert key.current() == "second"
    assert ModelKey(session, None).current() is None


def _slot_and_upload(deployed: StackDeployment, name: str, data: bytes) -> dict:
    import urllib.request

    answer = deployed.invoke("presigner", {"body": json.dumps({
        "source_name": name, "content_type": "application/pdf", "method": "PUT",
        "size": len(data)})})
    assert answer["statusCode"] == 201, answer
    slot = json.loads(answer["body"])
    put = slot["upload"]
    with urllib.request.urlopen(urllib.request.Request(put["url"], data=data, method="PUT",
                                                       headers=put["headers"])) as response:
        assert response.status == 200
    assert deployed.drain("ingest") == (1, 0)
    return slot


def _jobs(deployed: StackDeployment) -> list:
    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        return shared().store.list_jobs()


def _query_lake(deployed: StackDeployment, sql: str) -> list[dict]:
    from lake.catalog import query

    with deployed.as_deployer():
        return query(deployed.lake_uri(), sql).to_pylist()


def test_a_poller_invocation_at_its_deadline_starts_no_step(deployed):
    import asyncio
    import time

    from infra.aws.deadline import Deadline
    from infra.aws.lambdas.poller import run_passes

    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        started = time.monotonic()
        passes = asyncio.run(run_passes(shared(), holder="late", loop_s=30, interval_s=0.01,
                                        deadline=Deadline(time.monotonic())))
    assert passes == 0 and time.monotonic() - started < 5


def test_the_deploy_page_commands_run_against_the_deployment(deployed):
    """Every ``doclake aws`` line of docs/aws.md (skipped by the docs collector: no stack
    there) runs here against the template-built deployment, its stack's name for ``Doclake``;
    and the page's outputs table names every output the stack declares."""
    from pathlib import Path

    from support.docs_examples import examples

    page = Path(__file__).resolve().parents[1] / "docs" / "aws.md"
    commands = [e.code for e in examples([page]) if e.code.startswith("doclake aws ")
                and "--stack Doclake" in e.code]
    assert {c.split()[2] for c in commands} >= {"setup", "smoke"}
    for command in commands:
        args = command.replace("--stack Doclake", f"--stack {deployed.stack_name}").split()[1:]
        args = args[:args.index(">")] if ">" in args else args
        process = _doclake(deployed, *args)
        if "smoke" in args:
            deployed.play_while(process)
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, (command, out, err)
    text = page.read_text()
    from infra.aws.outputs import DESCRIPTIONS

    assert [key for key in DESCRIPTIONS if f"| `{key}` |" not in text] == []


def test_catalog_with_the_stack_writes_the_views_into_glue_and_leaves_the_raw_tables(deployed):
    """The road without an Athena query: ``doclake aws catalog --stack`` reads the bucket and
    database from the outputs, writes every view into moto's Glue as a ``VIRTUAL_VIEW``, and
    leaves the stack's own raw tables to CloudFormation."""
    from lake.athena import athena_views

    glue = deployed.client("glue")
    database = deployed.outputs[names.DATABASE]
    raw_before = {t["Name"]: t for t in glue.get_tables(DatabaseName=database)["TableList"]
                  if t["Name"].startswith("raw_")}
    out = _run(deployed, "aws", "catalog", "--stack", deployed.stack_name)
    assert "the CDK stack's" in out, out
    tables = {t["Name"]: t for t in glue.get_tables(DatabaseName=database)["TableList"]}
    assert {n for n, t in tables.items() if t.get("TableType") == "VIRTUAL_VIEW"} == set(
        athena_views())
    assert {n: t.get("UpdateTime") for n, t in tables.items() if n in raw_before} == {
        n: t.get("UpdateTime") for n, t in raw_before.items()}


def test_sql_on_athena_takes_the_database_and_workgroup_from_the_stack(deployed, monkeypatch):
    import boto3

    from infra.cli.aws import athena_settings

    monkeypatch.setenv("AWS_ENDPOINT_URL", deployed.server.endpoint)
    session = boto3.Session(aws_access_key_id=deployed.server.admin[0],
                            aws_secret_access_key=deployed.server.admin[1],
                            region_name="us-east-1")
    found = athena_settings({"DOCLAKE_AWS_STACK": deployed.stack_name}, session)
    assert (found["database"], found["workgroup"]) == (deployed.outputs[names.DATABASE],
                                                       deployed.outputs[names.WORKGROUP])
    assert athena_settings({"DOCLAKE_AWS_STACK": deployed.stack_name,
                            "DOCLAKE_ATHENA_WORKGROUP": "mine"}, session)["workgroup"] == "mine"
    assert athena_settings({}, session)["database"] == "doclake"  # no stack: the defaults
