"""A moto server in its own process with IAM enforced (``INITIAL_NO_AUTH_ACTION_COUNT``), for the
tests that deploy the synthesized template (``support.awsstack``).

Its own process because moto keeps the enforcement switch and its request counter in module
globals: the in-process server every other AWS test shares stays unenforced. moto checks
identity policies against a resource only where its handler names one (S3 and SQS do); for
DynamoDB, DynamoDB Streams, Secrets Manager and Glue the resource is taught here (the table,
index or stream ARN; the secret's ARN; the Glue table or database), so a role without a grant
on *that* table, secret or database is refused.

Run as ``python -m support.iam_moto_server``: prints ``http://127.0.0.1:PORT`` and serves until
its standard input closes. Its standard input also carries the simulation clock's commands
(``support.simclock``), one a line, each answered with one line: ``shift SECONDS`` moves the
server's clock forward (time-machine: SQS visibility and every timestamp moto takes), ``next``
answers the seconds until the earliest hidden SQS message becomes visible again (or ``none``).
"""

from __future__ import annotations

import json
import sys

ACCOUNT = "123456789012"
REGION = "us-east-1"


def _table_arn(table: str) -> str:
    return table if table.startswith("arn:") else (
        f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}")


def _dynamodb_resource(self) -> str:
    body = getattr(self, "body", None) or getattr(self, "params", None) or {}
    table = body.get("TableName")
    if table is None:
        items = body.get("RequestItems") or {}
        transact = body.get("TransactItems") or []
        names = list(items) or [next(iter(v.values())).get("TableName")
                                for v in transact if v]
        table = names[0] if names else None
    if not table:
        return "*"
    arn = _table_arn(table)
    return f"{arn}/index/{body['IndexName']}" if body.get("IndexName") else arn


def _streams_resource(self) -> str:
    arn = self._get_param("StreamArn")
    if arn is None and self._get_param("ShardIterator"):
        arn = str(self._get_param("ShardIterator")).split("|")[0]  # moto's names its stream
    return arn if arn and arn.startswith("arn:") else "*"


def _secrets_resource(self) -> str:
    secret = self._get_param("SecretId")
    if not secret:
        return "*"
    if secret.startswith("arn:"):
        return secret
    try:
        return self.backend.describe_secret(secret)["ARN"]
    except Exception:
        return "*"


def _glue_resource(self) -> str:
    """The Glue resource a call names: a table, a database, else the catalog. AWS checks the
    catalog, the database and the tables a call reaches; one resource stands for them here,
    the narrowest the call names."""
    try:
        body = json.loads(self.body or "{}")
    except ValueError:
        return "*"
    base = f"arn:aws:glue:{REGION}:{ACCOUNT}"
    database = body.get("DatabaseName") or (body.get("Name") if "TableInput" not in body
                                             and "Name" in body else None)
    table = body.get("Name") if body.get("DatabaseName") else None
    if database and table:
        return f"{base}:table/{database}/{table}"
    if database:
        return f"{base}:database/{database}"
    return f"{base}:catalog"


def _first(value):
    return value[0] if isinstance(value, list) and value else value


def _presigned_credential(data, path: str) -> tuple[str | None, str | None]:
    """The credential and key of a presigned request (a query-string URL or a POST form)."""
    from urllib.parse import parse_qs, urlsplit

    fields = {str(k).lower(): _first(v) for k, v in dict(data or {}).items()}
    query = {k.lower(): v[0] for k, v in parse_qs(urlsplit(path).query).items()}
    credential = fields.get("x-amz-credential") or query.get("x-amz-credential")
    signer = fields.get("awsaccesskeyid") or query.get("awsaccesskeyid")  # signature v2
    if credential is None and signer:
        credential = f"{signer}/19700101/{REGION}/s3/aws4_request"
    return credential, fields.get("key")


def _teach_presigned_s3() -> None:
    """moto reads the key of an S3 call from its Authorization header only, which a presigned
    URL or POST form does not have: here the credential it carries names the key instead, and
    a POST's resource is the form's object key. The signature of such a request is not checked
    (moto cannot compute it); who signed it, and what that signer may do, is."""
    from moto.iam.access_control import S3IAMRequest

    original_init = S3IAMRequest.__init__
    original_check = S3IAMRequest.check_signature
    original_permitted = S3IAMRequest.check_action_permitted

    def __init__(self, account_id, method, path, data, body, headers, action):
        self._presigned_key = None
        if "Authorization" not in headers:
            credential, key = _presigned_credential(data, path)
            if credential:
                headers = {**dict(headers), "Authorization":
                           f"AWS4-HMAC-SHA256 Credential={credential}, Signature=presigned"}
                self._presigned_key = key or ""
        original_init(self, account_id, method, path, data, body, headers, action)

    def check_signature(self):
        if self._presigned_key is None:
            original_check(self)

    def check_action_permitted(self, resource):
        if self._presigned_key and "/" not in resource.split(":::", 1)[-1]:
            resource = f"{resource}/{self._presigned_key}"  # a POST names its key in the form
        original_permitted(self, resource)

    S3IAMRequest.__init__ = __init__
    S3IAMRequest.check_signature = check_signature
    S3IAMRequest.check_action_permitted = check_action_permitted


TRANSACT_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                    "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}


BATCH_ACTIONS = {"sqs:SendMessageBatch": "sqs:SendMessage",
                 "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
                 "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility"}


def _teach_transactions() -> None:
    """SQS checks a batch call as its single action (``SendMessageBatch`` as ``SendMessage``).
    DynamoDB has no IAM action for a transaction: AWS checks each of its items as the
    item's own action on the item's table (``PutItem``, ``UpdateItem``, ``ConditionCheckItem``,
    ``GetItem``...); moto would ask for ``dynamodb:TransactWriteItems``, which no role has."""
    import json

    from moto.iam.access_control import IAMRequest

    original = IAMRequest.check_action_permitted

    def check_action_permitted(self, resource):
        if self._action in BATCH_ACTIONS:  # AWS checks a batch call as its single action
            action, self._action = self._action, BATCH_ACTIONS[self._action]
            try:
                return original(self, resource)
            finally:
                self._action = action
        if self._action not in ("dynamodb:TransactWriteItems", "dynamodb:TransactGetItems"):
            return original(self, resource)
        body = self._body.decode() if isinstance(self._body, bytes) else self._body
        action = self._action
        try:
            for item in json.loads(body or "{}").get("TransactItems", []):
                for kind, request in item.items():
                    self._action = f"dynamodb:{TRANSACT_ACTIONS[kind]}"
                    original(self, _table_arn(request["TableName"]))
        finally:
            self._action = action

    IAMRequest.check_action_permitted = check_action_permitted


def patch() -> None:
    _teach_presigned_s3()
    _teach_transactions()
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.glue.responses import GlueResponse
    from moto.secretsmanager.responses import SecretsManagerResponse

    DynamoHandler._determine_resource = _dynamodb_resource
    DynamoDBStreamsHandler._determine_resource = _streams_resource
    SecretsManagerResponse._determine_resource = _secrets_resource
    GlueResponse._determine_resource = _glue_resource


class Clock:
    """The server's side of the simulation clock: time-machine, started at the first shift."""

    def __init__(self) -> None:
        self.traveller = None

    def shift(self, seconds: float) -> None:
        import time

        import time_machine

        if self.traveller is None:
            self.traveller = time_machine.travel(time.time() + seconds, tick=True).start()
        else:
            self.traveller.shift(seconds)

    @staticmethod
    def next_visible_s() -> float | None:
        """Seconds until the first SQS message hidden now (received, or its visibility changed)
        is visible again: the next thing that happens on a queue by itself."""
        from moto.core.utils import unix_time_millis
        from moto.sqs.models import sqs_backends

        now = unix_time_millis()
        due = [message.visible_at for regions in sqs_backends.values()
               for backend in regions.values() for queue in backend.queues.values()
               for message in list(queue._messages) if message.visible_at > now]
        return (min(due) - now) / 1000 if due else None


def serve_commands(lines, out) -> None:
    clock = Clock()
    for line in lines:
        if not line.strip():
            continue
        command, *args = line.split()
        if command == "shift":
            clock.shift(float(args[0]))
            out.write("ok\n")
        elif command == "next":
            due = clock.next_visible_s()
            out.write("none\n" if due is None else f"{due:.3f}\n")
        else:
            out.write(f"error: unknown command {command!r}\n")
        out.flush()


def main() -> int:
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    patch()
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"http://{host}:{port}", flush=True)
    serve_commands(sys.stdin, sys.stdout)  # until the test process closes the pipe (or dies)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
