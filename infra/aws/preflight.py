"""``doclake aws preflight``: what would go wrong with a deploy, asked of the account first.

Nothing here fails ``cdk deploy`` itself in a way CloudFormation explains well: a Lambda
concurrency quota below the stack's caps deploys fine and then throttles (each throttled receive
counts toward the receives before a message dead-letters), and a Glue database, Athena workgroup
or dashboard of the same name (another stack's, or one ``doclake aws catalog`` made) rolls the
whole stack back. Each check reads one thing (read-only calls) and says what to do.
Plain boto3: the CLI imports this without the CDK.
"""

from __future__ import annotations

from dataclasses import dataclass

from extract.scheduling import small_queue
from infra.aws import outputs as output_names
from infra.aws.cdk.settings import DeploySettings
from infra.aws.names import StackNames, stack_names
from infra.aws.routing import TWINNED_QUEUES

__all__ = ["Check", "QUOTA_CODE", "concurrency_needed", "run_preflight"]

QUOTA_CODE = "L-B99A9384"  # Service Quotas: AWS Lambda, Concurrent executions
PRESIGNER = 1  # the front door (a zip function, not among the settings' functions)


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    """``ok``, ``fail`` (the deploy, or the stack once running, would fail) or ``unknown``."""
    detail: str


def concurrency_needed(settings: DeploySettings) -> dict[str, int]:
    """What each function may run at once: its queue's cap, one for each scheduled or stream
    function (a schedule, a lease, a shard), one for the front door."""
    needed = {name: spec.concurrency or 1 for name, spec in settings.functions().items()}
    for name in TWINNED_QUEUES:  # the small documents' queues have consumers of their own
        needed[small_queue(name)] = getattr(settings, f"concurrency_{name}_small")
    needed["presigner"] = PRESIGNER
    return needed


def run_preflight(session, stack: str, settings: DeploySettings) -> list[Check]:
    """The checks for deploying ``stack`` with ``settings`` in ``session``'s region."""
    names = stack_names(stack)
    existing = _existing_outputs(session, stack)
    checks = [_quota(session, settings)]
    checks += _names(session, names, existing)
    return checks


def _client_error(error) -> tuple[str, str]:
    reply = getattr(error, "response", {}).get("Error", {})
    return reply.get("Code", type(error).__name__), reply.get("Message", str(error))


def _existing_outputs(session, stack: str) -> dict[str, str] | None:
    from botocore.exceptions import ClientError

    try:
        (found,) = session.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
    except ClientError:
        return None  # not deployed yet (or not readable): its names must be free
    return {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}


def _quota(session, settings: DeploySettings) -> Check:
    from botocore.exceptions import BotoCoreError, ClientError

    needed = concurrency_needed(settings)
    total = sum(needed.values())
    caps = ", ".join(f"{n} {c}" for n, c in needed.items() if c > 1)
    try:
        limits = session.client("lambda").get_account_settings()["AccountLimit"]
    except (BotoCoreError, ClientError) as error:
        code, message = _client_error(error)
        return Check("lambda concurrency", "unknown", f"cannot read the account's quota "
                     f"({code}: {message}); the stack needs {total} ({caps}, and 1 for each "
                     "scheduled function and the front door)")
    quota = int(limits.get("UnreservedConcurrentExecutions", limits["ConcurrentExecutions"]))
    queues = [n for n, spec in settings.functions().items() if spec.concurrency is not None]
    queues += [small_queue(n) for n in TWINNED_QUEUES]
    smallest = 2 * len(queues) + total - sum(needed[n] for n in queues)
    if quota >= total:
        return Check("lambda concurrency", "ok", f"quota {quota}, the stack needs at most "
                     f"{total} ({caps}, 1 for each scheduled function and the front door)")
    lower = ("" if quota < smallest else " or lower the caps (-c concurrency_read=2 ..., each "
             "at least 2; the ConcurrencyRead... parameters after a deploy)")
    return Check("lambda concurrency", "fail", (
        f"quota {quota}, the stack needs {total} ({caps}, 1 for each scheduled function and "
        f"the front door); below that, throttled receives count toward the "
        f"{settings.max_receives} before a message dead-letters. Ask for {total} or more in "
        f"Service Quotas (AWS Lambda, Concurrent executions, {QUOTA_CODE}){lower}"
        + (f"; the smallest caps ({len(queues)} queues at 2) still need {smallest}"
           if quota < smallest else "")))


def _names(session, names: StackNames, existing: dict[str, str] | None) -> list[Check]:
    ours = existing or {}
    lookups = (
        ("glue database", names.database, ours.get(output_names.DATABASE), _glue_database),
        ("athena workgroup", names.workgroup, ours.get(output_names.WORKGROUP), _workgroup),
        ("dashboard", names.dashboard, ours.get(output_names.DASHBOARD), _dashboard),
    )
    checks = []
    for what, name, owned, exists in lookups:
        try:
            found = exists(session, name)
        except Exception as error:  # noqa: BLE001 - any refusal: say so, check the rest
            code, message = _client_error(error)
            checks.append(Check(f"{what} {name}", "unknown", f"cannot look ({code}: {message})"))
            continue
        if not found:
            checks.append(Check(f"{what} {name}", "ok", "free"))
        elif owned == name:
            checks.append(Check(f"{what} {name}", "ok", f"stack {names.stack}'s own (an update)"))
        else:
            checks.append(Check(f"{what} {name}", "fail", (
                f"exists and is not stack {names.stack}'s: the deploy would roll back. Deploy "
                "under another stack name (cdk deploy -c stack_name=NAME; the names follow it)"
                + (", or delete this database (doclake aws catalog makes one by this name)"
                   if what == "glue database" else ""))))
    return checks


def _glue_database(session, name: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        session.client("glue").get_database(Name=name)
    except ClientError as error:
        if _client_error(error)[0] == "EntityNotFoundException":
            return False
        raise
    return True


def _workgroup(session, name: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        found = session.client("athena").get_work_group(WorkGroup=name)
    except ClientError as error:
        code, message = _client_error(error)
        if code == "InvalidRequestException" and "not found" in message.lower():
            return False
        raise
    return bool(found.get("WorkGroup", {}).get("Name"))


def _dashboard(session, name: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        session.client("cloudwatch").get_dashboard(DashboardName=name)
    except ClientError as error:
        if _client_error(error)[0] in ("ResourceNotFound", "ResourceNotFoundException"):
            return False
        raise
    return True
