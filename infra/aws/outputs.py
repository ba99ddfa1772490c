"""The names a deployed stack tells its users, as CloudFormation outputs, and their reader.

The CDK stack declares one output per name below; ``doclake aws ... --stack NAME`` reads them
with ``describe_stacks`` (``stack_outputs``), so nobody copies a bucket name or an ARN by hand.
Plain boto3 and the standard library: the CLI imports this without the CDK.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FRONT_DOOR_URL", "UPLOADS_BUCKET", "RESULTS_BUCKET", "LAKE_BUCKET", "STATE_TABLE", "DATABASE",
           "WORKGROUP", "ATHENA_RESULTS", "GEMINI_KEY_SECRET", "ANALYST_POLICY", "UPLOADER_POLICY",
           "ALARMS_TOPIC", "DASHBOARD", "PROJECTION_START", "DESCRIPTIONS", "StackNotFound", "StackOutputs",
           "stack_outputs"]

FRONT_DOOR_URL = "FrontDoorUrl"
UPLOADS_BUCKET = "UploadsBucket"
RESULTS_BUCKET = "ResultsBucket"
LAKE_BUCKET = "LakeBucket"
STATE_TABLE = "StateTable"
DATABASE = "AthenaDatabase"
WORKGROUP = "AthenaWorkgroup"
ATHENA_RESULTS = "AthenaResults"
GEMINI_KEY_SECRET = "GeminiKeySecret"
ANALYST_POLICY = "AnalystPolicy"
UPLOADER_POLICY = "UploaderPolicy"
ALARMS_TOPIC = "AlarmsTopic"
DASHBOARD = "Dashboard"
PROJECTION_START = "ProjectionStart"

DESCRIPTIONS = {
    FRONT_DOOR_URL: "POST {source_name, content_type} here (IAM auth) for an upload slot",
    UPLOADS_BUCKET: "where upload slots land (uploads/<document>/<job>)",
    RESULTS_BUCKET: "result JSON (results/<document>.json), page text, weekly reports",
    LAKE_BUCKET: "the event lake (events/) and Athena's query results (athena-results/)",
    STATE_TABLE: "DynamoDB: documents, jobs, units, leases",
    DATABASE: "the Glue database Athena queries (doclake aws setup adds the views)",
    WORKGROUP: "the Athena workgroup (result location and scan limit enforced)",
    ATHENA_RESULTS: "where the workgroup writes query results",
    GEMINI_KEY_SECRET: "the Secrets Manager secret holding the Gemini API key (put its value)",
    ANALYST_POLICY: "attach to an analyst: Athena in the workgroup, Glue read, lake and "
                    "results read",
    UPLOADER_POLICY: "attach to whoever sends documents: the front door's function URL "
                     "(lambda:InvokeFunctionUrl and lambda:InvokeFunction), nothing else",
    ALARMS_TOPIC: "SNS topic every alarm notifies (subscribe to it)",
    DASHBOARD: "the CloudWatch operations dashboard",
    PROJECTION_START: "the first day the raw tables' partition projection covers",
}


class StackNotFound(LookupError):
    """No such stack, or it has not finished creating (no outputs yet)."""


@dataclass(frozen=True)
class StackOutputs:
    """A deployed stack's outputs by key (``values``), with the stack's name and region."""

    stack: str
    values: dict[str, str]

    def __getitem__(self, key: str) -> str:
        try:
            return self.values[key]
        except KeyError:
            raise StackNotFound(f"stack {self.stack} has no output {key!r} (outputs: "
                                f"{', '.join(sorted(self.values)) or 'none'}); is it a doclake "
                                "stack, deployed from this version?") from None

    def get(self, key: str) -> str | None:
        return self.values.get(key)


def stack_outputs(cloudformation, stack: str) -> StackOutputs:
    """The outputs of ``stack`` (a name or stack id), read with ``describe_stacks``."""
    from botocore.exceptions import ClientError

    try:
        (found,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        raise StackNotFound(f"stack {stack}: {error.response['Error'].get('Message', error)}"
                            ) from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}
    if not outputs:
        raise StackNotFound(f"stack {stack} has no outputs yet (status "
                            f"{found.get('StackStatus')})")
    return StackOutputs(stack, outputs)
