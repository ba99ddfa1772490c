"""The offline NDA extractor: candidate values (dates, states, durations, parties), their
features, a linear scorer stored as JSON, and its training; no network, milliseconds a document."""

__all__ = []
