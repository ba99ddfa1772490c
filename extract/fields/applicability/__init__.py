"""Whether a schema applies to a document: a learned classifier per kind of document (the NDA
kind ships) and its features. Its training and the documents written for it live in the
training tooling (``training.applicability``), outside the runtime."""

__all__ = []
