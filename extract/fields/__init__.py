"""Structured fields: schemas, the strategy port and the strategies that fill a schema from a
document's page texts (the offline ``rules`` one first; the LLM ones, the claim and the publisher
follow)."""

__all__ = []
