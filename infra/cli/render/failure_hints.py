"""What a person can do about each failure reason: one line, shown under the run's summary.

The reasons are the stable ``error_type`` words of ``extract.errors`` (and the poller's own, such
as ``no_progress``) that ``jobs.failure_reason`` and ``failures.failure_reason`` hold. A reason
without an entry gets a generic hint naming the SQL that shows its messages, so a new reason is
never shown without a way forward. docs/operators.md lists the same table (a test keeps them in
step).
"""

from __future__ import annotations

__all__ = ["HINTS", "failure_hint"]

HINTS: dict[str, str] = {
    "encrypted": "give the password: --password, --ask-password, DOCLAKE_PASSWORD, or --passwords "
                 "FILE for one per file; then run again with --retry-failed",
    "corrupt": "the file is damaged or truncated; re-export or re-download it, then run it again",
    "unsupported_format": "the bytes are not a format doclake reads (PDF, Office, OpenDocument, "
                          "RTF, sheets, CSV, text, HTML, e-mail, PNG, JPEG, TIFF); convert it "
                          "first",
    "unknown_format": "the bytes are not a format doclake reads; convert it to PDF first",
    "empty_file": "the file has no bytes; nothing to read",
    "file_too_large": "raise DOCLAKE_MAX_FILE_BYTES if the file is expected to be this large",
    "page_too_large": "a page holds an image too large to render; raise DOCLAKE_MAX_IMAGE_PIXELS "
                      "if you trust the file",
    "too_many_pages": "raise DOCLAKE_MAX_PAGES if the document is expected to be this long",
    "too_many_frames": "raise DOCLAKE_MAX_IMAGE_FRAMES if the image (a multi-page TIFF) is "
                       "expected to have this many pages",
    "too_many_cells": "raise DOCLAKE_MAX_SHEET_CELLS if the sheet is expected to be this large",
    "sheet_too_long": "raise DOCLAKE_MAX_SHEET_CHARS if the sheet is expected to be this long",
    "text_too_long": "the text, HTML or e-mail file is over the text limit; raise "
                     "DOCLAKE_MAX_SHEET_CHARS if you trust the file",
    "limit_exceeded": "a configured limit was hit (the message names it); raise that setting if "
                      "the file is trusted",
    "memory_limit": "the file needed more memory than allowed; raise DOCLAKE_MAX_PARSE_MEMORY_BYTES "
                    "if you trust it (a plain re-run takes it again)",
    "converted_too_large": "the converted PDF is over the limit; raise DOCLAKE_MAX_CONVERTED_BYTES "
                           "if you trust the file",
    "conversion_timeout": "LibreOffice took too long; raise DOCLAKE_CONVERT_TIMEOUT_S for large "
                          "Office files",
    "converter_unavailable": "install LibreOffice (apt install libreoffice-writer-nogui "
                             "libreoffice-impress-nogui), then run again: such files are "
                             "taken again by themselves",
    "reader_unavailable": "install the reader (tesseract-ocr for OCR) or set the model's API "
                          "key, then run again: such files are taken again by themselves",
    "crashes_parser": "the file crashed its parser on every attempt; it is kept out of later "
                      "runs unless --retry-failed",
    "no_content": "the document holds no text that could be read",
    "no_pages": "the document has no pages",
    "timeout": "a step took too long; run again (doclake run takes timed-out files again)",
    "stage_time_limit": "a step took too long; raise DOCLAKE_SPLIT_TIMEOUT_S or "
                        "DOCLAKE_READ_TIMEOUT_S for large files",
    "no_progress": "the job made no progress for too long; run again (it is taken again)",
    "dead_letter": "a message failed every delivery; see the failures table for each attempt, "
                   "then run again",
    "model_rejected": "the model refused the request (a bad key or request); check "
                      "DOCLAKE_GEMINI_API_KEY",
    "model_key_not_set": "the model's API key is not set or not valid; put it (on AWS: the "
                         "stack's Gemini key secret) and its pages are read on their next try",
    "tmp_full": "the function's ephemeral storage is full; the document is tried again when it "
                "frees (raise the function's ephemeral storage for large sources)",
    "model_unavailable": "the model was unavailable through the retry budget; run again later",
    "model_failed": "the model failed on every attempt; run again later",
    "strategy_unavailable": "the field strategy cannot run here (an LLM without a key); use "
                            "--strategy rules or set the key",
    "links_outside": "the document links to a file or address outside itself; it is not "
                     "converted (see docs/security.md)",
    "ambiguous_format": "the package holds parts of two formats (or no mimetype); save it again "
                        "from the program that made it (see docs/security.md)",
    "too_deep": "the document nests deeper than the reader can follow; save it flatter (as PDF) "
                "to read it",
    "too_large": "the Office file's XML inflates past the limit; raise DOCLAKE_MAX_INFLATED_BYTES "
                 "if you trust it",
    "invalid_output": "the model's answer did not fit the schema on every attempt; see the "
                      "result's message, or try the other LLM strategy",
    "model_blocked": "the model refused the content (a safety block); the fallback model "
                     "refused it too",
    "model_missing": "the offline rules model is missing from the install; reinstall doclake, "
                     "or build it with `doclake fields train`",
    "unsupported_schema": "the --fields schema uses a type the strategy cannot ask a model for; "
                          "simplify the pydantic model",
    "missing_pages": "a page's stored text was missing when fields were extracted; run "
                     "`doclake worker --until-idle`, then --retry-failed",
    "worker_crashed": "the process reading the file died (a native crash or out of memory); "
                      "it is taken again, and fails crashes_parser if it keeps crashing",
    "cancelled": "the run was stopped while the step ran; the next run takes it again",
    "access_denied": "on AWS, a function was refused access to a bucket, queue or table; "
                     "check the stack's IAM roles",
    "aws_transient": "on AWS, a throttled or failed service call; it is retried by itself",
    "schema_unavailable": "the --fields schema could not be imported; check MODULE:CLASS",
}


def failure_hint(reason: str) -> str:
    """The hint for ``reason``, or one that shows where its messages are."""
    return HINTS.get(reason) or (
        f"see the messages: doclake sql \"SELECT source_name, message FROM failures JOIN "
        f"documents USING (document_id) WHERE failure_reason = '{reason}'\"")
