"""What ``doclake run`` and ``doclake serve`` check of their reader, fields and strategy before
anything is ingested or listens: a name that exists, a schema that loads, a model with a price
and a key. Each refusal is a ``UserError`` naming the setting to fix, so a mistake costs an
error line, not a folder of documents failed ``reader_unavailable``."""

from __future__ import annotations

import sys
from pathlib import Path

from infra.cli.errors import UserError

__all__ = ["LLM_STRATEGIES", "check_reader_name", "check_models_can_run", "fields_request"]

LLM_STRATEGIES = ("single-pass", "agentic")


def check_reader_name(reader: str) -> None:
    from extract.readers import READERS

    if reader not in READERS:
        raise UserError(f"--reader {reader!r} is not available in this build",
                        f"use one of: {', '.join(sorted(READERS))}")


def check_models_can_run(reader: str, schema_name: str | None, strategy: str, settings) -> None:
    """Prices for the models a reader or an LLM strategy will call, and a key for Gemini."""
    if reader in ("gemini", "simulated") or (schema_name is not None and strategy != "rules"):
        _check_prices(settings)
    _reader_can_call(reader, settings)
    if schema_name is not None:
        _strategy_can_call(strategy, settings)


def fields_request(fields: str, strategy: str) -> str | None:
    """Check ``--fields`` and ``--strategy`` before anything is ingested; the schema as the
    fields messages will name it, or None for ``--fields none``."""
    from extract.fields.schemas import NdaFields, SchemaLoadError, load_schema
    from extract.fields.strategies import STRATEGIES, available

    if strategy not in STRATEGIES:
        raise UserError(f"--strategy {strategy!r} is not a strategy",
                        f"use one of: {', '.join(STRATEGIES)}")
    if str(Path.cwd()) not in sys.path and "" not in sys.path:  # MODULE:CLASS beside the user
        sys.path.append(str(Path.cwd()))
    try:
        schema = load_schema(fields)
    except SchemaLoadError as error:
        raise UserError(str(error), "use nda, none, or MODULE:CLASS naming a pydantic model "
                        "importable from the current folder or PYTHONPATH") from None
    if schema is None:
        return None
    if not available(strategy):
        raise UserError(f"--strategy {strategy!r} is not available in this build "
                        "(strategy_unavailable)", "use --strategy rules (offline, NDA schema)")
    if strategy == "rules" and schema is not NdaFields:
        raise UserError(f"--strategy rules extracts only the NDA schema, not {fields!r}",
                        "use --fields nda, or an LLM strategy (single-pass, agentic) for your "
                        "own schema")
    return "nda" if schema is NdaFields else fields.strip()


def _no_gemini_key(settings) -> bool:
    key = settings.gemini_api_key
    return key is None or not key.get_secret_value().strip()


def _strategy_can_call(strategy: str, settings) -> None:
    """An LLM strategy without a usable key would fail every document (``strategy_unavailable``)
    after ingesting them all: refuse before anything is stored, naming the setting to fix."""
    if strategy not in LLM_STRATEGIES or settings.reader == "simulated":
        return
    if _no_gemini_key(settings):
        raise UserError(f"--strategy {strategy} calls Gemini and no API key is set",
                        "set DOCLAKE_GEMINI_API_KEY (DOCLAKE_GEMINI_BASE_URL for a proxy), or "
                        "use --strategy rules (offline), or --reader simulated for a demo")


def _reader_can_call(reader: str, settings) -> None:
    """``--reader gemini`` without a key would ingest everything and fail every document
    ``reader_unavailable``: refuse before anything is stored, naming the setting to fix."""
    if reader != "gemini":
        return
    if _no_gemini_key(settings):
        raise UserError("--reader gemini calls Gemini and no API key is set",
                        "set DOCLAKE_GEMINI_API_KEY (DOCLAKE_GEMINI_BASE_URL for a proxy), or "
                        "use --reader auto (offline: text layer, then OCR), or --reader "
                        "simulated for a demo")


def _check_prices(settings) -> None:
    """A run that calls models must know what each call costs: a model with no price would be
    recorded at $0 all run long, so it stops here, before anything is ingested."""
    from extract.models.pricing import PriceTable

    models = [settings.primary_model]
    if settings.fallback_provider == "gemini":
        models.append(settings.fallback_model)
    prices = PriceTable(settings.model_prices)
    missing = prices.missing(models)
    if missing:
        raise UserError(f"no price for model {missing[0]!r}: its calls would cost $0 on the ledger",
                        "add it to DOCLAKE_MODEL_PRICES (JSON: {\"MODEL\": {\"input_per_million\": "
                        "..., \"output_per_million\": ..., \"as_of\": \"YYYY-MM-DD\"}}) or use "
                        f"one of: {', '.join(sorted(prices.prices))}")
