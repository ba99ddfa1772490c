"""Documents for the load benchmarks, and how long the simulated provider holds each one.

A burst is specified as "each document takes about S seconds", but the simulated provider's
latency is per page call (lognormal, median 2.9 s, p90 7.7 s, times a scale), and a unit's pages
are read ``pages_in_flight`` at a time. So a document of ``p`` pages in one unit is held as long
as its slowest page: E[max of p lognormal draws] x scale; a longer document is several units,
each held by a worker of its own, and its worker time is the sum over units. ``latency_scale``
inverts that: the scale at which a document's expected worker time is S.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

from extract.models.simulated import LATENCY_MU, LATENCY_SIGMA

__all__ = ["SAMPLES", "expected_hold_s", "latency_scale", "make_documents"]

SAMPLES = 100_000  # Monte Carlo draws; seeded, so the same S always gives the same scale


def expected_hold_s(pages: int, *, pages_per_unit: int = 5, pages_in_flight: int = 5,
                    seed: int = 14, sigma: float = LATENCY_SIGMA) -> float:
    """Expected worker seconds of a document of ``pages`` pages at latency scale 1.

    Per unit: pages go out in waves of ``pages_in_flight``; a wave lasts as long as its slowest
    call. Per document: the sum over its units (each is a worker's time)."""
    rng = random.Random(seed)
    units = [pages_per_unit] * (pages // pages_per_unit)
    if pages % pages_per_unit:
        units.append(pages % pages_per_unit)
    total = 0.0
    samples = max(2_000, SAMPLES // len(units))
    for _ in range(samples):
        for unit in units:
            left = unit
            while left > 0:
                wave = min(left, pages_in_flight)
                total += max(rng.lognormvariate(LATENCY_MU, sigma) for _ in range(wave))
                left -= wave
    return total / samples


def latency_scale(service_s: float, pages: int, **unit_shape: float) -> float:
    """The ``simulated_latency_scale`` at which a ``pages``-page document holds ~``service_s``."""
    return service_s / expected_hold_s(pages, **unit_shape)


def make_documents(folder: Path, run_id: str, count: int, pages: int) -> list[Path]:
    """``count`` PDFs of ``pages`` blank pages named ``<run_id>-NNNN.pdf``. Each carries its own
    name in a trailing comment, so their bytes (and sha256) differ and none is deduplicated."""
    import pypdfium2 as pdfium

    folder.mkdir(parents=True, exist_ok=True)
    document = pdfium.PdfDocument.new()
    for _ in range(pages):
        document.new_page(612, 792)
    buffer = io.BytesIO()
    document.save(buffer)
    document.close()
    body = buffer.getvalue()
    paths = []
    for n in range(1, count + 1):
        path = folder / f"{run_id}-{n:04d}.pdf"
        path.write_bytes(body + f"%{path.name}\n".encode())
        paths.append(path)
    return paths
