"""CSV files to the same text as a spreadsheet sheet: encoding and delimiter found, not assumed.

The encoding comes from a byte-order mark, else strict UTF-8, else charset-normalizer; the
delimiter from ``csv.Sniffer`` over the first rows, limited to the four in real use (``,``,
``;``, tab, ``|``) so that a letter in a header is never taken for one. Values are text and stay
as written (``007`` keeps its zeros); ragged rows stay ragged.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from extract.errors import CorruptDocument
from extract.formats.limits import memory_limit
from extract.formats.spreadsheet import SheetLimits, SheetText, render_rows, sheet_header

__all__ = ["DELIMITERS", "SAMPLE_CHARS", "decode_text", "detect_delimiter", "read_csv"]

DELIMITERS = ",;\t|"
SAMPLE_CHARS = 64 * 1024


def decode_text(data: bytes, hint: str | None = None) -> tuple[str, str]:
    """The text and the encoding it was read with."""
    for bom, encoding in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"),
                          (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
                          (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:1024 * 1024]).best()
    encoding = best.encoding if best is not None else (hint or "cp1252")
    return data.decode(encoding, errors="replace"), encoding


def detect_delimiter(sample: str) -> str:
    """The delimiter of a CSV sample; a comma when nothing else fits."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        counts = {d: sample.count(d) for d in DELIMITERS}
        best = max(counts, key=counts.get)  # type: ignore[arg-type]
        return best if counts[best] else ","


def read_csv(path: Path, name: str, limits: SheetLimits, encoding_hint: str | None = None
             ) -> SheetText:
    """The file as one sheet named ``name``: a header line, then one tab-separated line a row."""
    with memory_limit(limits.max_memory_bytes, "reading the CSV file"):
        data = path.read_bytes()
        text, _ = decode_text(data, encoding_hint)
        del data
        if "\x00" in text[:SAMPLE_CHARS]:
            raise CorruptDocument("the CSV file holds NUL characters (binary content)")
        sample = text[:SAMPLE_CHARS]
        if len(text) > SAMPLE_CHARS:
            sample = sample[:sample.rfind("\n") + 1] or sample  # whole lines only
        delimiter = detect_delimiter(sample)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        try:
            result = render_rows(sheet_header(name), _capped(reader, limits), limits)
        except csv.Error as error:
            raise CorruptDocument(f"the CSV file cannot be parsed: {error}") from None
        return SheetText(1, result.text, result.rows, result.cells, result.duration_ms)


def _capped(reader, limits: SheetLimits):
    from extract.errors import LimitExceeded

    cells = 0
    for row in reader:
        cells += len(row)
        if cells > limits.max_cells:
            raise LimitExceeded(f"the CSV file has more than {limits.max_cells} cells",
                                error_type="too_many_cells")
        yield row
