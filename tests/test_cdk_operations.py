"""Day one and day thirty of the deployed stack (issue 48), read from the synthesized template:
alarms that can notify, dead-letter alarms that see held messages, logs and intermediate objects
that expire, lake events no worker can delete, cost tags, and cdk-nag acknowledgements that hold
only where they were given. One synth (with cdk-nag) for the module, niced by the caller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")
pytest.importorskip("cdk_nag", reason="cdk-nag is in the cdk extra")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from aws_cdk import App

    from infra.aws.cdk.nag import add_checks
    from infra.aws.cdk.settings import DeploySettings
    from infra.aws.cdk.stack import DoclakeStack

    out = tmp_path_factory.mktemp("cdk")
    app = App(outdir=str(out / "assembly"))
    stack = DoclakeStack(app, "Doclake", settings=DeploySettings(), build_dir=out / "zips")
    assert add_checks(app)
    assembly = app.synth()
    template = json.loads((Path(assembly.directory) / "Doclake.template.json").read_text())
    return template, stack


def _of(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _default(template: dict, value) -> object:
    """A ``{"Ref": parameter}`` as the parameter's default (what a deploy gets untouched)."""
    assert isinstance(value, dict) and set(value) == {"Ref"}, value
    return template["Parameters"][value["Ref"]]["Default"]


def test_cloudwatch_may_publish_to_the_alarms_topic_and_every_alarm_notifies_it(synth):
    template, _ = synth
    (topic,) = _of(template, "AWS::SNS::Topic")
    (policy,) = _of(template, "AWS::SNS::TopicPolicy").values()
    allows = [s for s in policy["Properties"]["PolicyDocument"]["Statement"]
              if s["Effect"] == "Allow"]
    assert [(s["Principal"], s["Action"], s["Resource"]) for s in allows] == [
        ({"Service": "cloudwatch.amazonaws.com"}, "sns:Publish", {"Ref": topic})]
    assert allows[0]["Condition"] == {"StringEquals": {"aws:SourceAccount":
                                                       {"Ref": "AWS::AccountId"}}}
    alarms = _of(template, "AWS::CloudWatch::Alarm").values()
    assert len(alarms) > 30
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic}], alarm


def test_the_alarm_email_is_a_parameter_and_empty_means_no_subscription(synth):
    template, _ = synth
    assert template["Parameters"]["AlarmEmail"]["Default"] == ""
    (subscription,) = _of(template, "AWS::SNS::Subscription").values()
    condition = template["Conditions"][subscription["Condition"]]
    assert condition == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]}
    assert subscription["Properties"]["Endpoint"] == {"Ref": "AlarmEmail"}


def test_every_dead_letter_queue_alarm_counts_visible_and_hidden_messages(synth):
    """The poller hides dead letters for hours: an alarm on the visible count alone never
    fires. Each queue that is no work queue (no redrive: the DLQs and the stream's failures
    queue) has an alarm summing visible and not-visible messages."""
    template, _ = synth
    queues = _of(template, "AWS::SQS::Queue")
    dead = {k for k, v in queues.items() if "RedrivePolicy" not in v["Properties"]}
    # 9 DLQs (two of them the small documents' twins') and the publisher's failures queue
    assert len(dead) == 10
    watched: dict[str, set[str]] = {}
    for alarm in _of(template, "AWS::CloudWatch::Alarm").values():
        metrics = alarm["Properties"].get("Metrics")
        if not metrics:
            continue
        (expression,) = [m for m in metrics if "Expression" in m]
        by_id = {m["Id"]: m["MetricStat"]["Metric"] for m in metrics if "MetricStat" in m}
        names = {by_id[i]["MetricName"] for i in expression["Expression"].split(" + ")}
        (queue,) = {json.dumps(d["Value"]) for m in by_id.values() for d in m["Dimensions"]}
        watched[json.loads(queue)["Fn::GetAtt"][0]] = names
    assert set(watched) == dead
    assert all(n == {"ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible"}
               for n in watched.values())


def test_every_function_logs_to_a_group_kept_for_the_retention_parameter(synth):
    template, _ = synth
    assert template["Parameters"]["LogRetentionDays"]["Default"] == "30"  # in AllowedValues
    groups = _of(template, "AWS::Logs::LogGroup")
    functions = _of(template, "AWS::Lambda::Function")
    assert len(functions) == 12
    for name, function in functions.items():
        group = function["Properties"]["LoggingConfig"]["LogGroup"]
        (logical,) = {group["Ref"]}
        assert groups[logical]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name


def test_pages_conversions_and_decrypted_copies_expire_after_the_parameters_days(synth):
    template, stack = synth
    results = template["Resources"][stack.get_logical_id(stack.results.node.default_child)]
    rules = {r.get("Prefix"): r for r in results["Properties"]["LifecycleConfiguration"]["Rules"]}
    for prefix in ("pages/", "converted/", "decrypted/"):
        assert rules[prefix]["ExpirationInDays"] == {"Ref": "IntermediateRetentionDays"}
        assert rules[prefix]["Status"] == "Enabled"
    assert "results/" not in rules and "reports/" not in rules  # what users read is kept
    assert template["Parameters"]["IntermediateRetentionDays"]["Default"] == 7


def test_no_worker_may_delete_a_lake_event_and_the_lake_is_versioned(synth):
    template, stack = synth
    lake_logical = stack.get_logical_id(stack.lake.node.default_child)
    lake = template["Resources"][lake_logical]["Properties"]
    assert lake["VersioningConfiguration"] == {"Status": "Enabled"}
    events = {"Fn::Join": ["", [{"Fn::GetAtt": [lake_logical, "Arn"]}, "/events/*"]]}
    roles = {k for k, v in _of(template, "AWS::IAM::Role").items()
             if "lambda.amazonaws.com" in json.dumps(v["Properties"]["AssumeRolePolicyDocument"])}
    compaction = stack.resolve(stack.functions["compaction"].role.node.default_child.ref)
    assert len(roles) == 12
    denied: dict[str, set[str]] = {}
    # A role whose inline policy grew past IAM's size limit has the rest in a managed
    # "OverflowPolicy" that CDK attaches to it: a deny there holds as well.
    policies = [*_of(template, "AWS::IAM::Policy").values(),
                *_of(template, "AWS::IAM::ManagedPolicy").values()]
    for policy in policies:
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Deny" and statement["Resource"] == events:
                actions = statement["Action"]
                for role in policy["Properties"].get("Roles", []):
                    denied[role["Ref"]] = {actions} if isinstance(actions, str) else set(actions)
    assert set(denied) == roles
    for role, actions in denied.items():
        if role == compaction["Ref"]:
            assert actions == {"s3:DeleteObjectVersion"}  # a delete marker, recoverable
        else:
            assert actions == {"s3:DeleteObject", "s3:DeleteObjectVersion"}, role


def test_every_taggable_resource_carries_the_cost_tags(synth):
    from aws_cdk import CfnResource, TagManager

    template, stack = synth
    taggable = [c for c in stack.node.find_all() if isinstance(c, CfnResource)
                and TagManager.is_taggable(c) and c.cfn_options.condition is None]
    kinds = {c.cfn_resource_type for c in taggable}
    assert {"AWS::S3::Bucket", "AWS::SQS::Queue", "AWS::Lambda::Function", "AWS::IAM::Role",
            "AWS::Logs::LogGroup", "AWS::DynamoDB::Table", "AWS::SNS::Topic",
            "AWS::Athena::WorkGroup"} <= kinds
    for resource in taggable:
        props = template["Resources"][stack.get_logical_id(resource)]["Properties"]
        tags = props.get("Tags")
        found = ({t["Key"]: t["Value"] for t in tags} if isinstance(tags, list) else tags) or {}
        assert (found.get("project"), found.get("doclake:stack")) == ("doclake", "Doclake"), (
            resource.cfn_resource_type, stack.get_logical_id(resource))


def test_account_wide_names_follow_the_stack_name(tmp_path):
    from aws_cdk import App
    from aws_cdk.assertions import Template

    from infra.aws.cdk.settings import DeploySettings
    from infra.aws.cdk.stack import DoclakeStack

    app = App(outdir=str(tmp_path / "out"))
    stack = DoclakeStack(app, "Doclake-Staging", settings=DeploySettings(),
                         build_dir=tmp_path / "zips")
    template = Template.from_stack(stack).to_json()
    (database,) = _of(template, "AWS::Glue::Database").values()
    (workgroup,) = _of(template, "AWS::Athena::WorkGroup").values()
    (dashboard,) = _of(template, "AWS::CloudWatch::Dashboard").values()
    assert database["Properties"]["DatabaseInput"]["Name"] == "doclake_staging"
    assert workgroup["Properties"]["Name"] == "doclake-staging"
    assert dashboard["Properties"]["DashboardName"] == "doclake-staging-operations"


def test_the_uploader_policy_lets_a_client_call_the_front_door_and_nothing_else(synth):
    template, stack = synth
    policy = template["Resources"][stack.get_logical_id(stack.uploader_policy.node.default_child)]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    presigner = {"Fn::GetAtt": [stack.get_logical_id(stack.presigner.node.default_child), "Arn"]}
    assert sorted(s["Action"] for s in statements) == ["lambda:InvokeFunction",
                                                      "lambda:InvokeFunctionUrl"]
    assert all(s["Resource"] == presigner for s in statements)
    assert template["Outputs"]["UploaderPolicy"]["Value"] == {
        "Ref": stack.get_logical_id(stack.uploader_policy.node.default_child)}


def test_concurrency_caps_are_parameters_whose_defaults_are_the_settings(synth):
    from infra.aws.cdk.settings import DeploySettings

    template, _ = synth
    caps = {}
    for mapping in _of(template, "AWS::Lambda::EventSourceMapping").values():
        scaling = mapping["Properties"].get("ScalingConfig")
        if scaling:
            ref = scaling["MaximumConcurrency"]
            caps[ref["Ref"]] = _default(template, ref)
    assert caps["ConcurrencyRead"] == DeploySettings().concurrency_read == 4
    assert len(caps) == 9  # seven queues and the small documents' two twins
    for name in caps:
        assert (template["Parameters"][name]["MinValue"],
                template["Parameters"][name]["MaxValue"]) == (2, 1000)


def test_nag_acknowledgements_are_given_to_constructs_never_to_the_stack(synth):
    from aws_cdk import Validations

    _, stack = synth
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    on_stack = [m for m in stack.node.metadata if m.type == key]
    assert on_stack == []
    holders = {c.node.path for c in stack.node.find_all()
               if any(m.type == key for m in c.node.metadata)}
    assert "Doclake/PublisherFailures" in holders and "Doclake/ReadFunction" in holders


def _nag_failures(tmp_path, probe) -> set[str]:
    from aws_cdk import App

    from infra.aws.cdk.nag import add_checks
    from infra.aws.cdk.settings import DeploySettings
    from infra.aws.cdk.stack import DoclakeStack

    app = App(outdir=str(tmp_path / "assembly"))
    stack = DoclakeStack(app, "Doclake", settings=DeploySettings(), build_dir=tmp_path / "zips")
    probe(stack)
    add_checks(app)
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "assembly" / "validation-report.json").read_text())
    return {f"{v['ruleName']} {c['constructPath']}" for p in report["pluginReports"]
            for v in p["violations"] for c in v["violatingConstructs"]}


def test_a_wildcard_grant_or_a_queue_without_a_dead_letter_queue_fails_the_synth(tmp_path):
    """The stack-wide acknowledgements of before let both through. Here each is found on the
    construct that has it, although the same finding is acknowledged elsewhere (the publisher's
    ``Resource::*``, the failures queue's SQS3)."""
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_sqs as sqs

    def probe(stack):
        stack.functions["read"].add_to_role_policy(iam.PolicyStatement(
            actions=["s3:PutObject"], resources=["*"]))
        sqs.Queue(stack, "NoDeadLetters", enforce_ssl=True,
                  encryption=sqs.QueueEncryption.SQS_MANAGED)

    found = _nag_failures(tmp_path, probe)
    assert "AwsSolutions-IAM5[Resource::*] Doclake/ReadFunction/ServiceRole/DefaultPolicy/" \
           "Resource" in found, found
    assert "AwsSolutions-SQS3 Doclake/NoDeadLetters/Resource" in found, found
    assert len(found) == 2, found


def test_synthesizing_into_a_folder_leaves_the_checkout_as_it_was(tmp_path):
    """``build/zips`` was written into the checkout whatever output folder was given: the
    checkout's ``git status --ignored`` is the same after a synth (as ``cdk synth`` runs it)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")

    def status() -> str:
        return subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout

    before = status()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CDK_OUTDIR")}
    done = subprocess.run([sys.executable, str(ROOT / "infra/aws/cdk/app.py"),
                           str(tmp_path / "assembly")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "assembly" / "Doclake.template.json").exists()
    assert status() == before
