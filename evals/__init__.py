"""evals: field scoring, sampling, fine-tuning export and the lake's data-quality suites.

Imports only ``lake``.
"""

__all__ = []
