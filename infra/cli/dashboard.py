"""``doclake dashboard --out FILE.html``: the lake's charts in one self-contained file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infra.cli.errors import UserError
from infra.cli.home import Access, open_settings

__all__ = ["HomeOption", "dashboard"]

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]


def dashboard(
    home: HomeOption = None,
    out: Annotated[Path, typer.Option("--out", help="The HTML file to write.")] = ...,
    since: Annotated[str | None, typer.Option(help="First UTC day shown (YYYY-MM-DD); "
                     "overrides --days.", show_default=False)] = None,
    until: Annotated[str | None, typer.Option(help="Last UTC day shown (YYYY-MM-DD).",
                     show_default=False)] = None,
    days: Annotated[int, typer.Option(help="Show the last N UTC days (today included), with "
                    "all time beside; 0: all time only.")] = 7,
) -> None:
    """Write one HTML file (charts inlined as SVG, nothing fetched) from the lake's tables."""
    from datetime import UTC, date, datetime, timedelta

    if days < 0:
        raise UserError(f"--days {days} is negative", "give a number of days, or 0 for all time")
    window = {}
    for option, value in (("--since", since), ("--until", until)):
        try:
            window[option] = date.fromisoformat(value) if value else None
        except ValueError:
            raise UserError(f"{option} {value!r} is not a day", "write it as YYYY-MM-DD") from None
    if window["--since"] is None and days:
        window["--since"] = datetime.now(UTC).date() - timedelta(days=days - 1)
    settings = open_settings(home, Access.READ)
    from dashboards.report import render
    from infra.cli.render.failure_hints import failure_hint

    page = render(settings.lake, since=window["--since"], until=window["--until"],
                  hint=failure_hint)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {out}: {error.strerror or error}",
                        "choose a writable path with --out") from None
    typer.echo(f"{out} ({out.stat().st_size:,} bytes)")
