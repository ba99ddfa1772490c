"""The LLM strategies (single-pass, agentic), their prompts and what they share."""

__all__ = []
