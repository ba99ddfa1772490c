"""The deliberate breaks: one per promise the docs make, each with the tests that must catch it.

A mutant names the files it may touch by glob (so a function moved to a neighbouring module is
still found), and each edit by an anchor: text that must occur exactly once across those files.
An anchor found nowhere, or more than once, stops the run loudly (``run.AnchorMissing``): the
code moved or changed, and the mutant must be brought up to date, never silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MUTANTS", "Edit", "Mutant"]


@dataclass(frozen=True)
class Edit:
    """Replace ``anchor`` (which must occur exactly once in the mutant's files) by ``new``."""
    anchor: str
    new: str


@dataclass(frozen=True)
class Mutant:
    name: str
    promise: str
    files: tuple[str, ...]  # globs, relative to the repository root
    edits: tuple[Edit, ...]
    tests: tuple[str, ...]  # pytest node ids or ``file::-k expression`` selections


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "sql_guard_off", "doclake sql writes nothing: every statement not a read is refused",
        ("lake/read_only.py", "infra/cli/sql_guard.py"),
        (Edit("        if not _passes(con, statement):\n", "        if False:\n"),),
        ("tests/test_sql_guard.py::test_a_copy_into_a_lake_partition_cannot_forge_a_document",),
    ),
    Mutant(
        "links_ignored", "an Office file linking outside itself is refused (links_outside)",
        ("extract/formats/links.py",),
        (Edit("def check_links(path: Path, fmt: Format, "
              "max_inflated_bytes: int = DEFAULT_MAX_INFLATED) -> None:\n",
              "def check_links(path: Path, fmt: Format, "
              "max_inflated_bytes: int = DEFAULT_MAX_INFLATED) -> None:\n    return\n"),),
        ("tests/test_link_blocking.py::test_every_office_file_of_the_room_is_refused_for_its_link",),
    ),
    Mutant(
        "walk_follows_links", "a room's links are not followed: the walk lists no linked file",
        ("ingest/*.py", "ingest/**/*.py", "infra/local/*.py"),
        (Edit("if entry.is_symlink():", "if False:"),
         Edit("elif entry.is_dir(follow_symlinks=False):", "elif entry.is_dir():"),
         Edit("elif entry.is_file(follow_symlinks=False):", "elif entry.is_file():")),
        ("tests/test_room_swap.py",),
    ),
    Mutant(
        "gate_on_point_estimate", "--fail-under gates the interval's low end, not the estimate",
        ("evals/gate.py",),
        (Edit("return self.f1 if self.low is None else self.low", "return self.f1"),),
        ("tests/test_evals_trust.py::test_the_gate_compare_breakdown_and_cost_from_the_cli",),
    ),
    Mutant(
        "generic_hint_for_all", "each failure reason has its own hint",
        ("infra/cli/render/*.py",),
        (Edit("return HINTS.get(reason) or (", "return None or ("),),
        ("tests/test_analyst_show.py::"
         "test_a_name_two_files_share_is_refused_naming_both_and_a_failure_says_why",),
    ),
    Mutant(
        "page_paid_twice", "a stored page is never read (paid for) again",
        ("extract/handlers/*.py",),
        (Edit("metadata = stored.get(number)", "metadata = None"),),
        ("tests/test_handlers.py::test_a_redelivered_unit_skips_stored_pages_and_keeps_event_ids",),
    ),
    Mutant(
        "labels_unbound", "a label binds to the version labelled: an older one's label is stale",
        ("evals/scoring.py", "evals/labels.py"),
        (Edit("if label.sha256 and now and label.sha256 != now:", "if False:"),),
        ("tests/test_evals_label_binding.py::"
         "test_reingest_while_labelling_leaves_the_label_stale_and_f1_unchanged",),
    ),
)
