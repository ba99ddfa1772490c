"""Every message fits the terminal: a narrow terminal gets the run's summary and an error wrapped
at words, never a word cut in two (``then ru`` / ``n again``)."""

from __future__ import annotations

from pathlib import Path

from tests.support.terminal import doclake_command, run_in_terminal

HINT = "the file is damaged or truncated; re-export or re-download it, then run it again"


def _flowed(text: str, columns: int = 40) -> str:
    """The words as the terminal shows them, every line break and run of spaces read as one
    space: a line longer than the terminal is shown cut every ``columns`` characters (what the
    terminal does with it), so a message wrapped at words reads as written, one the terminal
    had to cut does not."""
    shown = [line[i:i + columns] for line in text.split("\n")
             for i in range(0, max(len(line), 1), columns)]
    return " ".join(" ".join(shown).replace("│", " ").split())


def test_a_narrow_terminal_wraps_the_summary_and_an_error_at_words(tmp_path: Path):
    room = tmp_path / "room"
    room.mkdir()
    (room / "note.txt").write_text("A note.\n")
    (room / "cut.docx").write_bytes(b"PK\x03\x04 this zip is cut short")
    home = tmp_path / "home"
    run = run_in_terminal([doclake_command(), "run", str(room), "--fields", "none", "--home",
                           str(home)], columns=40, env={"DOCLAKE_HOME": ""})
    assert run.returncode == 0, run.text
    assert HINT in _flowed(run.text), run.text
    refused = run_in_terminal([doclake_command(), "status", "--home", str(tmp_path / "nowhere")],
                              columns=40)
    assert refused.returncode == 2
    flowed = _flowed(refused.text)
    assert flowed.startswith("error: no doclake home at /")  # a path longer than a line folds
    assert "`doclake run PATH --home DIR` creates one" in flowed
