"""The environment a doclake process sets for native libraries before they load."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from infra.process_env import NATIVE_THREADS, settle_native_threads

THREADS_AFTER_NUMPY = "import numpy, os; print(len(os.listdir('/proc/self/task')))"


def _threads_after_numpy(env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-c", THREADS_AFTER_NUMPY], env=env, check=True,
                         capture_output=True, text=True)
    return int(out.stdout)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_numpy_starts_no_threads_in_a_doclake_process(monkeypatch):
    """OpenBLAS starts (and spins) a thread a core at numpy's import; with the setting, none."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    settle_native_threads()
    assert _threads_after_numpy(dict(os.environ)) == 1
    if (os.cpu_count() or 1) > 1:  # the setting is what makes the difference
        unset = {k: v for k, v in os.environ.items() if k not in NATIVE_THREADS}
        assert _threads_after_numpy(unset) > 1


def test_a_value_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    settle_native_threads()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_every_command_settles_them_before_it_runs(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from infra.cli.main import app

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    result = CliRunner().invoke(app, ["status", "--home", str(tmp_path / "none")])
    assert result.exit_code in (0, 2), result.output  # a missing home is refused: still settled
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
