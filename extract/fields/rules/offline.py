"""The ``rules`` strategy as the pipeline runs it: in the CPU pool, not on the event loop.

``RulesStrategy`` spends some 30 ms of pure-Python regex work on a Kleister NDA; inline, that
would stall every other message the worker pool is handling. Here the same code runs in the
runtime's process pool (inline on Lambda), like parsing does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from pydantic import BaseModel

from extract.errors import TerminalError
from extract.fields.base import Extraction, PageText
from extract.fields.kinds import is_of_kind, kind_score_in_worker, kind_score_then
from extract.fields.long_text import by_length
from extract.fields.rules.shipped import shipped_version
from extract.fields.schemas import NdaFields
from extract.fields.stored_pages import portable
from extract.ports import CpuRunner

if TYPE_CHECKING:
    from extract.context import Delivery, HandlerContext
    from extract.fields.rules.strategy import RulesStrategy

__all__ = ["OffloadedRules", "build", "run_rules", "run_rules_long_text", "run_rules_of_kind",
           "run_rules_of_kind_long_text", "shipped_rules"]


@cache
def shipped_rules() -> RulesStrategy:
    """The shipped model's strategy, built once a process, in the process that runs the rules
    (the short lane's; the handler's own on Lambda). Building one loads the model: about 30 ms,
    several times what extracting an NDA takes. Built per document, that was most of the short
    lane's work; the handler's process needs only the version (``shipped_version``), from the
    files' bytes, and imports none of the rules (``extract.fields.rules.shipped``)."""
    from extract.fields.rules.strategy import RulesStrategy

    return RulesStrategy()


def run_rules(pages: tuple[PageText, ...]) -> Extraction:
    """The CPU-pool entry point (module level, so it pickles)."""
    return shipped_rules().run(pages)


def run_rules_long_text(pages: tuple[PageText, ...]) -> Extraction:
    """``run_rules`` for a long text (``extract.fields.long_text``: seconds, not milliseconds),
    under a name the runtime's short lane does not take."""
    return run_rules(pages)


def run_rules_of_kind(kind: str, pages: tuple[PageText, ...]) -> tuple[float, Extraction | None]:
    """The document's kind score and, for one of the kind, the rules: one CPU call
    (``KindChecking``)."""
    return kind_score_then(kind, pages, run_rules)


def run_rules_of_kind_long_text(kind: str, pages: tuple[PageText, ...]
                                ) -> tuple[float, Extraction | None]:
    """``run_rules_of_kind`` for a long text, under a name the short lane does not take."""
    return run_rules_of_kind(kind, pages)


class OffloadedRules:
    """The rules strategy behind the ``Strategy`` port, its work sent to a ``CpuRunner``."""

    name = "rules"

    def __init__(self, cpu: CpuRunner, timeout_s: float):
        self.cpu = cpu
        self.timeout_s = timeout_s
        self.model_version = shipped_version()  # the model itself is built where it runs

    def version(self, schema: type[BaseModel] | None = None) -> str:
        return self.model_version

    async def extract(self, pages: Sequence[PageText], schema: type[BaseModel]) -> Extraction:
        if schema is not NdaFields:
            raise TerminalError(f"the rules strategy extracts only the NDA schema, not "
                                f"{schema.__name__}; use single-pass or agentic",
                                error_type="unsupported_schema")
        entry = by_length(pages, run_rules, run_rules_long_text)
        return await self.cpu.run(entry, portable(pages), timeout_s=self.timeout_s)

    async def extract_of_kind(self, kind: str, pages: Sequence[PageText],
                              schema: type[BaseModel]) -> tuple[float, Extraction | None]:
        """The kind check and the rules in one CPU call (``KindChecking``). Two calls where one
        would not do: a runner that starts a process a call (Lambda's) scores in the handler's
        process and starts one for an NDA's rules only (``kind_score_in_worker``); a schema
        the rules have none for is refused as ``extract`` refuses it, for a document of its
        kind only: any other is ``not_applicable``, as it is for every strategy."""
        if schema is not NdaFields or getattr(self.cpu, "process_per_call", False):
            score = await kind_score_in_worker(kind, pages, self.cpu, self.timeout_s)
            return score, (await self.extract(pages, schema) if is_of_kind(score) else None)
        entry = by_length(pages, run_rules_of_kind, run_rules_of_kind_long_text)
        return await self.cpu.run(entry, kind, portable(pages), timeout_s=self.timeout_s)


def build(ctx: HandlerContext, delivery: Delivery) -> OffloadedRules:
    return OffloadedRules(ctx.cpu, ctx.config.read_timeout_s)
