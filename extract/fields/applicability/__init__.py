"""Whether a schema applies to a document: a learned classifier per kind of document (the NDA
kind ships), its features, its training on the Kleister NDAs and written hard negatives, and
the documents written for it. Run time reads only ``features`` and ``model``."""
