"""The retry budget across layers outlasts the write-up's 25-minute brownout, by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.homes import empty_home

from extract.models.budget import retry_budget
from extract.models.config import ModelConfig
from infra.settings import Settings


def _budget(settings: Settings):
    return retry_budget(settings.extract_config().models, max_receives=settings.max_receives,
                        visibility_timeout_s=settings.visibility_timeout_s,
                        no_progress_timeout_s=settings.no_progress_timeout_s)


def test_the_default_retry_budget_exceeds_30_minutes_and_survives_a_25_minute_brownout():
    budget = _budget(Settings())
    assert budget.total_s > 30 * 60
    assert budget.survives_s >= 25 * 60


def test_the_budget_follows_the_settings():
    base = Settings()
    shorter = Settings(model_retry_budget_s=60, max_receives=3)
    assert _budget(shorter).total_s < _budget(base).total_s
    no_fallback = retry_budget(ModelConfig(fallback_model=""), max_receives=5,
                               visibility_timeout_s=300, no_progress_timeout_s=1800)
    assert no_fallback.total_s == 5 * 300 + 0.5 * (2 + 4 + 8 + 16)
    # the write-up's setting: the whole budget was the queue's 60 s
    tiny = retry_budget(ModelConfig(model_retry_budget_s=1, fallback_model=""), max_receives=3,
                        visibility_timeout_s=30, no_progress_timeout_s=1800)
    assert tiny.survives_s < 25 * 60


def test_status_config_prints_the_budget(tmp_path):
    env = {**os.environ, "DOCLAKE_GEMINI_API_KEY": "secret-value-123"}
    empty_home(tmp_path / "home")  # a reading command refuses a folder that is not a home
    out = subprocess.run([sys.executable, "-m", "infra.cli.main", "status", "--config", "--home",
                          str(tmp_path / "home"), "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["retry_budget"]["total_s"] > 1800
    assert [layer["layer"] for layer in report["retry_budget"]["layers"]] == \
        ["sdk (per call)", "worker (per delivery)", "queue (redeliveries)"]
    assert "secret-value-123" not in out.stdout and report["settings"]["gemini_api_key"] == "(set)"
