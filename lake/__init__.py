"""lake."""

__all__ = []
