"""Pictures of a line of text, for the image-format tests: drawn with Pillow in DejaVu Sans when
installed (else Pillow's own FreeType font) at 40 pixels, a size tesseract reads reliably."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

__all__ = ["line_of_text"]

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def line_of_text(text: str, size: tuple[int, int] = (1400, 200)) -> Image.Image:
    """A grey image of ``size`` pixels holding ``text`` in black on white."""
    font = (ImageFont.truetype(str(DEJAVU), 40) if DEJAVU.exists()
            else ImageFont.load_default(size=40))
    image = Image.new("L", size, 255)
    ImageDraw.Draw(image).text((40, 70), text, fill=0, font=font)
    return image
