"""A run's choices, recorded with each job it creates and applied by every handler that touches it.

``doclake run --reader simulated`` killed half way and finished by ``doclake worker --until-idle``
(no flags) must read the rest with the simulated model, not the worker's default reader; a
Lambda must read with what the upload's job asked for. So the choices that change what a job
produces (who reads, the models, how pages are cut and rendered) are written to the job at
creation, as JSON, and ``apply`` lays them over the handling process's own settings. Limits and
time budgets stay the handling process's: they protect that process, not the result.
"""

from __future__ import annotations

import json

from extract.config import ExtractConfig

__all__ = ["CONFIG_CHOICES", "MODEL_CHOICES", "record", "apply"]

CONFIG_CHOICES = ("reader", "pages_per_unit", "ocr_dpi", "max_render_pixels")
"""``ExtractConfig`` fields a job keeps."""
MODEL_CHOICES = ("primary_model", "fallback_model", "fallback_provider", "render_dpi",
                 "render_max_pixels", "render_grayscale", "render_format")
"""``ModelConfig`` fields a job keeps (never a key or an endpoint)."""


_REMEMBERED = 64
"""Configs whose ``record`` and ``apply`` are remembered (by identity: a config is never changed
in place, only copied). A split batch handles sixteen jobs of one run; each applied the same
JSON over the same settings and recorded the result again (0.1 ms a job in the main process)."""
_RECORDS: dict[int, tuple[ExtractConfig, str]] = {}
_APPLIED: dict[tuple[int, str], tuple[ExtractConfig, ExtractConfig]] = {}


def _remember(memo: dict, key: object, config: ExtractConfig, value: object) -> None:
    if len(memo) >= _REMEMBERED:
        memo.clear()
    memo[key] = (config, value)  # the config kept alive: its id is not reused meanwhile


def record(config: ExtractConfig) -> str:
    """The choices of ``config`` as the JSON a job keeps."""
    known = _RECORDS.get(id(config))
    if known is not None and known[0] is config:
        return known[1]
    recorded = _record(config)
    _remember(_RECORDS, id(config), config, recorded)
    return recorded


def _record(config: ExtractConfig) -> str:
    choices = {name: getattr(config, name) for name in CONFIG_CHOICES}
    choices["models"] = {name: getattr(config.models, name) for name in MODEL_CHOICES}
    return json.dumps(choices, sort_keys=True, separators=(",", ":"))


def apply(config: ExtractConfig, recorded: str | None) -> ExtractConfig:
    """``config`` with a job's recorded choices laid over it; ``config`` itself when the job
    recorded none (created by an older build) or the same ones."""
    if not recorded:
        return config
    known = _APPLIED.get((id(config), recorded))
    if known is not None and known[0] is config:
        return known[1]
    applied = _apply(config, recorded)
    _remember(_APPLIED, (id(config), recorded), config, applied)
    return applied


def _apply(config: ExtractConfig, recorded: str) -> ExtractConfig:
    choices = json.loads(recorded)
    models = {k: v for k, v in choices.pop("models", {}).items() if k in MODEL_CHOICES}
    update = {k: v for k, v in choices.items() if k in CONFIG_CHOICES}
    if all(getattr(config, k) == v for k, v in update.items()) and all(
            getattr(config.models, k) == v for k, v in models.items()):
        return config
    if models:
        update["models"] = config.models.model_copy(update=models)
    return config.model_copy(update=update)
