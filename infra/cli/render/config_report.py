"""``doclake status --config``: the settings in force, and the retry budget they add up to.

Secrets are never printed, only whether they are set. The retry budget is computed from the same
settings the runtime uses (``extract.models.budget``), so what is printed is what a run does.
"""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from extract.models.budget import RetryBudget, retry_budget
from extract.models.config import ModelConfig
from infra.cli.render.output import print_records, print_table

__all__ = ["ConfigReport", "read_config"]

QUEUE_SETTINGS = ("reader", "concurrency", "pages_per_unit", "max_receives", "visibility_timeout_s",
                  "no_progress_timeout_s", "poll_interval_s", "read_timeout_s")


def _shown(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return "(set)"
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value


class ConfigReport:
    def __init__(self, settings: Any):
        names = [*QUEUE_SETTINGS, *ModelConfig.model_fields]
        self.settings = {name: _shown(getattr(settings, name)) for name in names}
        if self.settings.get("gemini_api_key") is None:
            self.settings["gemini_api_key"] = "(not set: --reader gemini is unavailable)"
        self.budget: RetryBudget = retry_budget(
            settings.extract_config().models, max_receives=settings.max_receives,
            visibility_timeout_s=settings.visibility_timeout_s,
            no_progress_timeout_s=settings.no_progress_timeout_s)

    def to_dict(self) -> dict[str, Any]:
        budget = self.budget
        return {"settings": self.settings,
                "retry_budget": {"layers": [{"layer": layer.name, "seconds": layer.seconds,
                                             "how": layer.how} for layer in budget.layers],
                                 "total_s": budget.total_s,
                                 "no_progress_timeout_s": budget.no_progress_timeout_s,
                                 "outage_survived_s": budget.survives_s}}

    def print(self, output_format: str) -> None:
        if output_format == "csv":
            rows = [("setting", k, str(v)) for k, v in self.settings.items()]
            rows += [("retry_budget", name, seconds) for name, seconds, _ in self.budget.rows()]
            print_records(("table", "key", "value"), rows, "csv")
            return
        print_table(("setting", "value"), ((k, str(v)) for k, v in self.settings.items()),
                    title="settings")
        print_table(("layer", "seconds", "how"), self.budget.rows(), title="retry budget")


def read_config(settings: Any) -> ConfigReport:
    return ConfigReport(settings)
