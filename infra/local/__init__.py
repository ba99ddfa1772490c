"""The embedded runtime: every port on SQLite and the filesystem, one machine."""

__all__ = []
