"""A file with more than one name is not read by default (issue 45).

A hard link in the room to a file outside it: one of its names is inside, no link is followed,
and the outside file's bytes were ingested. Now a file whose ``st_nlink`` is above one is
skipped with its own reason, unless allowed and every name of it is inside the folders walked.
"""

from __future__ import annotations

import os

from ingest.walk import SKIP_HARD_LINK, walk_sources


def test_a_hard_link_to_a_file_outside_the_room_is_skipped_with_its_reason(tmp_path):
    room, outside = tmp_path / "room", tmp_path / "outside"
    room.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    os.link(outside / "secret.txt", room / "innocent.txt")
    (room / "memo.txt").write_text("inside")
    walk = walk_sources([room])
    assert [source for _, source in walk.files] == ["memo.txt"]
    assert walk.skipped == [(room / "innocent.txt", SKIP_HARD_LINK)]
    # Allowed, it is still skipped: one of its names is outside the room.
    allowed = walk_sources([room], allow_hard_links=True)
    assert [source for _, source in allowed.files] == ["memo.txt"]


def test_a_hard_link_whose_every_name_is_inside_is_read_only_when_allowed(tmp_path):
    room = tmp_path / "room"
    (room / "a").mkdir(parents=True)
    (room / "a" / "one.txt").write_text("both names inside")
    os.link(room / "a" / "one.txt", room / "two.txt")
    assert walk_sources([room]).files == []
    allowed = walk_sources([room], allow_hard_links=True)
    assert sorted(source for _, source in allowed.files) == ["a/one.txt", "two.txt"]


def test_doclake_run_skips_a_hard_link_and_says_why_unless_the_setting_allows_it(tmp_path):
    from typer.testing import CliRunner

    from infra.cli.main import app

    room = tmp_path / "room"
    room.mkdir()
    (room / "one.txt").write_text("a memo with two names, both in the room")
    os.link(room / "one.txt", room / "two.txt")
    env = {"DOCLAKE_CPU_WORKERS": "1", "DOCLAKE_POLL_INTERVAL_S": "0.2"}
    refused = CliRunner().invoke(app, ["run", str(room), "--home", str(tmp_path / "h1")],
                                 env=env, catch_exceptions=False)
    assert "hard link" in refused.output
    assert "skipped 2" in refused.output
    allowed = CliRunner().invoke(app, ["run", str(room), "--home", str(tmp_path / "h2")],
                                 env={**env, "DOCLAKE_ALLOW_HARD_LINKS": "1"},
                                 catch_exceptions=False)
    assert allowed.exit_code == 0, allowed.output
    assert "hard link" not in allowed.output
