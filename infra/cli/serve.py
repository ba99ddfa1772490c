"""``doclake serve``'s command line (the server itself: ``infra.serve.server``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from infra.cli.errors import at_least
from infra.cli.home import Access, load_settings, open_home

__all__ = ["serve"]


def serve(
    home: Annotated[Path | None, typer.Option("--home", help="State folder (default "
                    "$DOCLAKE_HOME, else ./.doclake).", show_default=False)] = None,
    host: Annotated[str, typer.Option(help="Address to bind; keep 127.0.0.1 unless a proxy "
                    "with TLS stands in front.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8480,
    expiry_s: Annotated[int, typer.Option("--expiry-s", callback=at_least(1),
                        help="Seconds an upload URL stays valid (at most 900).")] = 300,
    max_bytes: Annotated[int | None, typer.Option(help="Largest upload (default: the "
                         "max_file_bytes setting).")] = None,
    reader: Annotated[str, typer.Option(help="Who reads pages: auto (text layer, then OCR), "
                      "text, ocr, gemini, simulated.")] = "auto",
    fields: Annotated[str, typer.Option(help="Structured fields of every upload: nda (the "
                      "built-in NDA schema, offline; the default, as for `doclake run`), "
                      "MODULE:CLASS, or none (text only).")] = "nda",
    strategy: Annotated[str, typer.Option(help="rules|single-pass|agentic")] = "rules",
) -> None:
    """The front door on one machine: POST /uploads, PUT the file, GET its result JSON."""
    from rich.console import Console

    from infra.cli.errors import UserError
    from infra.serve.server import check_secret, serve_command

    if expiry_s > 900:
        raise UserError(f"--expiry-s {expiry_s} is over 15 minutes", "use at most 900")
    if secret := os.environ.get("DOCLAKE_SERVE_SECRET", "").encode():
        try:  # before the home is made: a refused serve leaves nothing behind
            check_secret(secret)
        except ValueError as error:
            raise UserError(str(error), "set DOCLAKE_SERVE_SECRET to 32 random bytes or more") \
                from None
    schema_name, settings = _choices(home, reader, fields, strategy)
    console = Console(stderr=True, highlight=False)
    try:
        serve_command(host, port, settings, expiry_s=expiry_s, max_bytes=max_bytes,
                      echo=console.print,
                      fields=(schema_name, strategy) if schema_name is not None else None)
    except ValueError as error:  # a secret too short: said before anything listens
        raise UserError(str(error), "set DOCLAKE_SERVE_SECRET to 32 random bytes or more") \
            from None


def _choices(home: Path | None, reader: str, fields: str, strategy: str):
    """The reader and fields every upload gets, checked as ``doclake run`` checks them (a model
    without its key is refused before anything listens); the schema's name (None: no fields)
    and the settings."""
    from infra.cli.preflight import check_models_can_run, check_reader_name, fields_request

    check_reader_name(reader)
    schema_name = fields_request(fields, strategy)
    settings = load_settings(home, reader=reader)
    check_models_can_run(reader, schema_name, strategy, settings)
    return schema_name, open_home(settings, Access.CREATE)
