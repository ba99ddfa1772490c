"""Read back a Glue view's ``ViewOriginalText``: the tests' own decoder, held apart from
``lake.athena.presto_view_text`` (which encodes it) so that the round trip checks the encoder."""

from __future__ import annotations

import base64
import json
from typing import Any

__all__ = ["decode_presto_view"]

# Athena's own framing of a view's text (as Athena's CREATE VIEW stores it in Glue).
PREFIX, SUFFIX = "/* Presto View: ", " */"


def decode_presto_view(text: str) -> dict[str, Any]:
    """The JSON inside a ``ViewOriginalText``."""
    if not (text.startswith(PREFIX) and text.endswith(SUFFIX)):
        raise ValueError("not a Presto view text")
    return json.loads(base64.b64decode(text[len(PREFIX):-len(SUFFIX)]))
