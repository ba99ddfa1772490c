"""infra."""

__all__ = []
