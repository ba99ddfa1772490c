"""The synthesized CloudFormation template, deployed into moto with IAM enforced, and Lambda played
in-process: the AWS end-to-end tests run on what ``cdk deploy`` would create, not on a copy.

``synth()`` runs the CDK app (no account, no Docker) and returns the template. ``StackDeployment``
walks the template's resources and creates, in a moto server of its own
(``support.iam_moto_server``, IAM enforced), each one it can with the template's properties;
``HANDLERS`` lists the types and ``NOT_CREATED`` the ones left out, each with its reason
(``not_created`` on a deployment: a test prints and asserts it). A type in neither list stops
the deployment: nothing in the template is skipped without a word.

- created: S3 buckets (EventBridge switch, versioning), SQS queues (redrive), the DynamoDB
  table (indexes, stream, TTL), secrets, the SNS topic, IAM roles and policies (each role an IAM
  user with an access key: a handler runs with its role's key, so a missing grant is an
  AccessDenied here), managed policies (``user_with`` gives a person one), EventBridge rules
  with a pattern, the Glue database and tables (a table naming a database the template does
  not create stops the deployment, as CloudFormation rolls back), the Athena workgroup, the
  alarms and the dashboard;
- read and played: functions (handler, environment, role, timeout, memory), event source
  mappings (``drain``, ``publish``), the function URL (``FunctionUrlServer`` on 127.0.0.1),
  schedules (moto's S3 -> EventBridge delivery stops at a rule without a pattern).

Parameters take their defaults (or ``parameters=``), conditions are evaluated and a resource
whose condition is false is skipped. ``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``,
``Fn::Select``, ``Fn::If`` and the pseudo parameters resolve to what was created. The template's
``Outputs``, resolved, are published as a CloudFormation stack of the deployment's name, so the
CLI's ``--stack`` reads them with ``describe_stacks`` as it does on AWS. Not modelled: resource
policies (the TLS-only bucket and queue policies: the endpoint is plain HTTP), AWS managed
policies (the Lambda basic execution role: logs only), and Lambda's own scaling.
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
import threading
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

# How the harness treats each resource type of the template, in the order it goes through them
# (a type that names another comes after it). ``CREATED``: made in moto from the template's own
# properties; ``READ``: read and played in-process; ``NOT_CREATED``: left out, with the reason.
HANDLERS = {
    "AWS::S3::Bucket": "_bucket", "AWS::DynamoDB::Table": "_table",
    "AWS::SecretsManager::Secret": "_secret", "AWS::SQS::Queue": "_queue",
    "AWS::SNS::Topic": "_topic", "AWS::IAM::Role": "_role",
    "AWS::Lambda::Function": "_function",
    "AWS::Lambda::Url": "_function_url", "AWS::IAM::Policy": "_policy",
    "AWS::Events::Rule": "_rule", "AWS::Lambda::EventSourceMapping": "_mapping",
    "AWS::Glue::Database": "_database", "AWS::Glue::Table": "_glue_table",
    "AWS::Athena::WorkGroup": "_workgroup", "AWS::CloudWatch::Alarm": "_cloudwatch_alarm",
    "AWS::CloudWatch::Dashboard": "_dashboard",
    # Last: the uploader policy names the front door's function.
    "AWS::IAM::ManagedPolicy": "_managed_policy",
}
ORDER = tuple(HANDLERS)
READ = {
    "AWS::Lambda::Function": "its handler runs in-process with its environment and role's key",
    "AWS::Lambda::EventSourceMapping": "``drain`` and ``publish`` play it (batch size, filters)",
    "AWS::Lambda::Url": "``serve_function_url`` plays it on 127.0.0.1 (its IAM auth unchecked)",
}
CREATED = {kind for kind in HANDLERS if kind not in READ}
NOT_CREATED = {
    "AWS::S3::BucketPolicy": "resource policies are not evaluated by moto; the TLS-only "
                             "condition cannot hold on its plain-HTTP endpoint",
    "AWS::SQS::QueuePolicy": "resource policies are not evaluated by moto; the TLS-only "
                             "condition cannot hold on its plain-HTTP endpoint",
    "AWS::SNS::TopicPolicy": "resource policies are not evaluated by moto; the TLS-only "
                             "condition cannot hold on its plain-HTTP endpoint",
    "AWS::Lambda::Permission": "who may invoke a function (EventBridge, the URL): the tests "
                               "invoke handlers themselves",
    "AWS::Lambda::EventInvokeConfig": "asynchronous invocation retries: the tests invoke "
                                      "synchronously",
    "AWS::Logs::LogGroup": "the handlers run in-process: their logs go to the test's output "
                           "(the retention is checked on the template, test_cdk_operations.py)",
}


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
                 environment: dict[str, str] | None = None,
                 parameters: dict[str, str] | None = None):
        self.template = template
        given = dict(parameters or {})
        self.parameters = {name: given.pop(name, spec.get("Default"))
                           for name, spec in template.get("Parameters", {}).items()}
        if given:
            raise KeyError(f"parameters the template does not declare: {sorted(given)}")
        self.environment = dict(environment or {})  # what AWS has and moto lacks (endpoints)
        self.server = server
        self.prefix = prefix or f"dl{uuid.uuid4().hex[:8]}"
        self.conditions = {name: bool(self.resolve(rule))
                           for name, rule in template.get("Conditions", {}).items()}
        # A resource whose condition is false is not created, as CloudFormation skips it.
        self.resources: dict[str, dict] = {
            k: v for k, v in template["Resources"].items()
            if "Condition" not in v or self.conditions[v["Condition"]]}
        self.physical: dict[str, dict[str, str]] = {}  # logical -> {"Ref": ..., attributes}
        self.credentials: dict[str, tuple[str, str]] = {}  # role logical -> access key
        self.functions: dict[str, Function] = {}
        self.mappings: dict[str, Mapping] = {}
        self.schedules: dict[str, dict] = {}  # rules without a pattern, not created in moto
        self._iterators: dict[str, str] = {}
        self.invocations: list[Invocation] = []  # every handler call, with how long it took
        self.databases: set[str] = set()  # the Glue databases this deployment created
        self.url_servers: list[FunctionUrlServer] = []
        self.lock = threading.RLock()  # one handler at a time: each swaps the environment
        kinds = {v["Type"] for v in self.resources.values()}
        unknown = kinds - set(CREATED) - set(READ) - set(NOT_CREATED)
        if unknown:
            raise NotImplementedError(f"resource types the harness neither creates, reads nor "
                                      f"names with a reason: {sorted(unknown)}")
        self.not_created = {kind: NOT_CREATED[kind] for kind in sorted(kinds & set(NOT_CREATED))}
        """The template's resource types this deployment leaves out, each with its reason."""
        for kind in ORDER:
            logicals = self._of(kind)
            if kind == "AWS::SQS::Queue":  # dead-letter queues first: the others name them
                logicals.sort(key=lambda q: "RedrivePolicy" in self._props(q))
            for logical in logicals:
                getattr(self, HANDLERS[kind])(logical)
        self.stack_name = self.prefix
        self.outputs = self._publish_outputs()

    def _publish_outputs(self) -> dict[str, str]:
        """The template's ``Outputs``, resolved against what was created, published as a
        CloudFormation stack of this deployment's name in moto: ``describe_stacks`` then
        answers what it answers after ``cdk deploy``, and the CLI reads it the same way. The
        stack holds only the outputs (moto's CloudFormation would create the resources a second
        time); its one resource is an empty wait-condition handle."""
        outputs = {key: str(self.resolve(value["Value"]))
                   for key, value in self.template.get("Outputs", {}).items()
                   if "Condition" not in value or self.conditions[value["Condition"]]}
        body = {"Resources": {"Outputs": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
                "Outputs": {key: {"Value": value, "Description": self.template["Outputs"][key]
                                  .get("Description", "")} for key, value in outputs.items()}}
        self.client("cloudformation").create_stack(StackName=self.stack_name,
                                                   TemplateBody=json.dumps(body))
        return outputs

    def close(self) -> None:
        for server in self.url_servers:
            server.close()

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
            if fn == "Fn::If":
                name, yes, no = arg
                return self.resolve(yes if self.conditions[name] else no)
            if fn == "Fn::Equals":
                return self.resolve(arg[0]) == self.resolve(arg[1])
            if fn == "Fn::Not":
                return not self.resolve(arg[0])
            if fn == "Condition":
                return self.conditions[arg]
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
        if name in self.parameters:
            return self.parameters[name]  # type: ignore[return-value]
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

    def _topic(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        arn = self.client("sns").create_topic(Name=props.get("TopicName") or self._name(
            logical, limit=256))["TopicArn"]
        self.physical[logical] = {"Ref": arn, "TopicArn": arn,
                                  "TopicName": arn.rsplit(":", 1)[-1]}

    def _database(self, logical: str) -> None:
        """A Glue database under the template's own name (CloudFormation makes one up from the
        logical id when ``DatabaseInput`` has none). Glue names are per account: one left by
        an earlier deployment on this server is dropped first, as a stack deleted before."""
        props = self.resolve(self._props(logical))
        database = dict(props.get("DatabaseInput") or {})
        database.setdefault("Name", logical.lower())
        glue = self.client("glue")
        with contextlib.suppress(glue.exceptions.EntityNotFoundException):
            glue.delete_database(Name=database["Name"])
        glue.create_database(DatabaseInput=database)
        self.databases.add(database["Name"])
        self.physical[logical] = {"Ref": database["Name"]}

    def _glue_table(self, logical: str) -> None:
        """A Glue table from its ``TableInput``: the database it names must be one this template
        creates, or CloudFormation rolls the stack back ("database not found")."""
        props = self.resolve(self._props(logical))
        database, table = props["DatabaseName"], props["TableInput"]
        if database not in self.databases:
            raise LookupError(f"Glue table {logical} ({table.get('Name')}) names database "
                              f"{database!r}, which the template does not create (it creates "
                              f"{sorted(self.databases) or 'none'})")
        self.client("glue").create_table(DatabaseName=database, TableInput=table)
        self.physical[logical] = {"Ref": f"{database}|{table['Name']}"}

    def _workgroup(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        athena = self.client("athena")
        with contextlib.suppress(Exception):  # one left by an earlier deployment on this server
            athena.delete_work_group(WorkGroup=props["Name"], RecursiveDeleteOption=True)
        athena.create_work_group(Name=props["Name"],
                                 Configuration=props.get("WorkGroupConfiguration", {}),
                                 Description=props.get("Description", ""))
        self.physical[logical] = {"Ref": props["Name"]}

    def _cloudwatch_alarm(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        name = props.pop("AlarmName", None) or self._name(logical, limit=255)
        self.client("cloudwatch").put_metric_alarm(AlarmName=name, **props)
        self.physical[logical] = {"Ref": name,
                                  "Arn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}"}

    def _dashboard(self, logical: str) -> None:
        props = self.resolve(self._props(logical))
        name = props.get("DashboardName") or self._name(logical, limit=255)
        self.client("cloudwatch").put_dashboard(DashboardName=name,
                                                DashboardBody=props["DashboardBody"])
        self.physical[logical] = {"Ref": name}

    def _managed_policy(self, logical: str) -> None:
        """An IAM managed policy, created with its document; ``user_with`` gives a person it."""
        props = self.resolve(self._props(logical))
        name = props.get("ManagedPolicyName") or self._name(logical, limit=128)
        arn = self.client("iam").create_policy(
            PolicyName=name, PolicyDocument=json.dumps(props["PolicyDocument"]),
            Description=props.get("Description", ""))["Policy"]["Arn"]
        self.physical[logical] = {"Ref": arn, "PolicyArn": arn}

    def user_with(self, policy: str) -> tuple[str, str]:
        """A new IAM user carrying only the managed policy ``policy`` (its logical id's start):
        the key a person given that policy would have."""
        arn = self.resource("AWS::IAM::ManagedPolicy", policy)["Ref"]
        iam = self.client("iam")
        name = self._name(f"user-{uuid.uuid4().hex[:6]}", limit=64)
        iam.create_user(UserName=name)
        iam.attach_user_policy(UserName=name, PolicyArn=arn)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

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

    def _function_url(self, logical: str) -> None:
        """The URL served on 127.0.0.1 by ``FunctionUrlServer``: each request becomes a
        function URL event (payload 2.0) for the target's handler, run as its role."""
        props = self._props(logical)
        target = props["TargetFunctionArn"]["Fn::GetAtt"][0]
        server = FunctionUrlServer(self, key_of(target))
        self.url_servers.append(server)
        self.physical[logical] = {"Ref": server.url, "FunctionUrl": server.url,
                                  "FunctionArn": self.physical[target]["Arn"]}

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

    def mappings_of(self, function: str) -> list[Mapping]:
        """The function's event sources: read and convert have two (their queue and its small
        documents' twin, ``infra.aws.routing.TWINNED_QUEUES``), the twin first, as its own
        consumers take a small document at once."""
        found = [m for m in self.mappings.values() if m.function == function]
        return sorted(found, key=lambda m: "Small" not in m.logical)

    def mapping_of(self, function: str) -> Mapping:
        """The function's one event source (its bulk queue where it also has a twin)."""
        return self.mappings_of(function)[-1]

    def queue_url(self, arn: str) -> str:
        return next(p["QueueUrl"] for p in self.physical.values() if p.get("Arn") == arn
                    and "QueueUrl" in p)

    def dies_on_every_delivery(self, function: str) -> dict[str, Any]:
        """The function's worker dies (out of memory, killed) on each delivery of its one
        message: received with the function's role, as Lambda's poller does, as often as the
        queue's redrive allows, so SQS moves it to the DLQ. Returns the redrive policy."""
        urls = [self.queue_url(m.source_arn) for m in self.mappings_of(function)]
        url = next((u for u in urls if int(self.client("sqs").get_queue_attributes(
            QueueUrl=u, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"])), urls[-1])  # the queue (or twin) holding it
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
        self.lock.acquire()
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
            self.lock.release()

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
        did not report failed. Returns (records, failures) over ``batches`` polls of each of
        its event sources."""
        spec = self.functions[function]
        sqs = self.client("sqs", spec.role)
        records = failures = 0
        for mapping in self.mappings_of(function):
            more_records, more_failures = self._drain_mapping(function, mapping, sqs, batches,
                                                              remaining_s)
            records, failures = records + more_records, failures + more_failures
        return records, failures

    def _drain_mapping(self, function: str, mapping: Mapping, sqs, batches: int,
                       remaining_s: float | None) -> tuple[int, int]:
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

    def cli_environment(self, credentials: tuple[str, str] | None = None) -> dict[str, str]:
        """The environment of a person's shell pointed at this deployment: the deployer's key
        (or ``credentials``), the region, the endpoint; this checkout on the path."""
        key_id, secret = credentials or self.server.admin
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_",
                                                                              "DOCLAKE_"))}
        return {**environment, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
                "AWS_ENDPOINT_URL": self.server.endpoint, "AWS_EC2_METADATA_DISABLED": "true",
                "PYTHONPATH": os.pathsep.join([str(SUPPORT.parents[1]), str(SUPPORT.parent)])}

    def play_while(self, process: subprocess.Popen, *, timeout_s: float = 240) -> None:
        """Lambda working on its own while ``process`` runs (a person's command waiting for a
        result): the ingest queue, the pipeline, the poller and the stream, round after round."""
        import time

        deadline = time.monotonic() + timeout_s
        while process.poll() is None:
            if time.monotonic() > deadline:
                process.kill()
                raise TimeoutError(f"{process.args} still running after {timeout_s} s")
            self.drain("ingest")
            self.run_until_still()
            self.publish()
            time.sleep(0.2)

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


class FunctionUrlServer:
    """A Lambda function URL played on 127.0.0.1: a request becomes the payload-2.0 event the
    URL sends, the handler runs in-process as its function (``StackDeployment.invoke``), and its
    answer becomes the HTTP response. The URL's IAM auth (SigV4) is not checked here."""

    def __init__(self, deployment: StackDeployment, function: str) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        def handle(request: BaseHTTPRequestHandler) -> None:
            length = int(request.headers.get("Content-Length") or 0)
            body = request.rfile.read(length).decode() if length else ""
            event = {"version": "2.0", "rawPath": request.path.split("?")[0],
                     "headers": {k.lower(): v for k, v in request.headers.items()},
                     "body": body, "isBase64Encoded": False,
                     "requestContext": {"http": {"method": request.command,
                                                 "path": request.path}}}
            answer = deployment.invoke(function, event) or {}
            payload = str(answer.get("body", "")).encode()
            request.send_response(int(answer.get("statusCode", 200)))
            for name, value in (answer.get("headers") or {}).items():
                request.send_header(name, value)
            request.send_header("Content-Length", str(len(payload)))
            request.end_headers()
            request.wfile.write(payload)

        class Handler(BaseHTTPRequestHandler):
            do_POST = do_GET = handle

            def log_message(self, *args) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
