"""Imported for its effect: the shipped rules and the NDA kind model, built in the importing
process.

A run that uses the rules has its CPU workers' fork server import this (``infra.local.
forkserver``): the fork server imports while the run's own process does, on the other core, so
building the two models there (their imports and JSON, 0.08 s of CPU) costs the run nothing, and
every worker forked from it starts with them built. Built in each worker instead, the short
lane's warm-up took those 0.08 s while the first documents were being read, and no other lane
could run a document's rules without paying them again.
"""

from __future__ import annotations

from extract.fields.applicability.model import nda_model
from extract.fields.rules.offline import shipped_rules

try:
    shipped_rules()
    nda_model()
except Exception:  # noqa: BLE001 - see below
    # A model missing or broken in the package fails each document's fields where they run
    # (``model_missing``, a recorded failure); raised here it would stop the fork server, and
    # with it every worker of the run, reading included (only an ImportError is let pass).
    pass
