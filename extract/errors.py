"""What can go wrong while extracting, and whether trying again can help.

::

    ExtractError
    ├── TransientError        retried: the message goes back to its queue
    │   ├── WorkerTimeout     a read or conversion ran past its time limit
    │   ├── StageTimeLimit    a delivery ran past its stage's time limit (a hung handler)
    │   └── UnitBusy          another delivery is reading this unit: back off
    └── TerminalError         not retried: the unit (or job) fails with ``error_type`` as reason
        ├── UnsupportedFormat   the bytes are not a format this build reads
        ├── EmptyDocument       zero bytes, or a PDF with no pages
        ├── EncryptedDocument   needs a password we do not have (or have wrong)
        ├── CorruptDocument     the parser refuses the file
        ├── LimitExceeded       a configured limit (bytes, pages, cells, memory, conversion
        │                       time, pixels, inflated bytes, nesting) was hit; ``error_type``
        │                       names which
        └── ConverterUnavailable  LibreOffice is not installed where an Office file needs it

An error of any other class is treated as transient until the message's last allowed delivery,
when it fails the unit for good: a bug then shows up as a failed job, never as a lost document.
"""

from __future__ import annotations

__all__ = ["ExtractError", "TransientError", "WorkerTimeout", "StageTimeLimit", "UnitBusy", "TerminalError",
           "UnsupportedFormat", "EmptyDocument", "EncryptedDocument", "CorruptDocument", "LimitExceeded",
           "ConverterUnavailable", "TOO_DEEP", "final_at_once", "error_type_of"]


class ExtractError(Exception):
    """Base of every error the pipeline raises on purpose; ``error_type`` is a stable code."""

    error_type = "extract_error"

    def __init__(self, message: str, *, error_type: str | None = None):
        super().__init__(message)
        if error_type:
            self.error_type = error_type

    def __reduce__(self):
        # Errors cross process boundaries (the CPU pool pickles them): keep error_type.
        return (_rebuild, (type(self), str(self), self.error_type))


def _rebuild(cls: type[ExtractError], message: str, error_type: str) -> ExtractError:
    return cls(message, error_type=error_type)


class TransientError(ExtractError):
    error_type = "transient"


class WorkerTimeout(TransientError):
    error_type = "timeout"


class StageTimeLimit(TransientError):
    """A delivery ran past its stage's own time limit (``extract.delivery_limits``): cancelled,
    handed back for another try."""

    error_type = "stage_time_limit"


class UnitBusy(TransientError):
    """Another delivery holds this unit's claim under a live lease: back off, never fail it."""

    error_type = "unit_claimed"


class TerminalError(ExtractError):
    error_type = "terminal"


class UnsupportedFormat(TerminalError):
    error_type = "unsupported_format"


class EmptyDocument(TerminalError):
    error_type = "empty_file"


class EncryptedDocument(TerminalError):
    error_type = "encrypted"


class CorruptDocument(TerminalError):
    error_type = "corrupt"


class LimitExceeded(TerminalError):
    error_type = "limit_exceeded"


class ConverterUnavailable(TerminalError):
    """An Office file needs LibreOffice and this machine has none (or it does not start)."""

    error_type = "converter_unavailable"


TOO_DEEP = "too_deep"


def final_at_once(error: Exception) -> Exception:
    """``error``, or the terminal error it stands for when trying again cannot help.

    A ``RecursionError`` comes from the document's own shape (100,000 nested ``<div>``s, 3,000
    nested ``multipart/mixed`` parts): the same bytes fail the same way on every delivery, so it
    is ``LimitExceeded('too_deep')`` at once instead of five attempts and their backoff."""
    if isinstance(error, RecursionError):
        import sys

        return LimitExceeded(
            f"the document nests deeper than the reader can follow ({error}): Python's "
            f"recursion limit of {sys.getrecursionlimit()} frames in the worker. The limit is "
            "not a setting (a deeper stack can crash the worker); save the document with less "
            "nesting (as PDF, say) to read it", error_type=TOO_DEEP)
    return error


def error_type_of(error: BaseException) -> str:
    """The stable code recorded in ``failures.error_type`` for any exception."""
    if isinstance(error, ExtractError):
        return error.error_type
    return type(error).__name__
