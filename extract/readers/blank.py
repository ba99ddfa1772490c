"""Blank pages are not sent to OCR: a look at the page rendered small decides, in milliseconds.

A scanned page with nothing on it (the back of a sheet, a separator, a page blank but for a
header rule) costs tesseract 0.9 to 2.5 s here and gives no text. Rendered in grey at
``LOOK_DPI`` (a letter page is about 330 x 440 pixels), the page's ink is counted as horizontal
runs: text is hundreds of short runs (every letter crosses a row two or three times), a rule or a
smudge a handful. A page with fewer than ``BLANK_RUNS`` is blank.

Measured on every image page the text layer left empty in the Kleister NDAs and on the shared
corpus's scans (README, Figures): the four pages OCR found no word on have 0 to 2 runs; the
sparsest page with text (two short lines in a thin font on a 9000 x 9000 scan) has 1,536. The
threshold sits far below the text: skipping a page with text loses it, reading a blank one only
costs a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["BLANK_READER", "LOOK_DPI", "INK_DELTA", "MARGIN", "BLANK_RUNS", "ink_runs", "ink_runs_of_pages",
           "is_blank"]

BLANK_READER = "blank"  # the reader a blank page is recorded as read by
LOOK_DPI = 40
INK_DELTA = 60  # grey levels below the paper's that count as ink
MARGIN = 0.05  # share of each side cut off before looking
BLANK_RUNS = 25  # fewer horizontal runs of ink than this: a blank page


def ink_runs(image) -> int:
    """Horizontal runs of ink in ``image`` (a greyscale PIL image), margins cut off.

    Text is many short runs (each letter crosses a row two or three times); a rule, a frame or a
    scanner's smudge is a few long ones. The paper is the page's brightest common level (the
    90th percentile of brightness), so a grey scan's background is paper too.
    """
    width, height = image.size
    left, top = int(width * MARGIN), int(height * MARGIN)
    inner = image.crop((left, top, max(left + 1, width - left), max(top + 1, height - top)))
    histogram = inner.histogram()[:256]
    total = sum(histogram)
    seen, paper = 0, 255
    for level in range(256):
        seen += histogram[level]
        if seen >= 0.9 * total:
            paper = level
            break
    cut = max(0, paper - INK_DELTA)
    mask = inner.tobytes().translate(bytes(49 if level < cut else 48 for level in range(256)))
    row = inner.size[0]
    # Each row starts on paper ("0"), so a run touching the left edge is counted too.
    rows = b"0".join(mask[start:start + row] for start in range(0, len(mask), row))
    return (b"0" + rows).count(b"01")


def ink_runs_of_pages(path: Path, page_numbers: Sequence[int], password: str | None
                      ) -> dict[int, int]:
    """Each page's runs of ink, rendered in grey at ``LOOK_DPI``; runs in a worker process."""
    from extract.formats.pdf import open_pages, page_errors

    runs = {}
    for number, page in open_pages(path, page_numbers, password):
        with page_errors(number):
            bitmap = page.render(scale=LOOK_DPI / 72, grayscale=True)
        runs[number] = ink_runs(bitmap.to_pil().convert("L"))
    return runs


def is_blank(runs: int) -> bool:
    return runs < BLANK_RUNS
