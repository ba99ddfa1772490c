"""The input tokens of a request, estimated from the request itself, for calls that got no answer.

A call that timed out after its request was sent, or was cancelled in flight, has no usage
metadata, yet the provider may have read (and billed) its input. The ledger records such a call
with this estimate, flagged ``tokens_estimated``, rather than at $0: it is never behind what may
have been paid. Output tokens are unknown and left at 0.

The rules are Gemini's documented ones (ai.google.dev/gemini-api/docs/tokens): about 4 characters
a token for text; an image of at most 384 pixels on both sides is 258 tokens, a larger one is
cut into 768 x 768 tiles of 258 tokens each. The simulated provider bills by the same rules.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "estimate_input_tokens", "image_tokens"]

CHARS_PER_TOKEN = 4
IMAGE_TILE_TOKENS = 258
SMALL_IMAGE_SIDE = 384
TILE_SIDE = 768


def image_tokens(width: int, height: int) -> int:
    if width <= SMALL_IMAGE_SIDE and height <= SMALL_IMAGE_SIDE:
        return IMAGE_TILE_TOKENS
    return IMAGE_TILE_TOKENS * math.ceil(width / TILE_SIDE) * math.ceil(height / TILE_SIDE)


def _image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the image's header (Pillow decodes no pixels for ``size``)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (UnidentifiedImageError, OSError, ValueError):
        return None


def _schema_text(schema: Any) -> str:
    if schema is None:
        return ""
    if hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    try:
        return json.dumps(schema)
    except (TypeError, ValueError):
        return str(schema)


def estimate_input_tokens(prompt: Any) -> int:
    """Tokens ``prompt`` (an ``extract.models.base.Prompt``) costs as input: its text, system
    instruction and response schema by characters, its images by tiles (an image whose size
    cannot be read counts as one tile)."""
    chars = len(prompt.text) + len(prompt.system or "") + len(_schema_text(prompt.response_schema))
    tokens = math.ceil(chars / CHARS_PER_TOKEN)
    for image in prompt.images:
        size = _image_size(image.data)
        tokens += image_tokens(*size) if size else IMAGE_TILE_TOKENS
    return max(1, tokens)
