"""Images (PNG, JPEG, TIFF) as scanned pages: each frame becomes one image-only PDF page.

A photographed or exported scan is read like a PDF page without a text layer, so the image is
turned into exactly that, once, and every reader (OCR, a vision model) and every limit of the
PDF path (the render pixel cap, pages per unit, the stored-page skip) applies unchanged. The
frame's pixels go into the page losslessly (PDFium's bitmap object); the page's size comes from
the image's own resolution when it states a plausible one, else ``assumed_dpi`` (the OCR
resolution: rendered for OCR, such a page gives back its own pixels).

Pillow decodes hostile files here, so this runs in a worker process with a time limit, under a
memory cap, with an allow-list of decoders (PNG, JPEG, TIFF: nothing else is tried) and
Pillow's decompression-bomb limit set from ``max_pixels`` (checked again for every frame, as
Pillow checks only the first). Frames are counted by stepping through them up to
``max_frames``: a TIFF whose directory chain loops or never ends stops there.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from extract.errors import CorruptDocument, EmptyDocument, LimitExceeded
from extract.formats.limits import memory_limit

__all__ = ["DECODERS", "ImageLimits", "ImagePdf", "image_to_pdf"]

DECODERS = ("PNG", "JPEG", "TIFF")
"""The only Pillow decoders an upload may reach."""

PLAUSIBLE_DPI = (50.0, 2400.0)
"""A stated resolution outside this is taken as missing (a 1-dpi or a 72-dpi-by-default
camera value would make a page metres wide or a thumbnail)."""


@dataclass(frozen=True)
class ImageLimits:
    """``max_pixels``: most pixels in one frame (page_too_large); ``max_frames``: most frames in
    one file (too_many_frames); ``assumed_dpi``: the resolution of an image that states none;
    ``max_memory_bytes``: the decoder's address-space budget (memory_limit); ``max_pdf_bytes``:
    the largest PDF made (converted_too_large, as for an Office file's PDF)."""

    max_pixels: int
    max_frames: int
    assumed_dpi: int = 300
    max_memory_bytes: int | None = None
    max_pdf_bytes: int | None = None


@dataclass(frozen=True)
class ImagePdf:
    """The PDF made: its pages (one a frame), bytes, and the milliseconds it took."""

    pages: int
    bytes: int
    duration_ms: float


def image_to_pdf(source: Path, target: Path, limits: ImageLimits) -> ImagePdf:
    """Write ``target``, a PDF with one image-only page per frame of the image at ``source``.

    Raises ``CorruptDocument`` for content Pillow cannot decode, ``LimitExceeded`` for a frame
    over ``max_pixels`` (page_too_large), a file over ``max_frames`` (too_many_frames), a
    decoder over its memory budget (memory_limit) or a PDF over ``max_pdf_bytes``
    (converted_too_large)."""
    from PIL import Image

    started = time.perf_counter()
    Image.MAX_IMAGE_PIXELS = limits.max_pixels  # Pillow refuses twice this; we refuse once it
    with memory_limit(limits.max_memory_bytes, "decoding the image"), \
            warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            pages = _write_pdf(source, target, limits)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            raise LimitExceeded(f"the image is too large to decode: {error}",
                                error_type="page_too_large") from None
        except Image.UnidentifiedImageError:
            raise CorruptDocument("the image cannot be decoded (not a readable PNG, JPEG or "
                                  "TIFF file)") from None
        except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError,
                KeyError, ZeroDivisionError) as error:
            # What Pillow's decoders raise on truncated or malformed data.
            raise CorruptDocument(f"the image cannot be decoded: {error}") from None
    size = target.stat().st_size
    if limits.max_pdf_bytes is not None and size > limits.max_pdf_bytes:
        target.unlink()
        raise LimitExceeded(f"the image's PDF has {size} bytes, over the limit of "
                            f"{limits.max_pdf_bytes}", error_type="converted_too_large")
    return ImagePdf(pages, size, (time.perf_counter() - started) * 1000)


def _write_pdf(source: Path, target: Path, limits: ImageLimits) -> int:
    import pypdfium2 as pdfium
    from PIL import Image

    pdf = pdfium.PdfDocument.new()
    try:
        with Image.open(source, formats=DECODERS) as image:
            frames = 0
            while True:
                if frames == limits.max_frames:
                    if _has_frame(image, frames):
                        raise LimitExceeded(
                            f"the image has more than {limits.max_frames} frames, the limit",
                            error_type="too_many_frames")
                    break
                if frames and not _has_frame(image, frames):
                    break
                _add_page(pdf, image, frames + 1, limits)
                frames += 1
        if frames == 0:
            raise EmptyDocument("the image has no frames", error_type="no_pages")
        pdf.save(str(target))
        return frames
    finally:
        pdf.close()


def _has_frame(image, index: int) -> bool:
    """Move to frame ``index`` (0-based); False past the last one."""
    try:
        image.seek(index)
    except EOFError:
        return False
    return True


def _add_page(pdf, image, number: int, limits: ImageLimits) -> None:
    import pypdfium2 as pdfium

    width, height = image.size
    if width < 1 or height < 1:
        raise CorruptDocument(f"frame {number} of the image has no pixels ({width} x {height})")
    if width * height > limits.max_pixels:
        raise LimitExceeded(f"frame {number} of the image has {width} x {height} pixels, over "
                            f"the limit of {limits.max_pixels}", error_type="page_too_large")
    dpi_x, dpi_y = _resolution(image, limits.assumed_dpi)
    frame = _page_pixels(image)
    width_pt, height_pt = frame.width * 72 / dpi_x, frame.height * 72 / dpi_y
    page = pdf.new_page(width_pt, height_pt)
    picture = pdfium.PdfImage.new(pdf)
    bitmap = None
    try:
        if _jpeg_as_is(image, frame):
            # Decoded once above (so known whole); its own bytes go in: no re-encoding.
            picture.load_jpeg(str(image.filename), inline=False)
        else:
            bitmap = pdfium.PdfBitmap.from_pil(frame)
            picture.set_bitmap(bitmap)
        picture.set_matrix(pdfium.PdfMatrix().scale(width_pt, height_pt))
        page.insert_obj(picture)
        page.gen_content()
    finally:
        if bitmap is not None:
            bitmap.close()
        page.close()


def _jpeg_as_is(image, frame) -> bool:
    """A grey or RGB JPEG stored upright: its bytes make the page as they are."""
    return (image.format == "JPEG" and image.mode in ("L", "RGB") and frame.size == image.size
            and image.getexif().get(_ORIENTATION, 1) == 1)


_ORIENTATION = 0x0112  # the EXIF tag


def _resolution(image, assumed: int) -> tuple[float, float]:
    low, high = PLAUSIBLE_DPI
    stated = image.info.get("dpi")
    try:
        x, y = (float(stated[0]), float(stated[1])) if stated else (0.0, 0.0)
    except (TypeError, ValueError, IndexError):
        x = y = 0.0
    if low <= x <= high and low <= y <= high:
        return x, y
    return float(assumed), float(assumed)


def _page_pixels(image):
    """The frame decoded, upright (a photo's EXIF orientation applied), as grey or RGB on
    white: what PDFium's bitmap takes and what a scanned page is."""
    from PIL import Image, ImageOps

    frame = image.copy()  # decodes this frame (errors surface here)
    if image.format == "JPEG":
        frame = ImageOps.exif_transpose(frame)
    if frame.mode in ("1", "L"):
        return frame.convert("L")
    if frame.mode.startswith(("I", "F")):  # 16-bit or float grey: scaled down to 8 bits
        low, high = frame.getextrema()
        span = (high - low) or 1
        return frame.point(lambda value: (value - low) * 255 / span).convert("L")
    if "A" in frame.mode or frame.mode == "P" and "transparency" in frame.info:
        rgba = frame.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return frame.convert("RGB")
