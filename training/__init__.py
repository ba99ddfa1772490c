"""Training tooling: what fits and measures the shipped models, kept out of the runtime packages.

Nothing here runs in production or in a Lambda image: it needs scikit-learn (the ``train``
extra) and the shared data beside the clone. ``doclake fields ...`` imports it when asked to
train or cross-validate. Layer: above ``extract`` (it fits extract's models), beside ``evals``.
"""

__all__: list[str] = []
