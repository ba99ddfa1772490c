"""The HTTP front door of the embedded runtime: `doclake serve` on 127.0.0.1."""

__all__ = []
