"""Each stage's own time limit: how long one delivery may run before it is given up as a try.

A handler that hangs (a bug, a lost connection with no timeout of its own) would otherwise hold
its message forever: the runtime's heartbeat keeps it hidden while the handler runs. Past this
limit ``handle_message`` cancels the handler, records a ``stage_time_limit`` failure and hands the
message back for redelivery (on its last delivery the unit or job fails), and the heartbeat stops
extending it. The limits are built from the limits of the calls a stage makes, with room to
spare, so that only a delivery that cannot be working normally reaches them.
"""

from __future__ import annotations

from extract.config import ExtractConfig
from extract.messages import (
    CONVERT_QUEUE,
    FIELDS_QUEUE,
    INDEX_QUEUE,
    READ_QUEUE,
    SHEET_QUEUE,
    SPLIT_QUEUE,
)
from extract.scheduling import port_queue

__all__ = ["MIN_LIMIT_S", "stage_time_limit"]

MIN_LIMIT_S = 60.0
"""No stage gets less: storage and the lake's commit take their time on a busy disk."""


def stage_time_limit(queue: str, config: ExtractConfig) -> float:
    """Seconds one delivery of a message on ``queue`` (or its dead-letter queue) may run."""
    queue = port_queue(queue).removesuffix("-dlq")  # a small-documents twin: its queue's
    models = config.models
    model_s = models.model_retry_budget_s + models.model_timeout_s
    limits = {
        # sniff, decrypt, count pages or plan a workbook (and read its first sheet)
        SPLIT_QUEUE: 4 * config.split_timeout_s + config.read_timeout_s,
        CONVERT_QUEUE: config.convert_timeout_s + 3 * config.split_timeout_s,
        # the text layer, then OCR or a model (with its retries and its fallback)
        READ_QUEUE: 2 * config.read_timeout_s + 2 * model_s,
        SHEET_QUEUE: 2 * config.read_timeout_s,
        INDEX_QUEUE: 2 * config.read_timeout_s,
        # an LLM strategy makes a few calls in turn; the rules take seconds
        FIELDS_QUEUE: 4 * model_s,
    }
    return max(limits.get(queue, MIN_LIMIT_S), MIN_LIMIT_S)
