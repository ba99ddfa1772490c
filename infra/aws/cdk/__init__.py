"""The CDK app (an extra: ``pip install -e '.[cdk]'``); never imported by a Lambda."""

__all__ = []
