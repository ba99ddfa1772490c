"""``doclake aws preflight`` and the operator commands' refusals, run as a user runs them (the
installed ``doclake``, its own process) against a moto server: the account's Lambda quota, the
names a stack will create, a stack without the output a command needs, no region."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("boto3", reason="boto3 is not installed (pip install -e '.[aws]')")

from support import lambda_quota  # noqa: E402

REGION = "us-east-1"
# The default caps (docs/aws.md): split 2, read 4, convert 2, sheet 2, index 2, fields 2,
# ingest 2, and the small documents' read-small 2 and convert-small 2 = 20; one each for the
# poller, compaction, the weekly evals, the publisher and the front door = 5.
NEEDED = 25


@pytest.fixture(scope="module")
def moto():
    endpoint, server = lambda_quota.start()
    yield endpoint
    server.stop()


def _client(endpoint: str, service: str):
    import boto3

    return boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def _doclake(endpoint: str | None, *args: str, region: str | None = REGION,
             extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and k != "DOCLAKE_DEBUG"}
    env.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
                "AWS_SHARED_CREDENTIALS_FILE": os.devnull, **(extra_env or {})})
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    if region:
        env["AWS_DEFAULT_REGION"] = region
    doclake = Path(sys.executable).with_name("doclake")
    return subprocess.run([str(doclake), "aws", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_preflight_reports_a_small_quota_and_a_database_made_earlier(moto):
    lambda_quota.QUOTA["concurrent"] = 10
    # What ``doclake aws catalog --database doclake`` leaves: a database of the stack's name.
    _client(moto, "glue").create_database(DatabaseInput={"Name": "doclake"})
    done = _doclake(moto, "preflight", "--stack", "Doclake")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = {line.split(":", 1)[0]: line for line in done.stdout.splitlines() if ":" in line}
    assert lines["fail     lambda concurrency"].split(": ", 1)[1].startswith(
        f"quota 10, the stack needs {NEEDED} (")
    assert "L-B99A9384" in lines["fail     lambda concurrency"]
    assert "fail     glue database doclake" in lines
    assert "cdk deploy -c stack_name=NAME" in lines["fail     glue database doclake"]
    assert "ok       athena workgroup doclake" in lines
    assert "ok       dashboard doclake-operations" in lines
    assert "Traceback" not in done.stderr


def test_preflight_passes_in_a_large_account_under_a_fresh_name_with_its_own_caps(moto):
    lambda_quota.QUOTA["concurrent"] = 30
    done = _doclake(moto, "preflight", "--stack", "Doclake-Staging", "-c", "concurrency_read=2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"quota 30, the stack needs at most {NEEDED - 2} (" in done.stdout
    for name in ("glue database doclake_staging", "athena workgroup doclake-staging",
                 "dashboard doclake-staging-operations"):
        assert f"ok       {name}: free" in done.stdout
    assert "nothing found that would fail (4 checks)" in done.stdout


def test_preflight_refuses_a_setting_that_does_not_exist(moto):
    done = _doclake(moto, "preflight", "-c", "concurency_read=2")
    assert done.returncode == 2
    assert "concurency_read: not a deploy setting" in done.stderr


def _stack_with_outputs(endpoint: str, name: str, outputs: dict[str, str]) -> None:
    body = {"Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
            "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
    _client(endpoint, "cloudformation").create_stack(StackName=name,
                                                     TemplateBody=json.dumps(body))


def test_setup_on_a_stack_without_the_output_exits_2_with_what_to_run(moto):
    _stack_with_outputs(moto, "Older", {"LakeBucket": "a-lake"})
    for command in (("setup",), ("catalog",), ("smoke",)):
        done = _doclake(moto, *command, "--stack", "Older")
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        assert "stack Older has no output" in done.stderr, done.stderr
        assert "hint: deploy this version of doclake to it first: cdk deploy" in done.stderr


def test_a_stack_that_does_not_exist_says_so_and_names_preflight(moto):
    done = _doclake(moto, "setup", "--stack", "Nowhere")
    assert done.returncode == 2
    assert "Nowhere" in done.stderr and "doclake aws preflight" in done.stderr
    assert "Traceback" not in done.stderr


def test_without_a_region_the_hint_names_the_variable_boto3_reads(moto):
    done = _doclake(moto, "preflight", region=None, extra_env={"AWS_REGION": "eu-west-1"})
    assert done.returncode == 2
    assert "AWS_DEFAULT_REGION" in done.stderr
    assert "AWS_REGION=eu-west-1 is set, but boto3 does not read it" in done.stderr
