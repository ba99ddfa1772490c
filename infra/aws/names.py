"""The account-wide names a stack creates, derived from its CloudFormation name.

A Glue database, an Athena workgroup and a CloudWatch dashboard are named in the account (and
region), not inside the stack: fixed names made a second stack, or a database made earlier by
``doclake aws catalog``, collide at deploy. Every one is derived here from the stack's name, so
the stack (``infra.aws.cdk.stack``), ``doclake aws preflight`` and the docs agree; the stack
``Doclake`` keeps the names it always had (``doclake``, ``doclake``, ``doclake-operations``).
Plain Python: the CLI imports it without the CDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_STACK", "StackNames", "stack_names"]

DEFAULT_STACK = "Doclake"
# CloudFormation's rule for a stack name.
_STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")


@dataclass(frozen=True)
class StackNames:
    stack: str
    database: str
    """Glue: lower case, ``_`` between words (Athena reads ``-`` as minus)."""
    workgroup: str
    dashboard: str


def stack_names(stack: str) -> StackNames:
    """The names ``stack`` creates; ``ValueError`` for a name CloudFormation refuses."""
    if not _STACK_NAME.fullmatch(stack):
        raise ValueError(f"{stack!r} is not a CloudFormation stack name (a letter, then letters, "
                         "digits and hyphens, at most 128)")
    words = stack.lower().replace("_", "-")
    return StackNames(stack=stack, database=words.replace("-", "_"), workgroup=words,
                      dashboard=f"{words}-operations")
