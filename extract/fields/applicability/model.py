"""A fitted kind classifier as plain JSON: a logistic over ``features``, scored without
scikit-learn (a dot product over the features the document has), so the run time loads it in
milliseconds. ``training`` writes it; ``extract.fields.kinds`` scores with it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from extract.fields.applicability.features import BODY_LENGTH, HEAD_VALUE, counted

__all__ = ["KindModel", "NDA_MODEL_PATH", "nda_model"]

NDA_MODEL_PATH = Path(__file__).with_name("nda_kind.json")


@dataclass
class KindModel:
    version: str
    intercept: float
    weights: dict[str, float]
    threshold: float = 0.5
    details: dict = field(default_factory=dict)
    """How it was fitted and measured (written by ``training``, read by people)."""

    def __post_init__(self) -> None:
        self._head = {k[2:]: w for k, w in self.weights.items() if k.startswith("h:")}
        self._body = {k[2:]: w for k, w in self.weights.items() if k.startswith("w:")}

    def score(self, text: str) -> float:
        """The logistic of the weights' dot product with ``features(text)``, summed over the
        weighted features the document has only (a document names thousands of word pairs,
        the model weighs 2,500 features: 2.6 ms an NDA when every feature was named)."""
        document = counted(text)
        head = sum(self._head.get(word, 0.0) for word in document.head_words) * HEAD_VALUE
        counts, body = document.counts, self._body
        weighted = sum(body[k] * (1.0 + math.log(counts[k])) for k in body.keys() & counts.keys())
        z = (self.intercept + head + weighted * BODY_LENGTH / document.body_norm()
             + self.weights.get("title", 0.0) * document.title
             + self.weights.get("other_title", 0.0) * document.other_title)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "intercept": self.intercept,
                           "threshold": self.threshold, "details": self.details,
                           "weights": dict(sorted(self.weights.items()))}, indent=0)

    @classmethod
    def load(cls, path: Path) -> KindModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["version"], data["intercept"], data["weights"], data["threshold"],
                   data.get("details", {}))


@cache
def nda_model() -> KindModel:
    """The shipped NDA classifier (``doclake fields train --applicability`` rebuilds it)."""
    return KindModel.load(NDA_MODEL_PATH)
