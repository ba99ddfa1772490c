"""``doclake show FILE-OR-ID``: one document as its user knows it, by its file or an id.

Finds the document by its id or a job's id, by the file itself (the bytes' SHA-256, when the
argument is a file on disk), or by the path or name it was ingested under; then prints its
latest job's status, pages, the fields of its published result, and where its text and result
are on disk. ``--text`` prints the text itself, page after page, in order.

Read from the home's job store and object folder (what ``doclake run`` wrote), not the lake:
the text lives there, and a document is found without starting DuckDB.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infra.cli.errors import UserError
from infra.cli.home import Access, open_settings
from infra.cli.render.output import (
    FormatOption,
    print_object,
    print_records,
    resolve_format,
    terminal_safe,
)

__all__ = ["HomeOption", "find_document", "page_files", "describe", "show"]

if TYPE_CHECKING:
    from extract.state import Document, Job
    from infra.local.jobstore import SqliteJobStore

HomeOption = Annotated[Path | None, typer.Option("--home", help="State folder "
                       "(default $DOCLAKE_HOME, else ./.doclake).", show_default=False)]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def find_document(store: SqliteJobStore, wanted: str) -> tuple[Document, Job]:
    """The document ``wanted`` names and its latest job; a ``UserError`` when nothing or more
    than one document matches."""
    document = store.get_document(wanted)
    if document is None and (job := store.get_job(wanted)) is not None:
        document = store.get_document(job.document_id)
    path = Path(wanted)
    if document is None and path.is_file():
        found = store.find_document_by_sha256(_sha256(path))
        if found is not None:
            document = found[0]
    if document is None:
        jobs = [j for j in store.list_jobs()
                if wanted in (j.source_path, j.source_name) or (
                    j.source_path and path.as_posix().endswith("/" + j.source_path))]
        ids = list(dict.fromkeys(j.document_id for j in reversed(jobs)))
        if len(ids) > 1:
            named = ", ".join(f"{j.source_path or j.source_name} ({j.document_id})"
                              for j in jobs if j.document_id in ids[:5])
            raise UserError(f"{len(ids)} documents match {wanted!r}: {named}",
                            "give the path under the folder you ran (a/NDA.pdf) or a "
                            "document_id")
        document = store.get_document(ids[0]) if ids else None
    if document is None:
        raise UserError(f"no document {wanted!r} in this home",
                        "give a file you ran, its path or name as ingested, or a document_id "
                        "or job_id (doclake search WORDS --format csv lists ids)")
    job = store.get_job(document.latest_job_id)
    if job is None:  # pragma: no cover - the store writes both in one transaction
        raise UserError(f"document {document.document_id} has no job", "run it again")
    return document, job


def page_files(objects_root: Path, document_id: str, job_id: str) -> list[Path]:
    """The job's stored pages, in page order (their names are zero-padded)."""
    from lake.layout import pages_prefix

    folder = objects_root / pages_prefix(document_id, job_id)
    return sorted(folder.glob("*.md")) if folder.is_dir() else []


def describe(document: Document, job: Job, objects_root: Path) -> dict[str, Any]:
    """What ``show`` prints: the document, its latest job, its fields and where its files are."""
    from lake.layout import pages_prefix, result_key

    pages = page_files(objects_root, document.document_id, job.job_id)
    result_path = objects_root / result_key(document.document_id)
    result = json.loads(result_path.read_text(encoding="utf-8")) if result_path.is_file() else {}
    took = None  # seconds, a number in CSV and JSON (an ISO "PT19.7S" is no analyst's unit)
    if job.finished_at is not None:
        took = round((job.finished_at - job.created_at).total_seconds(), 3)
    text_folder = objects_root / pages_prefix(document.document_id, job.job_id)
    return {
        "file": job.source_path or document.source_name,
        "document_id": document.document_id,
        "job_id": job.job_id,
        "version": document.version,
        "status": job.status.value,
        "failure_reason": job.failure_reason,
        "detected_format": job.detected_format,
        "pages": job.pages,
        "created_at": job.created_at,
        "took": took,
        "text": str(text_folder) if text_folder.is_dir() else None,  # only a path that exists
        "text_files": len(pages),
        "result": str(result_path) if result_path.is_file() else None,
        "result_status": result.get("status"),
        "fields": result.get("extracted_fields") or {},
    }


def show(
    document: Annotated[str, typer.Argument(help="A file you ran, its path or name as "
                        "ingested (a/NDA.pdf), or a document_id or job_id.",
                        show_default=False)],
    home: HomeOption = None,
    text: Annotated[bool, typer.Option("--text", help="Print the document's text, page "
                    "after page, instead.")] = False,
    output_format: FormatOption = None,
) -> None:
    """One document: its status, pages, fields and where its text is (--text prints it)."""
    from infra.local.jobstore import SqliteJobStore

    output_format = resolve_format(output_format)
    settings = open_settings(home, Access.WRITE)
    store = SqliteJobStore(settings.home / "jobs.db")
    try:
        found, job = find_document(store, document)
    finally:
        store.close()
    objects_root = settings.home / "objects"
    if text:
        _print_text(page_files(objects_root, found.document_id, job.job_id))
        return
    about = describe(found, job, objects_root)
    if job.failure_reason:
        about.update(_failure(settings, job.job_id, job.failure_reason))
    if output_format == "json":
        print_object(about, "json")
        return
    fields = about.pop("fields")
    rows = [(name, value) for name, value in about.items() if value is not None]
    rows += [(f"fields.{name}", value) for name, value in fields.items()]
    if output_format == "csv":
        print_records(("figure", "value"), rows, "csv")
    else:
        _print_pairs(rows)


def _failure(settings, job_id: str, reason: str) -> dict[str, str | None]:
    """Why a failed document failed, in words: the first message the lake holds for its job
    (which page, which limit, what the parser said) and what to do about its reason. Only a
    failed document pays for the lake query."""
    from infra.cli.render.failure_hints import failure_hint
    from infra.cli.render.run_report import failure_messages

    try:
        message = failure_messages(str(settings.lake), [job_id]).get(job_id)
    except Exception:  # noqa: BLE001 - a lake that cannot be read still leaves the reason
        message = None
    return {"failure_message": message, "hint": failure_hint(reason) or None}


def _print_pairs(rows: list[tuple[str, Any]]) -> None:
    """Two columns, the names and their values; a long value (a path) folds onto the next
    lines whole, however narrow the terminal."""
    from rich.console import Console
    from rich.table import Table

    from infra.cli.render.output import table_cell

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for name, value in rows:
        shown = f"{value:,.1f} s" if name == "took" else table_cell(value, name)
        grid.add_row(terminal_safe(name), terminal_safe(shown))
    Console(highlight=False).print(grid)


def _print_text(pages: list[Path]) -> None:
    """The pages' Markdown in order, a blank line between two; shown safely on a terminal."""
    out = sys.stdout
    for number, page in enumerate(pages):
        body = page.read_text(encoding="utf-8", errors="replace").rstrip("\n")
        if out.isatty():
            body = "\n".join(terminal_safe(line, markup=False) for line in body.split("\n"))
        out.write(("\n\n" if number else "") + body)
    out.write("\n" if pages else "")
    out.flush()
