"""Images are documents (issue 44, item 3): PNG, JPEG and TIFF files, told by their bytes, are
read like scanned pages, one page a frame, and found by `doclake search`; a bad image is a
recorded failure with its reason.

The pictures are drawn with Pillow (``support.imagegen``) at a size tesseract reads.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image
from support.imagegen import line_of_text
from typer.testing import CliRunner

from extract.errors import CorruptDocument, LimitExceeded
from extract.formats.image import ImageLimits, image_to_pdf
from extract.formats.sniff import Format, sniff_file
from extract.readers.ocr import tesseract_status
from infra.cli.main import app

runner = CliRunner()
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1"}
needs_tesseract = pytest.mark.skipif(tesseract_status() is not None,
                                     reason=f"OCR unavailable: {tesseract_status()}")


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env={**FAST, **(env or {})}, catch_exceptions=False)


def sql(home: str, query: str) -> list[dict]:
    result = invoke("sql", query, "--home", home, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_images_are_told_by_their_bytes_not_their_names(tmp_path):
    line_of_text("x").save(tmp_path / "scan.pdf", format="PNG")
    line_of_text("x").convert("RGB").save(tmp_path / "photo.txt", format="JPEG")
    line_of_text("x").save(tmp_path / "fax", format="TIFF")
    (tmp_path / "fake.png").write_text("not a picture at all\n")
    assert [sniff_file(tmp_path / n).format for n in ("scan.pdf", "photo.txt", "fax",
                                                       "fake.png")] == [
        Format.PNG, Format.JPEG, Format.TIFF, Format.TEXT]


@needs_tesseract
def test_png_jpeg_and_tiff_files_are_read_by_ocr_and_found_by_search(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    line_of_text("Quarterly zebrafish invoice settled").save(room / "scan.png")
    line_of_text("Signed walrus indemnity letter").convert("RGB").save(room / "photo.jpg",
                                                                        quality=90)
    frames = [line_of_text(f"Facsimile frame {word}") for word in ("alpha", "bravo", "kiwi")]
    frames[0].save(room / "fax.tif", save_all=True, append_images=frames[1:],
                   compression="tiff_deflate")
    (room / "cut.png").write_bytes((room / "scan.png").read_bytes()[:300])  # truncated

    home = str(tmp_path / "home")
    result = invoke("run", str(room), "--home", home, "--fields", "none")
    assert result.exit_code == 0, result.output
    jobs = sql(home, "SELECT d.source_name, d.detected_format, j.status, j.pages, "
               "j.failure_reason FROM jobs j JOIN documents d USING (document_id) ORDER BY 1")
    assert [tuple(j.values()) for j in jobs] == [
        ("cut.png", "png", "failed", None, "corrupt"),
        ("fax.tif", "tiff", "succeeded", 3, None),
        ("photo.jpg", "jpeg", "succeeded", 1, None),
        ("scan.png", "png", "succeeded", 1, None)]
    pages = sql(home, "SELECT d.source_name, p.page_number, p.reader FROM pages p "
                "JOIN documents d USING (document_id) ORDER BY 1, 2")
    assert [tuple(p.values()) for p in pages] == [
        ("fax.tif", 1, "ocr"), ("fax.tif", 2, "ocr"), ("fax.tif", 3, "ocr"),
        ("photo.jpg", 1, "ocr"), ("scan.png", 1, "ocr")]
    failure = sql(home, "SELECT message FROM failures WHERE failure_reason = 'corrupt'")
    assert "cannot be decoded" in failure[0]["message"]

    def found(words: str) -> list[tuple[str, int]]:
        hits = json.loads(invoke("search", words, "--home", home, "--format", "json").output)
        return [(h["document"], h["page"]) for h in hits]

    assert found("zebrafish") == [("scan.png", 1)]
    assert found("walrus indemnity") == [("photo.jpg", 1)]
    assert found("kiwi") == [("fax.tif", 3)]


def test_a_vision_reader_reads_an_image_when_chosen(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    line_of_text("anything").save(room / "scan.png")
    home = str(tmp_path / "home")
    result = invoke("run", str(room), "--home", home, "--fields", "none",
                    "--reader", "simulated")
    assert result.exit_code == 0, result.output
    pages = sql(home, "SELECT p.reader, j.status FROM pages p JOIN jobs j USING (job_id)")
    assert [(p["reader"].split(":")[0], p["status"]) for p in pages] == [
        ("simulated", "succeeded")]  # the provider, then its model


def test_image_limits_are_failures_with_their_reasons(tmp_path):
    home = str(tmp_path / "home")
    room = tmp_path / "room"
    room.mkdir()
    # 4,000 x 4,000 = 16 million pixels of one colour: a few KB on disk.
    Image.new("1", (4000, 4000), 1).save(room / "bomb.png")
    frames = [Image.new("L", (50, 50), 255) for _ in range(4)]
    frames[0].save(room / "long.tif", save_all=True, append_images=frames[1:])
    result = invoke("run", str(room), "--home", home, "--fields", "none",
                    env={"DOCLAKE_MAX_IMAGE_PIXELS": "10000000", "DOCLAKE_MAX_IMAGE_FRAMES": "3"})
    assert result.exit_code == 0, result.output
    jobs = sql(home, "SELECT d.source_name, j.status, j.failure_reason FROM jobs j "
               "JOIN documents d USING (document_id) ORDER BY 1")
    assert [tuple(j.values()) for j in jobs] == [("bomb.png", "failed", "page_too_large"),
                                                 ("long.tif", "failed", "too_many_frames")]
    assert "DOCLAKE_MAX_IMAGE_FRAMES" in result.output  # the hint names the setting


def test_every_frame_is_checked_against_the_pixel_limit(tmp_path):
    """Pillow checks only the first frame when it opens a file; a later, larger one is refused
    before it is decoded."""
    small, large = Image.new("L", (100, 100), 255), Image.new("L", (3000, 3000), 255)
    small.save(tmp_path / "two.tif", save_all=True, append_images=[large])
    limits = ImageLimits(max_pixels=1_000_000, max_frames=10)
    with pytest.raises(LimitExceeded) as refused:
        image_to_pdf(tmp_path / "two.tif", tmp_path / "out.pdf", limits)
    assert refused.value.error_type == "page_too_large" and "frame 2" in str(refused.value)

    made = image_to_pdf(tmp_path / "two.tif", tmp_path / "out.pdf",
                        ImageLimits(max_pixels=9_000_000, max_frames=10))
    assert made.pages == 2


def test_an_image_whose_pdf_is_over_the_converted_limit_is_refused(tmp_path):
    Image.effect_noise((400, 400), 80).save(tmp_path / "noise.png")  # incompressible pixels
    with pytest.raises(LimitExceeded) as refused:
        image_to_pdf(tmp_path / "noise.png", tmp_path / "out.pdf",
                     ImageLimits(10**8, 10, max_pdf_bytes=50_000))
    assert refused.value.error_type == "converted_too_large"
    assert not (tmp_path / "out.pdf").exists()


def test_garbage_behind_an_image_signature_is_corrupt_not_a_crash(tmp_path):
    (tmp_path / "x.tif").write_bytes(b"II*\x00" + b"\xff" * 64)
    (tmp_path / "y.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\x00" * 64)
    for name in ("x.tif", "y.jpg"):
        with pytest.raises(CorruptDocument):
            image_to_pdf(tmp_path / name, tmp_path / "out.pdf", ImageLimits(10**8, 10))


def test_a_page_has_the_images_own_pixels_at_its_stated_resolution(tmp_path):
    import pypdfium2 as pdfium

    line_of_text("x", size=(600, 300)).save(tmp_path / "a.png", dpi=(150, 150))
    line_of_text("x", size=(600, 300)).save(tmp_path / "b.png")  # no resolution stated
    sizes = []
    for name in ("a.png", "b.png"):
        image_to_pdf(tmp_path / name, tmp_path / "out.pdf", ImageLimits(10**8, 10,
                                                                        assumed_dpi=300))
        document = pdfium.PdfDocument(str(tmp_path / "out.pdf"))
        sizes.append(tuple(round(v) for v in document[0].get_size()))
        document.close()
    assert sizes == [(288, 144), (144, 72)]  # 600 px at 150 dpi = 4 in = 288 pt


async def test_a_split_redelivered_after_the_image_pdf_was_stored_does_not_decode_it_again(
        tmp_path):
    """The first delivery died after storing the image's PDF, before planning: the next one
    plans from the stored PDF, and its split event carries the first conversion's time."""
    from support.helpers import Harness

    from extract.handlers.image_pdf import stored_image_pdf
    from extract.handling import Outcome, handle_message
    from extract.messages import READ_QUEUE, SPLIT_QUEUE
    from lake.layout import converted_key

    harness = Harness(tmp_path)
    frames = [line_of_text(word) for word in ("one", "two")]
    frames[0].save(tmp_path / "fax.tif", save_all=True, append_images=frames[1:])
    ingested = harness.planner.ingest(tmp_path / "fax.tif")
    job = harness.store.get_job(ingested.job_id)
    _, first = await stored_image_pdf(harness.ctx, job, tmp_path / "fax.tif")  # then it died
    harness.cpu.calls.clear()

    (split,) = harness.receive(SPLIT_QUEUE)
    assert await handle_message(harness.ctx, split) is Outcome.ACK
    assert "image_to_pdf" not in [name for name, _ in harness.cpu.calls]
    job = harness.store.get_job(ingested.job_id)
    assert (job.pages, job.detected_format) == (2, "tiff")
    assert len(harness.receive(READ_QUEUE)) == 1  # two pages, one unit
    (event,) = harness.sink.of_type("job_split")
    assert (event.converter, event.conversion_ms) == ("pillow", float(first["conversion_ms"]))
    assert harness.objects.head(converted_key(job.document_id, job.job_id)) == first
