"""What a call costs: a dated price per million input and output tokens, per model.

The table is a setting (``DOCLAKE_MODEL_PRICES``, JSON) because prices change and a team may have
its own contract; the defaults carry the date they were read from the provider's price list, so a
cost in the lake can be traced to the prices it was computed with. Thinking tokens are billed as
output, so callers pass them in ``output_tokens``. Names are matched as providers spell them too:
``models/gemini-2.5-flash`` and a pinned ``gemini-2.5-flash-001`` are ``gemini-2.5-flash``. A run
whose models have no price stops at start (``PriceTable.missing``, exit 2 in the CLI); a model
that still has none mid-run costs 0 and says so once in the log, rather than failing a page over
bookkeeping.
"""

from __future__ import annotations

import logging
import re

from pydantic import BaseModel, Field

__all__ = ["DEFAULT_PRICES", "ModelPrice", "PriceTable", "normalise_model"]

_PINNED = re.compile(r"-\d{3}$")  # a pinned stable version: gemini-2.0-flash-001


def normalise_model(name: str) -> str:
    """The name a price is listed under: no ``models/`` (or ``publishers/.../models/``) path
    before it, no pinned ``-001`` version after it."""
    return _PINNED.sub("", name.strip().rsplit("models/", 1)[-1])

log = logging.getLogger(__name__)


class ModelPrice(BaseModel):
    input_per_million: float = Field(ge=0, description="USD per 1M input tokens (text and image)")
    output_per_million: float = Field(ge=0, description="USD per 1M output tokens (with thinking)")
    as_of: str = Field(description="the date these prices were read, YYYY-MM-DD")


# Standard (paid tier, prompts under 200k tokens) list prices, as published for the Gemini API.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gemini-2.5-flash": ModelPrice(input_per_million=0.30, output_per_million=2.50,
                                   as_of="2026-01-08"),
    "gemini-2.5-flash-lite": ModelPrice(input_per_million=0.10, output_per_million=0.40,
                                        as_of="2026-01-08"),
    "gemini-3-flash-preview": ModelPrice(input_per_million=0.50, output_per_million=3.00,
                                         as_of="2026-01-08"),
    "gemini-2.5-pro": ModelPrice(input_per_million=1.25, output_per_million=10.00,
                                 as_of="2026-01-08"),
}


class PriceTable:
    def __init__(self, prices: dict[str, ModelPrice] | None = None):
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        self._warned: set[str] = set()

    def price(self, model: str) -> ModelPrice | None:
        """The model's price, by its name as given or as normalised (``normalise_model``)."""
        return self.prices.get(model) or self.prices.get(normalise_model(model))

    def missing(self, models: list[str]) -> list[str]:
        """The models (non-empty names) that have no price: a run must not start with one."""
        return [m for m in dict.fromkeys(models) if m and self.price(m) is None]

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.price(model)
        if price is None:
            if model not in self._warned:
                self._warned.add(model)
                log.warning("no price for model %r: its calls are recorded at $0", model)
            return 0.0
        return (input_tokens * price.input_per_million
                + output_tokens * price.output_per_million) / 1_000_000
