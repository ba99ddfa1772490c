"""Formats: what a file really is (``sniff``) and how each kind is opened (one module a format).

``sniff`` judges by bytes, never by the name; ``pdf`` holds the PDFium primitives the splitter and
the readers run in worker processes. Office conversion and spreadsheets join here as modules.
"""

__all__ = []
