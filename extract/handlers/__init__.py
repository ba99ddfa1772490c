"""Handlers: one module per message type (split, read, index), each a ``handle_*`` coroutine.

``extract.handling`` routes a received message to its handler and sorts its errors once.
"""
