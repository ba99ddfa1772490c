"""The fork server runs the command's main module once; its workers do not run it again.

multiprocessing runs the parent's main module in every child it starts (as ``__mp_main__``);
for ``doclake`` that is the console script, so each worker imported the CLI's modules at its
start (16 to 24 ms of CPU, five workers at a run's start), and a worker still doing so when its
pool stopped read its channel after the channel was closed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import os
    import sys

    if __name__ == "__mp_main__":  # the main module, run again in a child process
        with open(os.environ["MAIN_RAN_IN"], "a") as marker:
            marker.write(f"{os.getpid()}\\n")

    if __name__ == "__main__":
        sys.path.insert(0, sys.argv[1])  # the tests' folder: ``support`` for the workers too
        from infra.local.cpu import ProcessPoolRunner
        from support import cpu_tasks

        lane = ProcessPoolRunner(3)
        try:
            assert sorted(lane.call(cpu_tasks.square, n) for n in range(6)) == [
                0, 1, 4, 9, 16, 25]
        finally:
            lane.close()
""")


def test_the_main_module_runs_once_in_the_fork_server_not_in_each_worker(tmp_path):
    script = tmp_path / "main_script.py"
    script.write_text(SCRIPT)
    marker = tmp_path / "ran_main.txt"
    tests = Path(__file__).resolve().parent
    subprocess.run([sys.executable, str(script), str(tests)], check=True, timeout=120,
                   env={**os.environ, "MAIN_RAN_IN": str(marker)})
    runs = marker.read_text().split()
    assert len(runs) == 1, f"the main module ran in {len(runs)} processes"
