"""extract."""

__all__ = []
