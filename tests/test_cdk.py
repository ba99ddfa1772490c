"""The CDK app's synthesized template, without an AWS account or Docker: resources, concurrency
caps, redrive and the retry budget, partition projection, IAM scoping, cfn-lint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")

from infra.aws.cdk.settings import DeploySettings  # noqa: E402

BROWNOUT_S = 25 * 60
BUDGET_FLOOR_S = 30 * 60


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from aws_cdk.assertions import Template

    from infra.aws.cdk.app import build

    out = tmp_path_factory.mktemp("cdk")
    app, stack = build(str(out))
    template = Template.from_stack(stack)
    return template, template.to_json(), stack, out


def _resources(template_json, kind):
    return {k: v for k, v in template_json["Resources"].items() if v["Type"] == kind}


def test_buckets_block_public_access_encrypt_and_expire(synth):
    template, tj, _, _ = synth
    buckets = _resources(tj, "AWS::S3::Bucket")
    assert len(buckets) == 3
    for bucket in buckets.values():
        props = bucket["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True}
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert props["LifecycleConfiguration"]["Rules"]
    enabled = [b for b in buckets.values() if b["Properties"].get("NotificationConfiguration")]
    assert [b["Properties"]["NotificationConfiguration"] for b in enabled] == [
        {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}]
    assert not _resources(tj, "Custom::S3BucketNotifications")  # no custom-resource Lambda


def test_concurrency_is_capped_on_the_event_sources_and_nothing_is_reserved(synth):
    """Finding 4: no function reserves concurrency (a reservation is taken from the account's
    quota, and a throttled receive counts toward maxReceiveCount); each SQS event source caps
    its own with ``ScalingConfig.MaximumConcurrency``, small by default."""
    _, tj, _, _ = synth
    functions = _resources(tj, "AWS::Lambda::Function").values()
    assert not [f for f in functions if "ReservedConcurrentExecutions" in f["Properties"]]
    # Each cap is a CloudFormation parameter (an operator changes it in the console); its
    # default is what a deploy gets.
    caps = {m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]: tj["Parameters"][
            m["Properties"]["ScalingConfig"]["MaximumConcurrency"]["Ref"]]["Default"]
            for m in _resources(tj, "AWS::Lambda::EventSourceMapping").values()
            if "StartingPosition" not in m["Properties"]}
    assert len(caps) == 9 and all(isinstance(c, int) and 2 <= c <= 1000 for c in caps.values())
    assert sum(caps.values()) <= 20  # the defaults run in an account with a small quota
    read = next(v for k, v in caps.items() if k.startswith("ReadQueue"))
    assert read == DeploySettings().concurrency_read


def test_a_large_account_takes_the_write_ups_figures_with_one_setting():
    settings = DeploySettings.from_context({"size": "large", "concurrency_read": "300"}.get)
    specs = settings.functions()
    assert {k: specs[k].concurrency for k in ("split", "read", "convert", "sheet")} == {
        "split": 100, "read": 300, "convert": 100, "sheet": 100}
    with pytest.raises(ValueError, match="small or large"):
        DeploySettings.from_context({"size": "huge"}.get)


def test_the_deploy_page_lists_every_setting_with_its_default():
    """docs/aws.md's settings table is what a deployer reads to choose ``-c`` values: each
    field of ``DeploySettings`` has a row, and the default the row states is the code's."""
    from dataclasses import fields

    page = (Path(__file__).resolve().parents[1] / "docs" / "aws.md").read_text()
    rows = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            for name in cells[0].replace("`", "").replace("(and", ",").split(","):
                rows[name.strip().split()[0] if name.strip() else ""] = cells[1]
    defaults = DeploySettings()
    missing = [f.name for f in fields(DeploySettings) if f.name not in rows
               and not f.name.startswith("concurrency_")]
    assert missing == []
    for f in fields(DeploySettings):
        if f.name.startswith("concurrency_") or f.name not in rows:
            continue
        value = getattr(defaults, f.name)
        stated = rows[f.name].replace("`", "")
        assert (stated == "empty") if value == "" else str(value) in stated, (f.name, stated)


def test_every_queue_redrives_to_its_dlq_and_outlasts_a_brownout(synth):
    _, tj, stack, _ = synth
    queues = [q["Properties"] for q in _resources(tj, "AWS::SQS::Queue").values()
              if "RedrivePolicy" in q["Properties"]]
    assert len(queues) == len(stack.queues) == 9  # with read-small and convert-small
    for props in queues:
        receives = props["RedrivePolicy"]["maxReceiveCount"]
        assert receives == 5
        budget = props["VisibilityTimeout"] * receives
        assert budget > BUDGET_FLOOR_S > BROWNOUT_S, props
    # Each function's queue hides a message at least as long as the function may run.
    functions = settings_functions()
    for name, queue in stack.queues.items():
        visibility = stack.resolve(queue.node.default_child.visibility_timeout)
        assert visibility >= functions[name.removesuffix("-small")].timeout_s


def settings_functions():
    return DeploySettings().functions()


def test_in_function_retries_grow_and_add_to_the_budget():
    from infra.aws.sqs import retry_visibility_s

    waits = [retry_visibility_s(n) for n in range(1, 5)]
    assert waits == sorted(waits) and waits[0] == 120 and max(waits) <= 900
    assert sum(waits) > BROWNOUT_S  # retried messages alone span the 25-minute brownout


def test_event_sources_report_partial_batch_failures(synth):
    _, tj, _, _ = synth
    mappings = [m["Properties"] for m in _resources(tj, "AWS::Lambda::EventSourceMapping").values()]
    sqs_sources = [m for m in mappings if "StartingPosition" not in m]
    assert len(sqs_sources) == 9
    assert all(m["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in sqs_sources)
    (stream,) = [m for m in mappings if "StartingPosition" in m]
    filters = json.dumps(stream["FilterCriteria"])
    assert "succeeded" in filters  # a job item in a terminal status
    assert '{\\"prefix\\":\\"claim#\\"}' in filters and "gsi_unpublished" in filters  # a fields
    # result in the outbox: the publisher (in the image) publishes the fields stage's result


def test_table_has_a_stream_ttl_and_the_adapters_indexes(synth):
    from infra.aws.tables import INDEXES

    _, tj, _, _ = synth
    (table,) = [t["Properties"] for t in _resources(tj, "AWS::DynamoDB::Table").values()]
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["TimeToLiveSpecification"]["Enabled"] is True
    assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == set(INDEXES)


def test_glue_tables_use_partition_projection_and_athena_has_limits(synth):
    _, tj, _, _ = synth
    tables = [t["Properties"]["TableInput"] for t in _resources(tj, "AWS::Glue::Table").values()]
    assert len(tables) >= 10
    for table in tables:
        params = table["Parameters"]
        assert params["projection.enabled"] == "true"
        assert params["projection.dt.type"] == "date"
        template = json.dumps(params["storage.location.template"])
        assert "dt=${dt}" in template and "Lake" in template  # the lake bucket, by reference
    (workgroup,) = [w["Properties"] for w in _resources(tj, "AWS::Athena::WorkGroup").values()]
    config = workgroup["WorkGroupConfiguration"]
    assert config["BytesScannedCutoffPerQuery"] == 10 * 1024**3
    assert config["EnforceWorkGroupConfiguration"] is True
    assert "athena-results/" in json.dumps(config["ResultConfiguration"]["OutputLocation"])


def test_alarms_cover_dlqs_queue_age_throttles_and_errors(synth):
    _, tj, _, _ = synth
    metrics = [a["Properties"].get("MetricName", "(math)")
               for a in _resources(tj, "AWS::CloudWatch::Alarm").values()]
    # 9 DLQs (two of the small documents' twins) and the stream's failures: visible + not
    # visible (tests/test_cdk_operations.py)
    assert metrics.count("(math)") == 10
    assert metrics.count("ApproximateAgeOfOldestMessage") == 9
    assert metrics.count("Throttles") == metrics.count("Errors") == 12


def test_small_documents_have_queues_of_their_own_each_with_its_consumers_and_cap(synth):
    """SQS has no priorities: read and convert each have a twin for small documents, feeding
    the same function through an event source of its own, capped by its own setting; whoever
    sends to the queue may send to its twin, and every function knows its URL."""
    _, tj, stack, _ = synth
    settings = DeploySettings()
    mappings = {m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]: m["Properties"]
                for m in _resources(tj, "AWS::Lambda::EventSourceMapping").values()
                if "StartingPosition" not in m["Properties"]}
    for name, cap in (("read", settings.concurrency_read_small),
                      ("convert", settings.concurrency_convert_small)):
        twin = stack.resolve(stack.queues[f"{name}-small"].node.default_child.logical_id)
        bulk = stack.resolve(stack.queues[name].node.default_child.logical_id)
        function = stack.resolve(stack.functions[name].node.default_child.logical_id)
        assert twin != bulk
        # The twin's cap is a parameter of its own, defaulting to the setting.
        parameter = mappings[twin]["ScalingConfig"]["MaximumConcurrency"]["Ref"]
        assert parameter == f"Concurrency{name.title()}Small"
        assert tj["Parameters"][parameter]["Default"] == cap
        assert mappings[twin]["FunctionName"] == mappings[bulk]["FunctionName"] == {
            "Ref": function}
        assert "RedrivePolicy" in tj["Resources"][twin]["Properties"]
    senders = json.dumps([p["Properties"]["PolicyDocument"] for p in
                          _resources(tj, "AWS::IAM::Policy").values()])
    twin_arn = stack.resolve(stack.queues["read-small"].queue_arn)
    assert json.dumps(twin_arn) in senders
    env = tj["Resources"][stack.resolve(stack.functions["split"].node.default_child.logical_id)]
    assert "read-small" in json.dumps(env["Properties"]["Environment"])


def test_iam_is_scoped_to_what_each_function_touches(synth):
    _, tj, stack, _ = synth
    policies = _resources(tj, "AWS::IAM::Policy")

    def statements(function_name):
        role = stack.resolve(stack.functions[function_name].role.role_name) \
            if function_name in stack.functions else None
        fn = stack.functions.get(function_name) or getattr(stack, function_name)
        role_ref = stack.resolve(fn.role.node.default_child.ref) if role is None else None
        found = []
        for policy in policies.values():
            roles = policy["Properties"]["Roles"]
            if any(r == role_ref or r == stack.resolve(fn.role.node.default_child.ref)
                   for r in roles):
                found += [s for s in policy["Properties"]["PolicyDocument"]["Statement"]
                          if s["Effect"] == "Allow"]  # the lake events' deny: test_cdk_operations
        return found

    presigner = statements("presigner")
    actions = {a for s in presigner for a in ([s["Action"]] if isinstance(s["Action"], str)
                                              else s["Action"])}
    assert "s3:DeleteObject*" not in actions and not any(a.startswith("dynamodb") for a in actions)
    for s in presigner:
        assert s["Resource"] != "*"
        assert any(p in json.dumps(s["Resource"]) for p in ("/uploads/*", "/results/*")), s
    for s in statements("read"):
        assert s["Resource"] != "*" or s["Action"] in ("ecr:GetAuthorizationToken",), s
        if "sqs:SendMessage" in json.dumps(s["Action"]):
            pytest.fail("the read function sends no message")


def test_the_publisher_reads_the_stream_and_writes_only_results_and_lake_events(synth):
    _, tj, stack, _ = synth
    spec = settings_functions()["publisher"]
    assert spec.image == "extraction" and spec.queue is None
    role = stack.resolve(stack.publisher.role.node.default_child.ref)
    statements = [s for p in _resources(tj, "AWS::IAM::Policy").values()
                  if role in p["Properties"]["Roles"]
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    resources = json.dumps([s["Resource"] for s in statements])
    assert "/results/*" in resources and "/events/*" in resources
    assert "/uploads/*" not in resources and "/pages/*" not in resources
    actions = json.dumps([s["Action"] for s in statements])
    assert "dynamodb:GetRecords" in actions
    sends = [s["Resource"] for s in statements if "sqs:SendMessage" in _actions(s)]
    failures = stack.resolve(stack.publisher_failures.queue_arn)
    assert sends == [failures]  # only what the stream mapping gives up on (finding 5)


def _role_statements(tj, stack, function) -> list[dict]:
    """What the function's role is allowed (its deny on the lake's events is checked in
    tests/test_cdk_operations.py)."""
    role = stack.resolve(function.role.node.default_child.ref)
    return [s for p in _resources(tj, "AWS::IAM::Policy").values()
            if role in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]


def _actions(statement) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def test_the_weekly_evals_report_runs_on_a_weekly_schedule_with_least_privilege(synth):
    """Issue 13 on AWS: a weekly rule invokes the function that writes the report to the
    results bucket's reports/ prefix; its role reads the lake's events, writes reports/ and the
    week's eval run events, nothing else (no table, no queue, no uploads, no other prefix)."""
    _, tj, stack, _ = synth
    weekly = stack.functions["weekly_evals"]
    spec = settings_functions()["weekly_evals"]
    assert spec.handler == "infra.aws.lambdas.weekly_evals.handler" and spec.queue is None
    function_ref = stack.resolve(weekly.function_arn)
    rules = [r["Properties"] for r in _resources(tj, "AWS::Events::Rule").values()
             if any(t["Arn"] == function_ref for t in r["Properties"].get("Targets", []))]
    assert [r["ScheduleExpression"] for r in rules] == ["cron(0 6 ? * MON *)"]
    assert rules[0]["State"] == "ENABLED"
    permissions = [p["Properties"] for p in _resources(tj, "AWS::Lambda::Permission").values()
                   if p["Properties"]["FunctionName"] == function_ref]
    assert [p["Principal"] for p in permissions] == ["events.amazonaws.com"]

    lake = stack.resolve(stack.lake.bucket_arn)
    results = stack.resolve(stack.results.bucket_arn)
    statements = _role_statements(tj, stack, weekly)
    actions = {a for s in statements for a in _actions(s)}
    assert not any(a.startswith(("dynamodb:", "sqs:")) for a in actions), actions
    assert not any(a.startswith("s3:Delete") for a in actions), actions
    writes, reads = [], []
    for s in statements:
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        assert "*" not in resources, s
        if any(a.startswith("s3:Put") for a in _actions(s)):
            writes += resources
        if "s3:GetObject*" in _actions(s):
            reads += resources
    # the report's week is recorded as an eval run: those event types, no other lake prefix
    assert sorted(writes, key=str) == sorted(
        [{"Fn::Join": ["", [results, "/reports/*"]]}] + [
            {"Fn::Join": ["", [lake, f"/events/event_type={t}/*"]]}
            for t in ("eval_run", "eval_score", "eval_outcome")], key=str)
    assert {"Fn::Join": ["", [lake, "/events/*"]]} in reads
    assert all(r in (lake, {"Fn::Join": ["", [lake, "/events/*"]]}) for r in reads), reads
    logical = stack.get_logical_id(weekly.node.default_child)
    env = tj["Resources"][logical]["Properties"]["Environment"]["Variables"]
    assert {"DOCLAKE_LAKE_URI", "DOCLAKE_RESULTS_BUCKET"} <= set(env)


def test_fields_for_every_upload_is_a_deploy_setting(tmp_path):
    from aws_cdk import App

    from infra.aws.cdk.settings import DeploySettings
    from infra.aws.cdk.stack import DoclakeStack

    app = App(outdir=str(tmp_path / "out"), context={"fields_schema": "nda"})
    stack = DoclakeStack(app, "Fields", settings=DeploySettings.from_context(
        app.node.try_get_context), build_dir=tmp_path / "zips")
    from aws_cdk.assertions import Template

    resources = Template.from_stack(stack).to_json()["Resources"]
    env = resources[stack.get_logical_id(stack.functions["ingest"].node.default_child)][
        "Properties"]["Environment"]["Variables"]
    assert (env["DOCLAKE_FIELDS_SCHEMA"], env["DOCLAKE_FIELDS_STRATEGY"]) == ("nda", "rules")


def test_the_weekly_function_writes_the_report_under_reports_with_the_date():
    from datetime import UTC, datetime

    from infra.aws.lambdas.weekly_evals import report_prefix

    assert report_prefix("res", datetime(2026, 11, 30, 6, tzinfo=UTC)) == (
        "s3://res/reports/weekly-2026-11-30")


def test_thin_zips_import_neither_pydantic_nor_pyarrow(synth, tmp_path):
    from infra.aws.cdk.zips import THIN_ZIPS, stage

    for name in THIN_ZIPS:
        folder = stage(name, tmp_path)
        code = (f"import sys; sys.path.insert(0, {str(folder)!r}); "
                f"import infra.aws.lambdas.{name}; "
                "heavy = {'pydantic', 'pyarrow', 'pandas', 'duckdb', 'numpy'} & set(sys.modules); "
                "assert not heavy, heavy")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_cfn_lint_finds_nothing_but_cdks_own_depends_on(synth):
    _, _, _, out = synth
    beside = Path(sys.executable).parent / "cfn-lint"  # the venv's, pinned by the dev extra
    lint = str(beside) if beside.exists() else shutil.which("cfn-lint")
    if lint is None:
        pytest.skip("cfn-lint is not installed")
    result = subprocess.run([lint, "--ignore-checks", "W3005", "--",
                             str(out / "Doclake.template.json")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _dockerfile_packages(text: str) -> set[str]:
    """The packages of a Dockerfile's (or a shell script's) ``apt-get install`` lines."""
    import re
    import shlex

    joined = text.replace("\\\n", " ")
    packages: set[str] = set()
    for match in re.finditer(r"apt-get install ([^&;>\n]*)", joined):
        packages |= {w for w in shlex.split(match[1]) if not w.startswith("-")}
    return packages


def _dockerfile(path: Path) -> dict[str, list[str]]:
    """FROM, ENTRYPOINT and CMD of a Dockerfile (the exec forms as lists)."""
    text = path.read_text().replace("\\\n", " ")
    lines = [line.split(None, 1) for line in text.splitlines()
             if line.strip() and not line.startswith("#")]
    found: dict[str, list[str]] = {}
    for instruction, value in lines:
        if instruction in ("ENTRYPOINT", "CMD"):
            found[instruction] = json.loads(value)
        elif instruction == "FROM":
            found["FROM"] = [value.strip()]
    return found


def test_images_build_from_debian_packages_with_the_runtime_client_and_the_templates_handlers(
        synth):
    """Finding 3: each function's image (the asset manifest names its Dockerfile) is Debian with
    the packages CI installs (tesseract everywhere, LibreOffice in the convert image), runs
    awslambdaric, and every handler the template names imports. No Docker here: not built."""
    import importlib

    from infra.aws.cdk.zips import ROOT

    _, tj, _, out = synth
    assets = json.loads((out / "Doclake.assets.json").read_text())["dockerImages"]
    ci = _dockerfile_packages((ROOT / ".ci" / "run").read_text())
    ocr = {p for p in ci if p.startswith("tesseract")}
    office = {p for p in ci if p.startswith("libreoffice")}
    assert ocr and office
    for logical, function in _resources(tj, "AWS::Lambda::Function").items():
        props = function["Properties"]
        if props.get("PackageType") != "Image":
            continue
        tag = json.dumps(props["Code"]["ImageUri"]).rsplit(":", 1)[-1].strip('"}')
        dockerfile = ROOT / assets[tag]["source"]["dockerFile"]
        image = _dockerfile(dockerfile)
        packages = _dockerfile_packages(dockerfile.read_text())
        # the base by digest, awslambdaric from the hashed lock (tests/test_aws_build.py)
        assert image["FROM"][0].startswith("python:3.11-slim-bookworm@sha256:"), dockerfile
        assert image["ENTRYPOINT"] == ["python", "-m", "awslambdaric"], dockerfile
        assert "requirements.lock" in dockerfile.read_text().split("pip install", 1)[1]
        assert ocr <= packages, (logical, ocr - packages)
        if logical.startswith("ConvertFunction"):
            assert office <= packages, office - packages
        for handler in [*props["ImageConfig"]["Command"], *image["CMD"]]:
            module, name = handler.rsplit(".", 1)
            assert callable(getattr(importlib.import_module(module), name)), handler


def test_the_stream_mapping_sends_what_it_gives_up_on_to_a_queue(synth):
    """Finding 5: a stream batch that fails past its retries is described in a queue (with an
    alarm), not dropped; the publisher's role may send there."""
    _, tj, stack, _ = synth
    (stream,) = [m["Properties"] for m in _resources(tj, "AWS::Lambda::EventSourceMapping").values()
                 if "StartingPosition" in m["Properties"]]
    destination = stream["DestinationConfig"]["OnFailure"]["Destination"]
    assert destination["Fn::GetAtt"][0].startswith("PublisherFailures")
    sends = [s for s in _role_statements(tj, stack, stack.publisher)
             if "sqs:SendMessage" in _actions(s)]
    assert [s["Resource"] for s in sends] == [destination]


def test_the_glue_database_is_named_marked_the_stacks_and_every_table_names_it(synth):
    """jsii drops a plain dict's PascalCase keys: the template once held ``DatabaseInput: {}``
    and tables naming a database that was never made."""
    _, tj, _, _ = synth
    (logical, database), = _resources(tj, "AWS::Glue::Database").items()
    given = database["Properties"]["DatabaseInput"]
    assert given["Name"] == "doclake"  # the stack Doclake's (infra.aws.names)
    assert given["Parameters"]["doclake_owner"] == "cloudformation"
    tables = _resources(tj, "AWS::Glue::Table").values()
    assert {json.dumps(t["Properties"]["DatabaseName"]) for t in tables} == {
        json.dumps({"Ref": logical})}


def test_every_image_asset_is_built_for_the_functions_architecture(synth):
    """An image built on an ARM laptop or a Graviton runner for its own platform fails at
    start on an x86_64 function (exec format error): the platform is pinned on each asset."""
    _, tj, stack, _ = synth
    assembly = stack.node.root.synth()
    manifest = json.loads((Path(assembly.directory) / f"{stack.artifact_id}.assets.json")
                          .read_text())
    images = manifest["dockerImages"]
    functions = [f["Properties"] for f in _resources(tj, "AWS::Lambda::Function").values()
                 if f["Properties"].get("PackageType") == "Image"]
    assert functions and {f["Architectures"][0] for f in functions} == {"x86_64"}
    used = {json.dumps(f["Code"]["ImageUri"]).split(":")[-1].strip('"}]') for f in functions}
    assert used <= set(images)
    assert {images[i]["source"].get("platform") for i in used} == {"linux/amd64"}


def test_outputs_name_everything_a_user_or_the_cli_needs(synth):
    from infra.aws import outputs

    _, tj, _, _ = synth
    wanted = set(outputs.DESCRIPTIONS) - {outputs.GEMINI_KEY_SECRET}  # no model, no key
    assert set(tj["Outputs"]) == wanted
    assert all(tj["Outputs"][k]["Description"] for k in wanted)


def test_cors_on_the_uploads_bucket_only_for_the_origins_a_setting_lists(tmp_path):
    from aws_cdk import App
    from aws_cdk.assertions import Template

    from infra.aws.cdk.stack import DoclakeStack

    def cors(context: dict) -> list:
        app = App(outdir=str(tmp_path / "out"), context=context)
        stack = DoclakeStack(app, "Cors", settings=DeploySettings.from_context(
            app.node.try_get_context), build_dir=tmp_path / "zips")
        uploads = Template.from_stack(stack).to_json()["Resources"][
            stack.get_logical_id(stack.uploads.node.default_child)]["Properties"]
        return uploads.get("CorsConfiguration", {}).get("CorsRules", [])

    assert cors({}) == []
    (rule,) = cors({"cors_origins": "https://app.example, https://b.example:8443"})
    assert rule["AllowedOrigins"] == ["https://app.example", "https://b.example:8443"]
    assert sorted(rule["AllowedMethods"]) == ["POST", "PUT"]
    with pytest.raises(ValueError, match="not an origin"):
        DeploySettings(cors_origins="app.example").upload_origins()


@pytest.mark.parametrize("context", [{}, {"reader": "gemini", "fields_schema": "nda"}])
def test_cdk_nag_aws_solutions_finds_nothing_unexplained(tmp_path, context):
    """cdk-nag's AwsSolutions pack runs at synth (``infra.aws.cdk.nag``); each finding the
    stack has on purpose is acknowledged there with its reason, and a new one fails the
    synth: here an SQS queue without a TLS-only policy (AwsSolutions-SQS4)."""
    pytest.importorskip("cdk_nag", reason="cdk-nag is in the cdk extra")
    from aws_cdk import App
    from aws_cdk import aws_sqs as sqs

    from infra.aws.cdk.nag import add_checks
    from infra.aws.cdk.stack import DoclakeStack

    def synth_with_nag(extra=None):
        app = App(outdir=str(tmp_path / f"out{len(list(tmp_path.iterdir()))}"), context=context)
        stack = DoclakeStack(app, "Nag", settings=DeploySettings.from_context(
            app.node.try_get_context), build_dir=tmp_path / "zips")
        if extra:
            extra(stack)
        assert add_checks(app)
        app.synth()
        return stack

    stack = synth_with_nag()
    assert stack.acknowledged and all(len(reason) > 30 for _, reason in stack.acknowledged)
    with pytest.raises(Exception, match="AwsSolutions-SQS4"):
        synth_with_nag(lambda stack: sqs.Queue(stack, "Unexplained"))


def test_the_app_synthesizes_from_any_folder_where_the_cli_asks(tmp_path):
    """``cdk.json``'s command, run from another folder as a script: it finds the repository
    from its own place and writes the assembly to the CLI's ``CDK_OUTDIR``."""
    root = Path(__file__).resolve().parents[1]
    command = json.loads((root / "cdk.json").read_text())["app"].split()
    assert command[1:] == ["infra/aws/cdk/app.py"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "assembly"
    done = subprocess.run([sys.executable, str(root / command[1])], cwd=elsewhere,
                          env={**_clean_env(), "CDK_OUTDIR": str(out)}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "Doclake.template.json").read_text())["Resources"]
    assert not list(elsewhere.iterdir())  # nothing written where it was run


def _clean_env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CDK_OUTDIR")}
