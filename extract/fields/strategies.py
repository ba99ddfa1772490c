"""The strategy registry: ``--strategy`` names one of these, the fields handler builds it.

Each entry is ``"module:function"``, imported when first used, so an offline run never imports a
model client and a strategy whose module is not in this build says so (``strategy_unavailable``)
instead of failing at start-up. A factory receives the handler context and the delivery (a model
strategy puts every call on the ledger under the delivery's document and job) and returns a
``Strategy`` (``extract.fields.base``).

The LLM strategies (``single_pass.py``, ``agentic.py``) import google-genai only when built, and
raise ``StrategyUnavailable`` from ``build`` when no model can be called (no API key).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from extract.errors import TerminalError
from extract.fields.base import Strategy

if TYPE_CHECKING:
    from extract.context import Delivery, HandlerContext

__all__ = ["OFFLINE", "STRATEGIES", "StrategyUnavailable", "available", "build_strategy",
           "factory"]

StrategyFactory = Callable[["HandlerContext", "Delivery"], Strategy]

STRATEGIES: dict[str, str] = {
    "rules": "extract.fields.rules.offline:build",
    "single-pass": "extract.fields.llm.single_pass:build",
    "agentic": "extract.fields.llm.agentic:build",
}


OFFLINE: frozenset[str] = frozenset({"rules"})
"""Strategies that call no model: building one needs no key and pays nothing, so the handler
builds it before the document's kind is checked, and one that checks the kind itself
(``KindChecking``) does so in its own call. Any other is built only for a document of the kind."""


class StrategyUnavailable(TerminalError):
    """The strategy is not one we know, or its module is not in this build."""

    error_type = "strategy_unavailable"


def factory(name: str) -> StrategyFactory:
    """The factory registered under ``name``; raises ``StrategyUnavailable``."""
    target = STRATEGIES.get(name)
    if target is None:
        raise StrategyUnavailable(f"no strategy {name!r}; the strategies are "
                                  f"{', '.join(sorted(STRATEGIES))}")
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:  # the module exists but something it imports does not
            raise
        raise StrategyUnavailable(f"the {name} strategy is not available in this build "
                                  f"({module_name} is not installed yet); use --strategy rules"
                                  ) from None
    build = getattr(module, function, None)
    if build is None:
        raise StrategyUnavailable(f"{module_name} has no {function}(); the {name} strategy "
                                  "cannot be built")
    return build


def available(name: str) -> bool:
    """Whether ``name`` can be built in this build (for the CLI to refuse early)."""
    try:
        factory(name)
    except StrategyUnavailable:
        return False
    return True


def build_strategy(name: str, ctx: HandlerContext, delivery: Delivery) -> Strategy:
    return factory(name)(ctx, delivery)
