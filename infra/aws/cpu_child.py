"""The child of ``infra.aws.cpu.SubprocessRunner``: one call, in, out, exit.

Reads the pickled ``sys.path`` then ``(fn, args)`` from stdin, runs ``fn(*args)`` and writes a
pickled ``(True, result)`` or ``(False, exception)`` to stdout. Imports nothing of the pipeline
itself: unpickling ``fn`` imports what the call needs. Whatever the call prints goes to stderr,
so that the answer on stdout stays whole.
"""

from __future__ import annotations

import io
import os
import pickle
import resource
import sys

__all__ = ["main"]


def main() -> int:
    # No core file: a crashing parser's memory is document content (as the local pool's workers).
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a library's print goes to stderr, not into the pickled answer
    stream = io.BytesIO(sys.stdin.buffer.read())
    # The path first (the function's module may live outside the default path), then the call:
    # unpickling the function imports its module.
    for path in reversed(pickle.load(stream)):
        if path not in sys.path:
            sys.path.insert(0, path)
    fn, args = pickle.load(stream)
    try:
        result = (True, fn(*args))
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as error:  # sent back whole; the parent raises it
        try:
            data = pickle.dumps((False, error), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            data = pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}")))
    answer.write(data)
    answer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
