"""AWS adapters: the only place boto3 is imported.

Each module takes its boto3 client as an argument (constructor or function parameter), so tests
pass a client pointed at moto and production passes a real one; nothing here creates sessions or
reads credentials on import.
"""

__all__ = []
