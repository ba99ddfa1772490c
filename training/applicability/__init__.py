"""The NDA classifier's training: the generator of written documents (``written``) and the
fitting and honest measurement (``classifier``)."""

__all__: list[str] = []
