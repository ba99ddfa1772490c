"""The Kleister NDA train split as the pipeline would see it: page texts from each PDF's text
layer (pypdfium2, normalised exactly as the read stage stores them) beside the gold tokens.

Training and cross-validation must score what the extractor meets at run time, not the
benchmark's own OCR texts, so the texts come from ``extract.formats.pdf.read_text_layer``. Reading 254
PDFs takes a few seconds; ``cache`` (a folder outside the repository) keeps one JSON per PDF.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from extract.fields.base import PageText
from extract.formats.pdf import count_pages, read_text_layer

__all__ = ["KleisterDocument", "load_split", "pdf_pages"]


@dataclass(frozen=True)
class KleisterDocument:
    name: str
    pages: tuple[PageText, ...]
    gold: tuple[str, ...]

    @property
    def has_text(self) -> bool:
        """False for a scan with no text layer (OCR comes later)."""
        return any(p.text.strip() for p in self.pages)


def pdf_pages(pdf: Path, cache: Path | None) -> list[str]:
    cached = cache / f"{pdf.stem}.json" if cache else None
    if cached and cached.exists():
        return json.loads(cached.read_text())
    texts = [text for _, text, _ in read_text_layer(pdf, range(1, count_pages(pdf) + 1))]
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(texts))
    return texts


def load_split(folder: Path, cache: Path | None = None) -> list[KleisterDocument]:
    """The split in ``folder`` (holding ``in.tsv.xz``, ``expected.tsv`` and ``documents/``), in
    the benchmark's order."""
    import lzma

    with lzma.open(folder / "in.tsv.xz", "rt", encoding="utf-8") as rows:
        names = [row.split("\t", 1)[0] for row in rows]
    gold = (folder / "expected.tsv").read_text(encoding="utf-8").splitlines()
    if len(gold) != len(names):
        raise ValueError(f"{folder}: {len(names)} documents but {len(gold)} gold lines")
    documents = []
    for name, line in zip(names, gold, strict=True):
        texts = pdf_pages(folder / "documents" / name, cache)
        pages = tuple(PageText(i, t) for i, t in enumerate(texts, start=1))
        documents.append(KleisterDocument(name, pages, tuple(line.split())))
    return documents
