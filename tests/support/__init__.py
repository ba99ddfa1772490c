"""Test support: PDF and lake generators, fakes (Gemini, fields strategies), moto helpers.

Imported as ``support.<module>``; ``tests/`` is on the path through pytest's ``pythonpath``."""
