"""The shipped rules model's files and their version, read without building the rules.

The process that records a result's version (the fields handler's: the run's own process, whose
CPU is the run's ceiling) needs only that string. Importing the rules to get it compiled their
patterns there (27 ms of a run's start-up, before its first document), and hashing their code
through ``inspect`` imported every generator; here the version comes from the files' bytes, and
the rules are built only where they run (``extract.fields.rules.offline``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from extract.errors import TerminalError
from extract.fields.rules.calibration import CALIBRATION_PATH, shipped_calibration
from extract.fields.version import code_digest, rules_version

__all__ = ["GENERATOR_MODULES", "MODEL_PATH", "shipped_model_bytes", "shipped_version"]

MODEL_PATH = Path(__file__).with_name("nda_model.json")

GENERATOR_MODULES = ("extract.fields.rules.candidates", "extract.fields.rules.parties",
                     "extract.fields.rules.dates", "extract.fields.rules.patterns",
                     "extract.fields.rules.features", "extract.fields.rules.linear",
                     "extract.fields.rules.strategy")
"""The code that proposes and picks candidates: part of the rules version."""


def shipped_model_bytes() -> bytes:
    if not MODEL_PATH.exists():
        raise TerminalError(f"the rules model {MODEL_PATH.name} is missing from the package; "
                            "build it with `doclake fields train`", error_type="model_missing")
    return MODEL_PATH.read_bytes()


@cache
def shipped_version() -> str:
    """The shipped model's version, from its files as shipped: the model's JSON, the calibration
    fitted for it (when there is one) and the generators' code. No model is built: loading it
    and encoding it again (Python's JSON encoder, with indentation) took 30 ms alone, and 0.4 to
    0.7 s of the main process's event loop under a run's load, every message waiting."""
    data = shipped_model_bytes()
    name = json.loads(data)["version"]
    calibrated = shipped_calibration(name) is not None
    return rules_version(name, data + (CALIBRATION_PATH.read_bytes() if calibrated else b""),
                         code_digest(*GENERATOR_MODULES))
