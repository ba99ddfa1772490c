"""dashboards."""

__all__ = []
