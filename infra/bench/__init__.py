"""Load tests and benchmarks: what `doclake bench ...` runs, and the `python -m infra.bench.<name>` scripts
(lake, formats, models, Iceberg): each prints figures, none is a timed test."""

__all__ = []
