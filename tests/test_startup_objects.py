"""A run freezes the objects its process made before it (``infra.local.startup_objects``).

The imports' objects (google-genai, pyarrow, pydantic) were scanned on every full collection,
stopping the event loop for up to 100 ms at a time; frozen, the collector no longer looks at
them. Once per process: a second run does not freeze again what the first one made.
"""

from __future__ import annotations

import asyncio
import gc

from infra.local.runtime import LocalRuntime


def test_a_run_freezes_what_exists_before_it_and_a_second_run_does_not(settings):
    runtime = LocalRuntime(settings)
    try:
        asyncio.run(runtime.process(lambda: True))
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the imports' objects, at least
        made_after = [[n] for n in range(1_000)]  # containers: tracked by the collector
        asyncio.run(runtime.process(lambda: True))
        # Not one more: frozen objects freed meanwhile leave the count, nothing joins it.
        assert gc.get_freeze_count() <= frozen, f"{len(made_after)} new objects frozen too"
    finally:
        runtime.close()
