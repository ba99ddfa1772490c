"""boto errors, sorted once for every AWS adapter: retry, give up, or "the condition said no".

::

    botocore error
    ├── throttling, 5xx, a dropped connection, a read timeout  -> TransientError (retried)
    ├── ConditionalCheckFailed / a transaction cancelled by a  -> False from the adapter (a
    │   condition                                                 redelivered message finds the
    │                                                             work done: not an error)
    ├── AccessDenied (a grant missing from the deployment)      -> TerminalError "access_denied":
    │                                                             the job fails at once, naming
    │                                                             the call, instead of spending
    │                                                             every delivery on a 403
    └── anything else (a missing table)                         -> raised as it is: a bug or a
                                                                  deployment mistake, which the
                                                                  handler's last delivery turns
                                                                  into a failed job

The brownout lesson (seed 000): the SDK treats a 503 as a plain temporary error, not as
throttling, so both are mapped to the same ``TransientError`` and the queue's retry budget, not
the SDK's few quick retries, rides out a long outage.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from extract.errors import TerminalError, TransientError

__all__ = ["THROTTLING_CODES", "CONDITION_CODES", "ACCESS_DENIED_CODES", "NOT_FOUND_CODES", "error_code",
           "http_status", "is_transient", "is_condition_failure", "is_not_found", "is_access_denied",
           "mapped"]

THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled",
    "RequestThrottledException", "TooManyRequestsException", "ProvisionedThroughputExceededException",
    "RequestLimitExceeded", "SlowDown", "RequestTimeout", "RequestTimeoutException",
    "TransactionInProgressException", "InternalError", "InternalServerError",
    "ServiceUnavailable", "LimitExceededException", "KMSThrottlingException",
})
CONDITION_CODES = frozenset({"ConditionalCheckFailedException"})
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "403", "Forbidden",
                                 "UnauthorizedOperation", "AuthorizationError"})
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound", "NoSuchBucket"})

_NETWORK = (ConnectionClosedError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def http_status(error: ClientError) -> int:
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def is_transient(error: BaseException) -> bool:
    """Throttling, a 5xx, or the network: trying again later can help."""
    if isinstance(error, _NETWORK):
        return True
    if isinstance(error, ClientError):
        return error_code(error) in THROTTLING_CODES or http_status(error) >= 500
    return False


def is_condition_failure(error: BaseException) -> bool:
    """A conditional write whose condition did not hold (the transition was already made)."""
    return isinstance(error, ClientError) and error_code(error) in CONDITION_CODES


def is_not_found(error: BaseException) -> bool:
    return isinstance(error, ClientError) and (error_code(error) in NOT_FOUND_CODES
                                               or http_status(error) == 404)


def is_access_denied(error: BaseException) -> bool:
    """The caller's role lacks a grant (S3 answers a HEAD without one with a bare 403)."""
    return isinstance(error, ClientError) and (error_code(error) in ACCESS_DENIED_CODES
                                               or http_status(error) == 403)


@contextlib.contextmanager
def mapped(what: str) -> Iterator[None]:
    """Run an AWS call; a transient failure leaves as ``TransientError`` naming ``what``, a
    denied one as ``TerminalError`` (``access_denied``): retrying cannot grant it."""
    try:
        yield
    except (ClientError, *_NETWORK) as error:
        if is_transient(error):
            raise TransientError(f"{what}: {error}", error_type="aws_transient") from error
        if is_access_denied(error):
            raise TerminalError(f"{what}: access denied ({error_code(error)}): a grant is "
                                "missing from the deployment's role", error_type="access_denied"
                                ) from error
        raise
