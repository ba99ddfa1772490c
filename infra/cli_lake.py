"""``doclake lake ...``: compaction, replay check and data-quality check."""

from __future__ import annotations

import typer

lake_app = typer.Typer(no_args_is_help=True, help="Maintain and verify the event lake.")
