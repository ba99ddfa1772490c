"""What the `doclake` command prints: tables, run summaries, status, schema and view listings."""

__all__ = []
