"""evals."""
