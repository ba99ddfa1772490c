"""The `doclake` command: one module per command group; what it prints is in `render/`."""

__all__ = []
