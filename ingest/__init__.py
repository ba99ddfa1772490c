"""ingest."""

__all__ = []
