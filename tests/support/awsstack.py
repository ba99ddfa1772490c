"""The synthesized CloudFormation template, deployed into moto with IAM enforced, and Lambda played
in-process: the AWS end-to-end tests run on what ``cdk deploy`` would create, not on a copy.

``synth()`` runs the CDK app (no account, no Docker) and returns the template. ``StackDeployment``
walks the template's resources and creates, in a moto server of its own
(``support.iam_moto_server``, IAM enforced), each one it can with the template's properties:

- ``AWS::S3::Bucket`` (its EventBridge notification switch and versioning), ``AWS::SQS::Queue`` (visibility,
  retention, the ``RedrivePolicy`` to its DLQ), ``AWS::DynamoDB::Table`` (keys, indexes, stream,
  TTL), ``AWS::SecretsManager::Secret``, ``AWS::Events::Rule`` (patterns and targets);
- ``AWS::IAM::Role`` and ``AWS::IAM::Policy``: each role becomes an IAM user carrying the role's
  policies, with an access key; a handler runs with its role's key, so a grant missing from the
  stack is an AccessDenied here;
- ``AWS::Lambda::Function`` and ``AWS::Lambda::EventSourceMapping`` are read, not created: a
  function is its handler (the image's command or the zip's handler), its environment, its
  role, its timeout (the invocation's remaining time counts down from it; ``invocations`` notes
  how long each call took) and memory; a mapping is its source, batch size and filters, which
  ``drain`` and ``publish`` honour.

``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``, ``Fn::Select`` and the pseudo parameters
resolve to the physical names created. A resource type not listed above (alarms, Glue, Athena,
the dashboard) is not created; an environment or policy that referred to one would fail to
resolve, loudly. Schedules are read, not created
(moto's S3 -> EventBridge delivery stops at a rule without a pattern). Not modelled: resource
policies (the TLS-only bucket and queue policies: the
endpoint is plain HTTP), AWS managed policies (the Lambda basic execution role: logs only), and
Lambda's own scaling.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
SUPPORT = Path(__file__).resolve().parent
# The queue-fed functions in the order a document moves through them.
PIPELINE = ("split", "read", "sheet", "convert", "index", "fields")
_LOGICAL_SUFFIX = re.compile(r"[0-9A-F]{8}$")


# --- the template ---------------------------------------------------------------------------


@functools.cache
def synth(context: tuple[tuple[str, str], ...] = ()) -> dict:
    """The CDK app's template (``cdk synth`` without an account or Docker), once per context."""
    import tempfile

    import aws_cdk as cdk

    from infra.aws.cdk.settings import DeploySettings
    from infra.aws.cdk.stack import DoclakeStack

    out = Path(tempfile.mkdtemp(prefix="doclake-synth-"))
    app = cdk.App(outdir=str(out / "cdk.out"), context=dict(context))
    stack = DoclakeStack(app, "Doclake", settings=DeploySettings.from_context(
        app.node.try_get_context), build_dir=out / "zips")
    assembly = app.synth()
    return json.loads((Path(assembly.directory) / f"{stack.stack_name}.template.json").read_text())


# --- the IAM-enforcing moto server --------------------------------------------------------------


class IamMoto:
    """``support.iam_moto_server`` in a child process. Its first three calls run unauthenticated
    (``INITIAL_NO_AUTH_ACTION_COUNT=3``): they make the deployer, an IAM user allowed
    everything; every later call needs a key whose policies allow it."""

    NO_AUTH_CALLS = 3

    def __init__(self) -> None:
        env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(self.NO_AUTH_CALLS),
               "PYTHONPATH": os.pathsep.join([str(SUPPORT.parent), *sys.path])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "support.iam_moto_server"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, text=True)
        line = self.process.stdout.readline().strip()  # type: ignore[union-attr]
        if not line.startswith("http://"):
            self.close()
            raise RuntimeError(f"the IAM moto server did not start: {line!r}")
        self.endpoint = line
        iam = self._client("iam", "testing", "testing")
        iam.create_user(UserName="deployer")
        iam.put_user_policy(UserName="deployer", PolicyName="all", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="deployer")["AccessKey"]
        self.admin = (key["AccessKeyId"], key["SecretAccessKey"])

    def _client(self, service: str, key_id: str, secret: str):
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=key_id, aws_secret_access_key=secret)

    def client(self, service: str, credentials: tuple[str, str] | None = None):
        return self._client(service, *(credentials or self.admin))

    def _ask(self, command: str) -> str:
        """One command of the simulation clock (``support.simclock``), one answer line."""
        self.process.stdin.write(command + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return self.process.stdout.readline().strip()  # type: ignore[union-attr]

    def shift(self, seconds: float) -> None:
        """Move the server's clock forward (SQS visibility, every timestamp moto takes)."""
        answer = self._ask(f"shift {seconds!r}")
        if answer != "ok":
            raise RuntimeError(f"the IAM moto server refused to shift its clock: {answer!r}")

    def next_visible_s(self) -> float | None:
        """Seconds until the first hidden SQS message is visible again; None when none is."""
        answer = self._ask("next")
        return None if answer == "none" else float(answer)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.process.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(Exception):
            self.process.wait(timeout=10)
        if self.process.poll() is None:
            self.process.kill()


# --- the deployment -----------------------------------------------------------------------------


@dataclass
class Function:
    logical: str
    name: str
    handler: str
    environment: dict[str, str]
    role: str  # the logical id of its role
    timeout_s: int = 3  # Lambda's default when the template sets none
    memory_mb: int = 128


@dataclass
class Invocation:
    """One handler call as ``invoke`` played it: Lambda would have killed it at ``timeout_s``."""

    function: str
    took_s: float
    timeout_s: float

    @property
    def timed_out(self) -> bool:
        return self.took_s >= self.timeout_s


@dataclass
class Mapping:
    logical: str
    function: str  # the function's key
    source_arn: str
    batch_size: int
    filters: list[dict] = field(default_factory=list)
    properties: dict = field(default_factory=dict)


def key_of(logical: str) -> str:
    """``ReadFunction9BA9B3F3`` -> ``read``; ``WeeklyEvalsFunction403F506A`` -> ``weeklyevals``."""
    return _LOGICAL_SUFFIX.sub("", logical).removesuffix("Function").lower()


class StackDeployment:
    def __init__(self, template: dict, server: IamMoto, *, prefix: str | None = None,
                 environment: dict[str, str] | None = None):
        self.template = template
        self.environment = dict(environment or {})  # what AWS has and moto lacks (endpoints)
        self.server = server
        self.prefix = prefix or f"dl{uuid.uuid4().hex[:8]}"
        self.resources: dict[str, dict] = template["Resources"]
        self.physical: dict[str, dict[str, str]] = {}  # logical -> {"Ref": ..., attributes}
        self.credentials: dict[str, tuple[str, str]] = {}  # role logical -> access key
        self.functions: dict[str, Function] = {}
        self.mappings: dict[str, Mapping] = {}
        self.schedules: dict[str, dict] = {}  # rules without a pattern, not created in moto
        self._iterators: dict[str, str] = {}
        self.invocations: list[Invocation] = []  # every handler call, with how long it took
        for kind in ("AWS::S3::Bucket", "AWS::DynamoDB::Table", "AWS::SecretsManager::Secret"):
            for logical in self._of(kind):
                getattr(self, "_" + kind.split("::")[2].lower())(logical)
        queues = self._of("AWS::SQS::Queue")  # dead-letter queues first: the others name them
        for logical in sorted(queues, key=lambda q: "RedrivePolicy" in self._props(q)):
            self._queue(logical)
        for logical in self._of("AWS::IAM::Role"):
            self._role(logical)
        for logical in self._of("AWS::Lambda::Function"):
            self._function(logical)
        for logical in self._of("AWS::IAM::Policy"):
            self._policy(logical)
        for logical in self._of("AWS::Events::Rule"):
            self._rule(logical)
        for logical in self._of("AWS::Lambda::EventSourceMapping"):
            self._mapping(logical)

    # -- reading the template --

    def _of(self, kind: str) -> list[str]:
        return [k for k, v in self.resources.items() if v["Type"] == kind]

    def _props(self, logical: str) -> dict:
        return self.resources[logical].get("Properties", {})

    def _name(self, logical: str, *, lower: bool = False, limit: int = 63) -> str:
        name = f"{self.prefix}-{logical}"
        return (name.lower() if lower else name)[:limit]

    def resolve(self, value: Any) -> Any:
        """The template value with every intrinsic function replaced by what was created."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (fn, arg), = value.items()
            if fn == "Ref":
                return self._ref(arg)
            if fn == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self._attribute(logical, attribute)
            if fn == "Fn::Join":
                return arg[0].join(str(v) for v in self.resolve(arg[1]))
            if fn == "Fn::Select":
                return self.resolve(arg[1])[int(arg[0])]
            if fn == "Fn::Split":
                return str(self.resolve(arg[1])).split(arg[0])
            if fn == "Fn::Sub":
                text, names = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                return re.sub(r"\$\{([^}]+)\}", lambda m: str(
                    self.resolve(names[m[1]]) if m[1] in names else
                    self._attribute(*m[1].split(".", 1)) if "." in m[1] and not
                    m[1].startswith("AWS::") else self._ref(m[1])), text)
            if fn.startswith("Fn::"):
                raise NotImplementedError(f"{fn} is not resolved by the test loader")
        return {k: self.resolve(v) for k, v in value.items()}

    def _ref(self, name: str) -> str:
        pseudo = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::Partition": "aws",
                  "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": self.prefix,
                  "AWS::NoValue": None}
        if name in pseudo:
            return pseudo[name]  # type: ignore[return-value]
        return self._attribute(name, "Ref")

    def _attribute(self, logical: str, attribute: str) -> str:
        try:
            return self.physical[logical][attribute]
        except KeyError:
            raise KeyError(f"{logical}.{attribute}: not created by the test loader "
                           f"({self.resources.get(logical, {}).get('Type')})") from None

    def client(self, service: str, role: str | None = None):
        return self.server.client(service, self.credentials[role] if role else None)

    # -- creating resources --

    def _bucket(self, logical: str) -> None:
        props = self._props(logical)
        name = self._name(logical, lower=True)
        s3 = self.client("s3")
        s3.create_bucket(Bucket=name)
        if props.get("NotificationConfiguration", {}).get("EventBridgeConfiguration", {}).get(
                "EventBridgeEnabled"):
            s3.put_bucket_notification_configuration(
                Bucket=name, NotificationConfiguration={"EventBridgeConfiguration": {}})
        versioning = props.get("VersioningConfiguration", {}).get("Status")
        if versioning:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": versioning})
        self.physical[logical] = {"Ref": name, "Arn": f"arn:aws:s3:::{name}",
                                  "DomainName": f"{name}.s3.amazonaws.com"}

    def _table(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        name = self._name(logical)
        dynamodb = self.client("dynamodb")
        request = {"TableName": name, "KeySchema": props["KeySchema"],
                   "AttributeDefinitions": props["AttributeDefinitions"],
                   "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST")}
        if props.get("GlobalSecondaryIndexes"):
            request["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        if props.get("StreamSpecification"):
            request["StreamSpecification"] = {"StreamEnabled": True, **props[
                "StreamSpecification"]}
        table = dynamodb.create_table(**request)["TableDescription"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        self.physical[logical] = {"Ref": name, "Arn": table["TableArn"],
                                  "StreamArn": table.get("LatestStreamArn", "")}

    def _secret(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        name = props.get("Name") or self._name(logical)
        value = props.get("SecretString") or uuid.uuid4().hex  # GenerateSecretString's stand-in
        arn = self.client("secretsmanager").create_secret(Name=name, SecretString=value)["ARN"]
        self.physical[logical] = {"Ref": arn, "Id": arn}

    def _queue(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        attributes = {}
        for key in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds",
                    "ReceiveMessageWaitTimeSeconds", "SqsManagedSseEnabled"):
            if key in props:
                value = props[key]
                attributes[key] = str(value).lower() if isinstance(value, bool) else str(value)
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=self._name(logical, limit=80),
                               Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        self.physical[logical] = {"Ref": url, "QueueUrl": url, "Arn": arn,
                                  "QueueName": url.rsplit("/", 1)[-1]}

    def _role(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        iam = self.client("iam")
        name = self._name(logical, limit=64)
        role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(
            props["AssumeRolePolicyDocument"]))["Role"]
        iam.create_user(UserName=name)
        for policy in props.get("Policies", []):
            iam.put_user_policy(UserName=name, PolicyName=policy["PolicyName"],
                                PolicyDocument=json.dumps(policy["PolicyDocument"]))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        self.credentials[logical] = (key["AccessKeyId"], key["SecretAccessKey"])
        self.physical[logical] = {"Ref": name, "Arn": role["Arn"], "RoleId": role["RoleId"]}

    def _policy(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        iam = self.client("iam")
        roles = self._props(logical).get("Roles", [])
        for role in roles:
            iam.put_user_policy(UserName=self._ref(role["Ref"]), PolicyName=props["PolicyName"],
                                PolicyDocument=json.dumps(props["PolicyDocument"]))

    def _function(self, logical: str) -> None:
        props = self._props(logical)
        name = self._name(logical, limit=64)
        self.physical[logical] = {"Ref": name,
                                  "Arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"}
        handler = props.get("ImageConfig", {}).get("Command", [props.get("Handler")])[0]
        environment = self.resolve(props.get("Environment", {}).get("Variables", {}))
        role = props["Role"]["Fn::GetAtt"][0]
        self.functions[key_of(logical)] = Function(
            logical, name, handler, {k: str(v) for k, v in environment.items()}, role,
            int(props.get("Timeout", 3)), int(props.get("MemorySize", 128)))

    def _rule(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        name = self._name(logical, limit=64)
        if "EventPattern" not in props:  # a schedule: the tests play it (``poll``)
            self.schedules[logical] = props
            self.physical[logical] = {"Ref": name, "Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:"
                                      f"rule/{name}"}
            return
        events = self.client("events")
        arn = events.put_rule(Name=name, State=props.get("State", "ENABLED"),
                              EventPattern=json.dumps(props["EventPattern"]))["RuleArn"]
        targets = [{"Id": t["Id"], "Arn": t["Arn"]} for t in props.get("Targets", [])]
        if targets:
            events.put_targets(Rule=name, Targets=targets)
        self.physical[logical] = {"Ref": name, "Arn": arn}

    def _mapping(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        function = next(k for k, f in self.functions.items()
                        if f.name == props["FunctionName"])
        filters = [json.loads(f["Pattern"]) for f in
                   props.get("FilterCriteria", {}).get("Filters", [])]
        self.mappings[logical] = Mapping(logical, function, props["EventSourceArn"],
                                         int(props.get("BatchSize", 10)), filters, props)

    # -- playing Lambda --

    def mapping_of(self, function: str) -> Mapping:
        (mapping,) = [m for m in self.mappings.values() if m.function == function]
        return mapping

    def queue_url(self, arn: str) -> str:
        return next(p["QueueUrl"] for p in self.physical.values() if p.get("Arn") == arn
                    and "QueueUrl" in p)

    def dies_on_every_delivery(self, function: str) -> dict[str, Any]:
        """The function's worker dies (out of memory, killed) on each delivery of its one
        message: received with the function's role, as Lambda's poller does, as often as the
        queue's redrive allows, so SQS moves it to the DLQ. Returns the redrive policy."""
        url = self.queue_url(self.mapping_of(function).source_arn)
        sqs = self.client("sqs", self.functions[function].role)
        redrive = json.loads(self.client("sqs").get_queue_attributes(
            QueueUrl=url, AttributeNames=["RedrivePolicy"])["Attributes"]["RedrivePolicy"])
        for _ in range(int(redrive["maxReceiveCount"])):
            assert len(sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"]) == 1
        assert sqs.receive_message(QueueUrl=url).get("Messages", []) == []  # in the DLQ now
        return redrive

    def resource(self, kind: str, name: str) -> dict[str, str]:
        """The created resource of ``kind`` whose logical id starts with ``name``."""
        (logical,) = [k for k in self._of(kind) if _LOGICAL_SUFFIX.sub("", k) == name]
        return self.physical[logical]

    @contextlib.contextmanager
    def running_as(self, function: str) -> Iterator[Function]:
        """The process environment of ``function``: its variables from the template and its
        role's key; the handlers' cached runtime is dropped on the way in and out."""
        spec = self.functions[function]
        key_id, secret = self.credentials[spec.role]
        values = {**spec.environment, "AWS_ACCESS_KEY_ID": key_id,
                  "AWS_SECRET_ACCESS_KEY": secret, "AWS_ENDPOINT_URL": self.server.endpoint,
                  "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
                  "AWS_EC2_METADATA_DISABLED": "true", "POWERTOOLS_DEV": "false",
                  **self.environment}
        try:
            with _environment({**values, "AWS_SESSION_TOKEN": None}):
                _forget_clients()
                yield spec
        finally:
            _forget_clients()

    def invoke(self, function: str, event: dict, context=None, *,
               remaining_s: float | None = None) -> Any:
        """Call ``function``'s handler in-process, as its role, with its environment; its
        context's remaining time counts down from the function's timeout (or ``remaining_s``:
        an invocation that has already spent the rest). Each call is noted in ``invocations``."""
        import time

        with self.running_as(function) as spec:
            module, name = spec.handler.rsplit(".", 1)
            handler = getattr(importlib.import_module(module), name)
            limit_s = spec.timeout_s if remaining_s is None else remaining_s
            context = context or LambdaContext(function_name=spec.name, timeout_s=limit_s,
                                               memory_limit_in_mb=spec.memory_mb)
            started = time.monotonic()
            try:
                return handler(event, context)
            finally:
                self.invocations.append(Invocation(function, time.monotonic() - started,
                                                   limit_s))

    def drain(self, function: str, *, batches: int = 1,
              remaining_s: float | None = None) -> tuple[int, int]:
        """Play the function's SQS event source mapping: receive up to its batch size with the
        function's role (Lambda polls with it), invoke, delete what the partial batch response
        did not report failed. Returns (records, failures) over ``batches`` polls."""
        mapping = self.mapping_of(function)
        spec = self.functions[function]
        sqs = self.client("sqs", spec.role)
        url = self.queue_url(mapping.source_arn)
        records = failures = 0
        for _ in range(batches):
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=min(10, mapping.batch_size),
                MessageSystemAttributeNames=["All"]).get("Messages", [])
            if not messages:
                break
            response = self.invoke(function, sqs_event(mapping.source_arn, messages),
                                   remaining_s=remaining_s) or {}
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
            for m in messages:
                if m["MessageId"] not in failed:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            records += len(messages)
            failures += len(failed)
        return records, failures

    def run_until_still(self, *, rounds: int = 12, skip: tuple[str, ...] = ()) -> None:
        """Play Lambda until nothing moves: every pipeline queue's mapping in the pipeline's
        order (a few polls each), then a poller pass; no record may fail on the way."""
        for _ in range(rounds):
            moved = 0
            for function in PIPELINE:
                if function not in skip:
                    records, failed = self.drain(function, batches=5)
                    assert failed == 0, f"{function}: {failed} of {records} records failed"
                    moved += records
            self.poll()
            if not moved:
                return

    def stream_records(self, function: str = "publisher") -> list[dict]:
        """The stream records new since the last call that pass the mapping's filters, read
        with the function's role (Lambda reads the stream with it)."""
        mapping = self.mapping_of(function)
        streams = self.client("dynamodbstreams", self.functions[function].role)
        shards = streams.describe_stream(StreamArn=mapping.source_arn)["StreamDescription"][
            "Shards"]
        records = []
        for shard in shards:
            iterator = self._iterators.get(shard["ShardId"]) or streams.get_shard_iterator(
                StreamArn=mapping.source_arn, ShardId=shard["ShardId"],
                ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            answer = streams.get_records(ShardIterator=iterator, Limit=1000)
            self._iterators[shard["ShardId"]] = answer["NextShardIterator"]
            records += answer["Records"]
        if not mapping.filters:
            return records
        return [r for r in records if any(matches(f, r) for f in mapping.filters)]

    def poll(self) -> int:
        """One poller pass (what each minute's scheduled invocation loops over), as the poller."""
        import asyncio

        from infra.aws.lambdas.poller import run_passes

        with self.running_as("poller"):
            from infra.aws.runtime import shared

            return asyncio.run(run_passes(shared(), holder="test", loop_s=0, interval_s=0.01))

    def lake_uri(self) -> str:
        """The lake, as an s3:// URI naming this server (``lake.s3.open_s3``); read it inside
        ``as_deployer()`` (pyarrow takes its key from the environment)."""
        bucket = self.functions["read"].environment["DOCLAKE_LAKE_URI"].removeprefix("s3://")
        host = self.server.endpoint.split("://", 1)[1]
        return f"s3://{bucket}?endpoint_override={host}&scheme=http&region={REGION}"

    @contextlib.contextmanager
    def as_deployer(self) -> Iterator[None]:
        key_id, secret = self.server.admin
        with _environment({"AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret}):
            yield

    def publish(self, records: list[dict] | None = None) -> int:
        """One stream batch through the publisher (the new, filtered records by default)."""
        batch = self.stream_records() if records is None else records
        if not batch:
            return 0
        return self.invoke("publisher", {"Records": batch})["published"]


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    """These variables set (a value) or removed (None), and what was there put back after."""
    saved = {k: os.environ.get(k) for k in values}

    def apply(changes: dict[str, str | None]) -> None:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    apply(values)
    try:
        yield
    finally:
        apply(saved)


def _forget_clients() -> None:
    """Drop every client a handler kept: its runtime, the presigner's client, and boto3's
    default session (it caches the credentials it first read from the environment)."""
    import boto3

    from infra.aws import runtime
    from infra.aws.lambdas import presigner

    runtime.shared.cache_clear()
    presigner._client = None
    boto3.DEFAULT_SESSION = None


def matches(pattern: Any, value: Any) -> bool:
    """Lambda's event filter on one record: every key of the pattern present and matching; a
    list is a set of allowed values or ``{"prefix": ...}`` / ``{"exists": ...}`` rules."""
    if isinstance(pattern, list):
        return any(_rule_matches(rule, value) for rule in pattern)
    if not isinstance(pattern, dict):
        return pattern == value
    if not isinstance(value, dict):
        return False
    for key, rule in pattern.items():
        if key not in value:
            absent_ok = isinstance(rule, list) and any(
                isinstance(r, dict) and r.get("exists") is False for r in rule)
            if not absent_ok:
                return False
        elif not matches(rule, value[key]):
            return False
    return True


def _rule_matches(rule: Any, value: Any) -> bool:
    if isinstance(rule, dict) and "prefix" in rule:
        return isinstance(value, str) and value.startswith(rule["prefix"])
    if isinstance(rule, dict) and "exists" in rule:
        return rule["exists"] is True  # reached only when the key is present
    return rule == value


def sqs_event(source_arn: str, messages: list[dict]) -> dict:
    return {"Records": [{
        "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
        "attributes": {"ApproximateReceiveCount": m["Attributes"]["ApproximateReceiveCount"],
                       "SentTimestamp": m["Attributes"].get("SentTimestamp", "0"),
                       "SenderId": "test", "ApproximateFirstReceiveTimestamp": "0"},
        "messageAttributes": {}, "md5OfBody": m.get("MD5OfBody", ""), "eventSource": "aws:sqs",
        "eventSourceARN": source_arn, "awsRegion": REGION} for m in messages]}


@dataclass
class LambdaContext:
    """The LambdaContext attributes the handlers and Powertools read; the remaining time counts
    down from ``timeout_s`` as Lambda's does (real seconds)."""

    function_name: str = "doclake-test"
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    memory_limit_in_mb: int = 1024
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        import time

        self._deadline = time.monotonic() + self.timeout_s

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        import time

        return max(0, int((self._deadline - time.monotonic()) * 1000))
