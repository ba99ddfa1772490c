"""How well the NDA scorer (``extract.fields.kinds``) separates NDAs from other files.

    python -m infra.bench.nda_kind_bench HOME [--split DIR]

Recall on the Kleister NDA train split (page texts read as the pipeline reads them), and the
files of a doclake home that are not NDAs (say a ``doclake run`` of the shared corpus): how many
it takes for NDAs, and the closest calls on each side. Documents whose name is a Kleister file
name (32 hex digits) are counted as NDAs, not as other files.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from extract.fields.document import JoinedText
from extract.fields.kinds import THRESHOLD, nda_score
from extract.fields.rules.kleister import load_split

__all__ = ["main"]

_KLEISTER_NAME = re.compile(r"[0-9a-f]{32}\.pdf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--split", type=Path,
                        default=Path("/work/shared/data/kleister-nda/train"))
    args = parser.parse_args()
    documents = load_split(args.split, Path(tempfile.gettempdir()) / "doclake-kleister-pages")
    ndas = sorted(nda_score(JoinedText.of(d.pages).text) for d in documents)
    listed = subprocess.run([sys.executable, "-m", "infra.cli.main", "sql",
                             "SELECT document_id, source_name FROM documents", "--home",
                             str(args.home), "--format", "json"],
                            capture_output=True, text=True, check=True).stdout
    names = {row["document_id"]: row["source_name"] for row in json.loads(listed)}
    others = []
    for folder in sorted((args.home / "objects" / "pages").iterdir()):
        name = names.get(folder.name, folder.name)
        if _KLEISTER_NAME.fullmatch(name):
            continue
        texts = [page.read_text() for job in folder.iterdir() for page in sorted(job.iterdir())]
        others.append((nda_score("\n\n".join(texts)), name))
    taken = sum(score >= THRESHOLD for score in ndas)
    wrong = sum(score >= THRESHOLD for score, _ in others)
    print(f"NDAs taken: {taken} of {len(ndas)} (recall {taken / len(ndas):.3f}); "
          f"lowest scores {[round(s, 3) for s in ndas[:3]]}")
    print(f"other files taken for NDAs: {wrong} of {len(others)}; "
          f"precision {taken / max(taken + wrong, 1):.3f}")
    print("highest other files:", [(round(s, 5), n) for s, n in sorted(others, reverse=True)[:3]])


if __name__ == "__main__":
    main()
