"""The ports on AWS, built once per Lambda container from ``AwsSettings`` and reused by every
invocation the container serves (clients and connections survive between invocations)."""

from __future__ import annotations

import functools

import boto3
from pydantic import SecretStr

from extract.context import HandlerContext
from extract.ports import EventSink
from infra.aws.config import AwsSettings
from infra.aws.cpu import SubprocessRunner
from infra.aws.dynamo.store import DynamoJobStore
from infra.aws.routing import RoutedObjectStore
from infra.aws.s3 import S3ObjectStore, SharedDownloads
from infra.aws.sqs import SqsQueue
from infra.settings import Settings
from lake.files import open_lake
from lake.writer import ParquetEventWriter

__all__ = ["AwsRuntime", "KEY_MAX_AGE_S", "ModelKey", "shared", "DirectSink"]


class AwsRuntime:
    def __init__(self, settings: AwsSettings, pipeline: Settings | None = None, *,
                 session: boto3.session.Session | None = None):
        session = session or boto3.session.Session()
        self.settings = settings
        self.pipeline = pipeline or Settings()
        self.key = ModelKey(session, settings.gemini_api_key_secret)
        self.s3 = session.client("s3")
        self.sqs = session.client("sqs")
        self.dynamodb = session.client("dynamodb")
        self.store = DynamoJobStore(self.dynamodb, settings.table)
        # One set of local copies for both buckets: an invocation's units share a download.
        self.downloads = SharedDownloads()
        self.objects = RoutedObjectStore(
            S3ObjectStore(self.s3, settings.uploads_bucket, downloads=self.downloads,
                          ephemeral_bytes=settings.ephemeral_bytes),
            S3ObjectStore(self.s3, settings.results_bucket, downloads=self.downloads,
                          ephemeral_bytes=settings.ephemeral_bytes))
        self.queue = SqsQueue(self.sqs, settings.queue_urls, max_receives=settings.max_receives)
        filesystem, root = open_lake(settings.lake_uri)
        # No background compaction inside a function: the scheduled compactor does it.
        self.writer = ParquetEventWriter(filesystem, root, compact_after_files=None)
        self.cpu = SubprocessRunner()

    def context(self, sink: EventSink, worker: str) -> HandlerContext:
        """One invocation's context, with the model key as the secret holds it now (read
        again once ``KEY_MAX_AGE_S`` has passed: a key put after the deploy takes within a
        minute, on warm containers too)."""
        key = self.key.current()
        if key is not None and key != _key_of(self.pipeline):
            self.pipeline = self.pipeline.model_copy(update={"gemini_api_key": SecretStr(key)})
        return HandlerContext(store=self.store, objects=self.objects, queue=self.queue,
                              sink=sink, cpu=self.cpu, config=self.pipeline.extract_config(),
                              index=None, worker=worker)

    def queue_name(self, arn: str) -> str:
        """The port name of the queue an SQS record came from (its ARN's last part)."""
        physical = arn.rsplit(":", 1)[-1]
        for name, url in self.settings.queue_urls.items():
            if url.rstrip("/").rsplit("/", 1)[-1] == physical:
                return name
        raise KeyError(f"no configured queue for {arn}")


KEY_MAX_AGE_S = 60.0
"""How long a container keeps the key it read before asking Secrets Manager again."""


class ModelKey:
    """The Gemini API key from its Secrets Manager secret, through Powertools' parameters
    utility (its cache, ``max_age``); None when the stack made no secret. A secret still holding
    ``KEY_PLACEHOLDER`` (or empty) is returned as it is: the model client then fails each call
    as ``ModelKeyNotSet`` (retried), never as a rejected request."""

    def __init__(self, session: boto3.session.Session, secret: str | None, *,
                 max_age_s: float = KEY_MAX_AGE_S) -> None:
        self.secret = secret
        self.max_age_s = max_age_s
        self._provider = None
        if secret:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider

            self._provider = SecretsProvider(boto3_client=session.client("secretsmanager"))

    def current(self) -> str | None:
        if self._provider is None:
            return None
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

        from extract.errors import TransientError

        try:
            value = self._provider.get(self.secret, max_age=int(self.max_age_s))
        except GetParameterError as error:  # denied, throttled, gone: this delivery waits
            raise TransientError(f"secretsmanager get the Gemini API key: {error}",
                                 error_type="model_key_not_set") from error
        return str(value or "").strip()


def _key_of(settings: Settings) -> str | None:
    key = settings.gemini_api_key
    return None if key is None else key.get_secret_value()


@functools.cache
def shared() -> AwsRuntime:
    """The container's runtime, made on the first invocation."""
    return AwsRuntime(AwsSettings())  # type: ignore[call-arg]  # from the environment


class DirectSink:
    """Events written at once (the ingest and poller functions: few events, rare writes)."""

    def __init__(self, writer: ParquetEventWriter):
        self.writer = writer

    async def commit(self, events) -> None:
        if events:
            self.writer.write(list(events))
