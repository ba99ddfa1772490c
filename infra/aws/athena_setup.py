"""``doclake aws setup``: the lake's Athena set-up run on a deployed stack, statement by statement.

The statements are ``lake.athena.setup_statements``: exactly what ``doclake lake views --dialect
athena`` prints, nothing rewritten. Each is one Athena query in the stack's workgroup, sent
through awswrangler, and the next starts only after it succeeded (a view reads the ones before
it). On the stack's own database ``CREATE DATABASE IF NOT EXISTS`` and ``CREATE EXTERNAL TABLE
IF NOT EXISTS`` leave CloudFormation's database and raw tables as they are; ``CREATE OR
REPLACE VIEW`` writes the views, so running it again after an upgrade brings them up to date.

Why a command after the deploy and not a custom resource during it: Athena checks each view
against the tables when it runs the statement, so a mistake in a view would roll the whole stack
back (buckets, queues and all) instead of failing one command that can be rerun; a custom
resource needs its own Lambda, role and timeout, and would pin the views to the deploy, where
the command upgrades them at any time, on any stack, and prints what it did.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lake.athena import setup_statements

__all__ = ["SetupFailed", "RanStatement", "statements_for", "run_setup"]


class SetupFailed(RuntimeError):
    """A statement failed (Athena's reason in the message); the ones before it stay done."""


@dataclass(frozen=True)
class RanStatement:
    statement: str
    query_id: str
    seconds: float

    @property
    def summary(self) -> str:
        """``CREATE OR REPLACE VIEW doclake.jobs``: the statement's words up to its name."""
        head = self.statement.split("\n", 1)[0]
        return head.removesuffix(" AS").removesuffix(" (")


def statements_for(database: str, lake_bucket: str, projection_start: str,
                   prefix: str = "") -> list[str]:
    """The statements for a stack: its database, its lake bucket, its projection's first day."""
    return setup_statements(lake_bucket, prefix, database=database,
                            projection_start=projection_start)


def run_setup(statements: list[str], *, workgroup: str, boto3_session,
              clock: Callable[[], float] = time.monotonic,
              poll_s: float = 0.5) -> Iterator[RanStatement]:
    """Run each statement as one Athena query in ``workgroup`` (whose configuration gives the
    result location), yielding each as it succeeds; ``SetupFailed`` stops the run."""
    import awswrangler as wr

    for statement in statements:
        started = clock()
        try:
            answer = wr.athena.start_query_execution(
                sql=statement, workgroup=workgroup, wait=True, boto3_session=boto3_session,
                athena_query_wait_polling_delay=poll_s)
        except (wr.exceptions.QueryFailed, wr.exceptions.QueryCancelled) as error:
            raise SetupFailed(f"{statement.splitlines()[0]}: {error}") from None
        yield RanStatement(statement, answer["QueryExecutionId"], clock() - started)
