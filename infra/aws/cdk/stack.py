"""The whole deployment in one stack: buckets, queues with their DLQs, functions whose SQS event
sources cap their concurrency (``maximum_concurrency``, no reservation), the EventBridge rules,
the table with its stream, the Glue catalog with partition projection, the Athena workgroup,
alarms, and IAM scoped to what each function touches.

Synthesizes without an AWS account and without Docker: the images' folders are only staged,
the thin zips are plain folders (``zips.stage``), and S3's EventBridge switch is a property
override (``Bucket(event_bridge_enabled=True)`` would add a custom-resource Lambda).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import (
    CfnCondition,
    CfnOutput,
    CfnParameter,
    Duration,
    Fn,
    RemovalPolicy,
    Size,
    Stack,
)
from aws_cdk import aws_athena as athena
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from extract.messages import dead_letter_queue
from extract.models.config import KEY_PLACEHOLDER
from extract.scheduling import small_queue
from infra.aws import outputs
from infra.aws.cdk.alarms import AlarmsTopic
from infra.aws.cdk.dashboard import OperationsDashboard
from infra.aws.cdk.expiry import function_log_group, intermediate_rules
from infra.aws.cdk.guards import NONCURRENT_EVENTS_DAYS, protect_lake_events, tag_costs
from infra.aws.cdk.nag import acknowledge_findings
from infra.aws.cdk.parameters import OperatorParameters
from infra.aws.cdk.settings import DeploySettings, FunctionSpec
from infra.aws.cdk.zips import ROOT, stage
from infra.aws.glue_catalog import OWNER_PARAMETER
from infra.aws.names import stack_names
from infra.aws.routing import TWINNED_QUEUES
from infra.aws.tables import INDEXES, PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE
from infra.process_env import NATIVE_THREADS
from lake.glue import database_input, raw_table_inputs
from lake.layout import event_type_prefix

__all__ = ["IMAGE_EXCLUDES", "SENDS", "RESULTS_ACCESS", "MODEL_USERS", "ATHENA_RESULTS", "REPORTS_PREFIX",
           "EVAL_RUN_EVENTS", "DoclakeStack"]

IMAGE_EXCLUDES = [".venv", ".git", "cdk.out", "build", "tests", "benchmarks", "examples",
                  "docs", ".doclake*", "**/__pycache__", "*.egg-info", ".ruff_cache"]
# Which queues each function sends to (least privilege: nothing else).
SENDS = {"ingest": ("split",), "split": ("read", "sheet", "convert"), "convert": ("read",),
         "sheet": ("sheet",), "poller": ("split", "index", "fields"), "read": (), "index": (),
         "fields": (), "compaction": (), "publisher": (), "weekly_evals": ()}
# What each function reads and writes in the results bucket, beyond the lake's events.
RESULTS_ACCESS = {"fields": ("pages/*", "results/*"), "poller": ("pages/*", "results/*"),
                  "publisher": ("results/*",), "compaction": ()}
MODEL_USERS = ("read", "fields")  # the functions that call a model (the Gemini key's readers)
ATHENA_RESULTS = "athena-results/"
REPORTS_PREFIX = "reports/"  # the weekly evals reports, in the results bucket
EVAL_RUN_EVENTS = ("eval_run", "eval_score", "eval_outcome")  # what the weekly report records


class DoclakeStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, settings: DeploySettings,
                 build_dir: Path, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.settings = settings
        # Account-wide names (Glue database, workgroup, dashboard) follow the stack's name.
        self.names = stack_names(self.stack_name)
        specs = settings.functions()
        self.parameters = OperatorParameters(self, settings, specs)
        # Versioned: the job of a slot reads the version its upload event claimed, so a second
        # upload to a POST slot (usable until it expires) never replaces the bytes being read.
        self.uploads = self._bucket("Uploads", expire_days=settings.upload_retention_days,
                                    versioned=True, cors=self._upload_cors())
        self.results = self._bucket("Results", extra_rules=intermediate_rules(
            self.parameters.intermediate_days.value_as_number))
        # Versioned: an event file deleted by a bug (or replaced) stays recoverable
        # (``infra.aws.cdk.guards``).
        self.lake = self._bucket("Lake", athena_results=True, versioned=True)
        # S3 -> EventBridge without the custom resource Bucket(event_bridge_enabled=True) adds.
        uploads_cfn = self.uploads.node.default_child
        uploads_cfn.add_property_override(
            "NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)
        self.table = self._table()
        self.alarm_topic = AlarmsTopic(self, "Alarms",
                                       email=self.parameters.alarm_email.value_as_string,
                                       email_condition=self.parameters.has_alarm_email)
        self.alarms = self.alarm_topic.topic
        self.gemini_key = self._gemini_key()
        self.queues = {name: self._queue(name, spec) for name, spec in specs.items() if spec.queue}
        self.queues.update(self._small_document_queues(specs))  # before the functions' URLs
        self.functions: dict[str, lambda_.Function] = {}
        image = lambda_.DockerImageCode
        for name, spec in specs.items():
            dockerfile = f"infra/aws/images/{spec.image}.Dockerfile"
            # Lambda runs these as x86_64: built on an ARM laptop or a Graviton runner, an
            # image of the builder's own platform would fail at start (exec format error).
            code = image.from_image_asset(str(ROOT), file=dockerfile, cmd=[spec.handler],
                                          exclude=IMAGE_EXCLUDES,
                                          platform=ecr_assets.Platform.LINUX_AMD64)
            self.functions[name] = self._image_function(name, spec, code)
        self.presigner = self._zip_function("presigner", "infra.aws.lambdas.presigner.handler",
                                            stage("presigner", build_dir), memory=256, timeout=10)
        self.publisher = self.functions["publisher"]  # in the image: it writes lake events
        self._wire_queues(specs)
        self._grant()
        self._wire_small_document_queues(specs)
        self._guard_lake_events()
        self._schedules()
        self._publisher_stream()
        self._upload_rule()
        self._catalog()
        self._function_url()
        self.operations = OperationsDashboard(self, "Operations", queues=self.queues,
                                              functions=self.functions,
                                              dashboard_name=self.names.dashboard)
        self.analyst_policy = self._analyst_policy()
        self.uploader_policy = self._uploader_policy()
        self._cover_with_alarms()
        tag_costs(self, {**self.functions, "presigner": self.presigner})
        self._outputs()
        self.acknowledged = acknowledge_findings(self)  # cdk-nag: each with its reason

    def _cover_with_alarms(self) -> None:
        """Every queue and function, this stack's and any added later (``AlarmsTopic.cover``)."""
        names = {self.functions[n]: n for n in self.functions}
        names[self.presigner] = "presigner"
        for name, queue in self.queues.items():
            names[queue] = name
            names[self.dlqs[name]] = f"the {name} dead-letter queue"  # type: ignore[attr-defined]
        names[self.publisher_failures] = "the publisher's failures queue"
        self.alarm_topic.cover(self, oldest_message_s=self.settings.oldest_message_alarm_s,
                               names=names)

    def _guard_lake_events(self) -> None:
        names = {function: name for name, function in self.functions.items()}
        protect_lake_events(self, self.lake, may_mark_deleted={"compaction"}, names=names)

    # --- storage -------------------------------------------------------------------------------

    def _bucket(self, name: str, *, expire_days: int | None = None,
                athena_results: bool = False, versioned: bool = False,
                cors: list[s3.CorsRule] | None = None,
                extra_rules: list[s3.LifecycleRule] | None = None) -> s3.Bucket:
        rules = [s3.LifecycleRule(id="abort-multipart",
                                  abort_incomplete_multipart_upload_after=Duration.days(1)),
                 *(extra_rules or [])]
        if expire_days:
            # On a versioned bucket an expired upload becomes a noncurrent version and a
            # delete marker: both go too, or nothing would ever be removed.
            rules.append(s3.LifecycleRule(
                id="expire-uploads", prefix="uploads/", expiration=Duration.days(expire_days),
                noncurrent_version_expiration=Duration.days(expire_days) if versioned
                else None))
            if versioned:
                rules.append(s3.LifecycleRule(id="expired-delete-markers", prefix="uploads/",
                                              expired_object_delete_marker=True))
        if athena_results:
            rules.append(s3.LifecycleRule(id="expire-athena-results", prefix=ATHENA_RESULTS,
                                          expiration=Duration.days(7)))
            rules.append(s3.LifecycleRule(
                id="events-to-infrequent-access", prefix="events/",
                transitions=[s3.Transition(storage_class=s3.StorageClass.INFREQUENT_ACCESS,
                                           transition_after=Duration.days(90))]))
            # Compaction's replaced files (and anything deleted by mistake) stay this long.
            rules.append(s3.LifecycleRule(
                id="noncurrent-events", prefix="events/",
                noncurrent_version_expiration=Duration.days(NONCURRENT_EVENTS_DAYS)))
            rules.append(s3.LifecycleRule(id="events-delete-markers", prefix="events/",
                                          expired_object_delete_marker=True))
        return s3.Bucket(self, name, block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                         encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True,
                         versioned=versioned, lifecycle_rules=rules, cors=cors or None,
                         removal_policy=RemovalPolicy.RETAIN)

    def _upload_cors(self) -> list[s3.CorsRule]:
        """A browser uploading to a slot sends a preflight first: the origins listed in
        ``cors_origins`` may POST or PUT (none by default: command-line uploads need none)."""
        origins = self.settings.upload_origins()
        if not origins:
            return []
        return [s3.CorsRule(allowed_origins=origins,
                            allowed_methods=[s3.HttpMethods.POST, s3.HttpMethods.PUT],
                            allowed_headers=["*"], exposed_headers=["ETag"],
                            max_age=3000)]

    def _table(self) -> dynamodb.Table:
        table = dynamodb.Table(
            self, "State",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True),
            removal_policy=RemovalPolicy.RETAIN)
        for index, (hash_key, range_key) in INDEXES.items():
            table.add_global_secondary_index(
                index_name=index,
                partition_key=dynamodb.Attribute(name=hash_key, type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=range_key, type=dynamodb.AttributeType.STRING))
        return table

    def _queue(self, name: str, spec: FunctionSpec) -> sqs.Queue:
        dlq = sqs.Queue(self, f"{name.title()}Dlq", retention_period=Duration.days(14),
                        encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
        queue = sqs.Queue(
            self, f"{name.title()}Queue", encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True, retention_period=Duration.days(4),
            visibility_timeout=Duration.seconds(spec.timeout_s * self.settings.visibility_factor),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=self.settings.max_receives,
                                                  queue=dlq))
        self.__dict__.setdefault("dlqs", {})[name] = dlq
        return queue

    def _gemini_key(self) -> str | None:
        """The ARN of the secret holding the Gemini API key (never a plain environment
        variable), made only when a model reads. The ``GeminiKeySecretArn`` parameter names an
        existing secret (encrypted with the account's ``aws/secretsmanager`` key); left empty,
        the stack creates one holding ``KEY_PLACEHOLDER``, whose value the operator puts after
        the deploy. Until then every model call is retried as ``model_key_not_set``; the
        functions read the secret again each minute (``infra.aws.runtime.ModelKey``)."""
        uses_models = self.settings.reader == "gemini" or self.settings.fields_strategy not in (
            "rules", "")
        if not uses_models:
            return None
        given = CfnParameter(self, "ExistingGeminiKeyArn", type="String", default="",
                             description="An existing Secrets Manager secret's ARN holding "
                             "the Gemini API key; empty: the stack creates one to put it in")
        create = CfnCondition(self, "CreateGeminiKeySecret",
                              expression=Fn.condition_equals(given.value_as_string, ""))
        secret = secretsmanager.CfnSecret(
            self, "GeminiApiKey", description="doclake: the Gemini API key (put its value "
            "after the first deploy)",
            # Not a secret: the marker the functions recognise as "no key yet".
            secret_string=KEY_PLACEHOLDER)
        secret.cfn_options.condition = create
        secret.apply_removal_policy(RemovalPolicy.RETAIN)
        self.gemini_key_secret, self.gemini_key_created = secret, create
        return Fn.condition_if(create.logical_id, secret.ref, given.value_as_string).to_string()

    # --- functions -----------------------------------------------------------------------------

    def _environment(self, name: str = "") -> dict[str, str]:
        urls = {}
        for queue_name, queue in self.queues.items():
            urls[queue_name] = queue.queue_url
            urls[dead_letter_queue(queue_name)] = self.dlqs[queue_name].queue_url  # type: ignore[attr-defined]
        return {
            "DOCLAKE_TABLE": self.table.table_name,
            "DOCLAKE_UPLOADS_BUCKET": self.uploads.bucket_name,
            "DOCLAKE_RESULTS_BUCKET": self.results.bucket_name,
            "DOCLAKE_LAKE_URI": f"s3://{self.lake.bucket_name}",
            "DOCLAKE_QUEUE_URLS": self.to_json_string(urls),
            "DOCLAKE_MAX_RECEIVES": str(self.settings.max_receives),
            # One attempt per model per delivery: a page that must wait goes back to its queue
            # with a delay (infra.aws.lambdas.extraction), no function sleeps through a backoff.
            "DOCLAKE_MODEL_MAX_ATTEMPTS": "1",
            # The limits /tmp was sized from (DeploySettings.source_storage_mb).
            "DOCLAKE_MAX_FILE_BYTES": str(self.settings.max_upload_bytes),
            "DOCLAKE_MAX_CONVERTED_BYTES": str(self.settings.max_converted_mb * 1024 * 1024),
            "POWERTOOLS_METRICS_NAMESPACE": "doclake",
            **NATIVE_THREADS,  # numpy's OpenBLAS threads only spin in a function (infra.process_env)
            "DOCLAKE_READER": self.settings.reader,
            **({"DOCLAKE_PRIMARY_MODEL": self.settings.primary_model}
               if self.settings.primary_model else {}),
            **({"DOCLAKE_FALLBACK_MODEL": self.settings.fallback_model}
               if self.settings.fallback_model else {}),
            **({"DOCLAKE_FIELDS_SCHEMA": self.settings.fields_schema,
                "DOCLAKE_FIELDS_STRATEGY": self.settings.fields_strategy}
               if self.settings.fields_schema else {}),
            # Only the functions that call the model know the key's secret (and may read it).
            **({"DOCLAKE_GEMINI_API_KEY_SECRET": self.gemini_key}
               if self.gemini_key is not None and name in MODEL_USERS else {}),
        }

    def _image_function(self, name: str, spec: FunctionSpec, code) -> lambda_.DockerImageFunction:
        function = lambda_.DockerImageFunction(
            self, f"{name.title()}Function", code=code, memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_s),
            environment={**self._environment(name), "DOCLAKE_EPHEMERAL_BYTES": str(
                (spec.ephemeral_mb or 512) * 1024 * 1024)},
            architecture=lambda_.Architecture.X86_64,
            ephemeral_storage_size=Size.mebibytes(spec.ephemeral_mb) if spec.ephemeral_mb
            else None, retry_attempts=0 if spec.queue is None else None,
            log_group=self._log_group(name))
        return function

    def _log_group(self, name: str):
        return function_log_group(self, f"{name.title()}Logs",
                                  self.parameters.log_retention.value_as_number)

    def _zip_function(self, name: str, handler: str, folder: Path, *, memory: int,
                      timeout: int) -> lambda_.Function:
        function = lambda_.Function(
            self, f"{name.title()}Function", runtime=lambda_.Runtime.PYTHON_3_14,
            handler=handler, code=lambda_.Code.from_asset(str(folder)), memory_size=memory,
            timeout=Duration.seconds(timeout), environment={
                "DOCLAKE_UPLOADS_BUCKET": self.uploads.bucket_name,
                "DOCLAKE_RESULTS_BUCKET": self.results.bucket_name,
                "DOCLAKE_TABLE": self.table.table_name,
                "DOCLAKE_UPLOAD_EXPIRY_S": str(self.settings.upload_expiry_s),
                "DOCLAKE_MAX_UPLOAD_BYTES": str(self.settings.max_upload_bytes)},
            reserved_concurrent_executions=None, log_group=self._log_group(name))
        return function

    def _wire_queues(self, specs: dict[str, FunctionSpec]) -> None:
        for name, spec in specs.items():
            if spec.queue:
                self.functions[name].add_event_source(sources.SqsEventSource(
                    self.queues[spec.queue], batch_size=spec.batch_size,
                    max_batching_window=Duration.seconds(1) if spec.batch_size > 1 else None,
                    report_batch_item_failures=True, max_concurrency=self.parameters.cap(name)))

    def _grant(self) -> None:
        for name, function in self.functions.items():
            if name == "weekly_evals":
                continue  # reads the lake, writes reports/: nothing else (below)
            self.table.grant_read_write_data(function)
            self.lake.grant_read_write(function, "events/*")
            for target in SENDS.get(name, ()):
                self.queues[target].grant_send_messages(function)
            if name not in ("compaction", "publisher"):
                self.uploads.grant_read(function, "uploads/*")
                self.results.grant_read_write(function, "converted/*")
                # The decrypted copy of an encrypted Office upload: every step that reads an
                # upload asks for it first (``readable_key``), and without the grant S3
                # answers that HEAD with 403, not 404.
                self.results.grant_read_write(function, "decrypted/*")
            for prefix in RESULTS_ACCESS.get(name, ("pages/*",)):
                self.results.grant_read_write(function, prefix)
            if name == "compaction":
                self.lake.grant_delete(function, "events/*")
            else:
                self.lake.grant_read(function, "events/*")
        # Visibility changes on retry (extraction) and the DLQ pass (poller).
        for name, spec in self.settings.functions().items():
            if spec.queue:
                self.queues[spec.queue].grant(self.functions[name], "sqs:ChangeMessageVisibility",
                                              "sqs:GetQueueAttributes")
        for dlq in self.dlqs.values():  # type: ignore[attr-defined]
            dlq.grant_consume_messages(self.functions["poller"])
        for queue in self.queues.values():
            queue.grant(self.functions["poller"], "sqs:GetQueueAttributes")
        if self.gemini_key is not None:
            for name in MODEL_USERS:
                self.functions[name].add_to_role_policy(iam.PolicyStatement(
                    actions=["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
                    resources=[self.gemini_key]))
        weekly = self.functions["weekly_evals"]
        self.lake.grant_read(weekly, "events/*")
        self.results.grant_put(weekly, f"{REPORTS_PREFIX}*")
        # the week it reports is recorded as an eval run: those three event types, nothing else
        for event_type in EVAL_RUN_EVENTS:
            self.lake.grant_put(weekly, f"{event_type_prefix(event_type)}/*")
        # The ingest function deletes the version of a second upload to a claimed slot.
        self.uploads.grant_delete(self.functions["ingest"], "uploads/*")
        self.uploads.grant_put(self.presigner, "uploads/*")
        self.results.grant_read(self.presigner, "results/*")  # the presigned result GET

    def _schedules(self) -> None:
        events.Rule(self, "PollerSchedule", schedule=events.Schedule.rate(Duration.minutes(1)),
                    targets=[targets.LambdaFunction(self.functions["poller"], retry_attempts=0)])
        events.Rule(self, "CompactionSchedule",
                    schedule=events.Schedule.cron(minute="17", hour="3"),
                    targets=[targets.LambdaFunction(self.functions["compaction"],
                                                    retry_attempts=2)])
        # Issue 13's weekly report: evals.weekly.write_weekly_report over the lake, to
        # s3://<results>/reports/weekly-<date>.{md,html} (infra.aws.lambdas.weekly_evals).
        events.Rule(self, "WeeklyEvalsSchedule", description="the weekly evals report",
                    schedule=events.Schedule.cron(minute="0",
                                                  hour=str(self.settings.weekly_evals_hour),
                                                  week_day=self.settings.weekly_evals_day),
                    targets=[targets.LambdaFunction(self.functions["weekly_evals"],
                                                    retry_attempts=2)])

    def _publisher_stream(self) -> None:
        """Two filters (either passes): a job item in a terminal status, and a fields claim
        item in the ``unpublished`` outbox (settled, not yet flagged published)."""
        terminal_job = {"dynamodb": {"NewImage": {"sk": {"S": ["job"]},
                                                  "status": {"S": ["succeeded", "failed"]}}}}
        settled_claim = {"dynamodb": {"NewImage": {"sk": {"S": [{"prefix": "claim#"}]},
                                                   "gsi_unpublished": {"S": [{"exists": True}]}}}}
        # A batch that still fails after its retries is described here (its shard and
        # sequence numbers) instead of vanishing; its results stay in the unpublished outbox,
        # which the poller drains (``infra.aws.lambdas.poller.drain_unpublished``).
        failed = sqs.Queue(self, "PublisherFailures", retention_period=Duration.days(14),
                           encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
        self.publisher_failures = failed  # its alarm: ``_cover_with_alarms``
        self.publisher.add_event_source(sources.DynamoEventSource(
            self.table, starting_position=lambda_.StartingPosition.LATEST, batch_size=100,
            bisect_batch_on_error=True, retry_attempts=10, report_batch_item_failures=False,
            on_failure=sources.SqsDlq(failed),
            filters=[lambda_.FilterCriteria.filter(terminal_job),
                     lambda_.FilterCriteria.filter(settled_claim)]))

    def _upload_rule(self) -> None:
        events.Rule(self, "UploadCreated", event_pattern=events.EventPattern(
            source=["aws.s3"], detail_type=["Object Created"],
            detail={"bucket": {"name": [self.uploads.bucket_name]},
                    "object": {"key": [{"prefix": "uploads/"}]}}),
            targets=[targets.SqsQueue(self.queues["ingest"])])

    def _function_url(self) -> None:
        self.front_door = self.presigner.add_function_url(
            auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)

    # --- what users get -----------------------------------------------------------------------

    def _analyst_policy(self) -> iam.ManagedPolicy:
        """What an analyst needs to query the lake in Athena and read results, nothing more:
        queries in this stack's workgroup (results land in its enforced location, written with
        the analyst's own credentials), the catalog read-only, the lake's events and the
        results read-only."""
        workgroup = self.format_arn(service="athena", resource="workgroup",
                                    resource_name=self.names.workgroup)
        glue_arns = [self.format_arn(service="glue", resource="catalog"),
                     self.format_arn(service="glue", resource="database",
                                     resource_name=self.database_name),
                     self.format_arn(service="glue", resource="table",
                                     resource_name=f"{self.database_name}/*")]
        lake, results = self.lake.bucket_arn, self.results.bucket_arn
        return iam.ManagedPolicy(self, "AnalystPolicy", description=(
            f"doclake analysts: Athena in the {self.names.workgroup} workgroup, the Glue catalog "
            "read-only, the lake and the results read-only"), statements=[
            iam.PolicyStatement(sid="AthenaInTheWorkgroup", resources=[workgroup], actions=[
                "athena:StartQueryExecution", "athena:StopQueryExecution",
                "athena:GetQueryExecution", "athena:GetQueryResults",
                "athena:GetQueryResultsStream", "athena:BatchGetQueryExecution",
                "athena:ListQueryExecutions", "athena:GetWorkGroup"]),
            iam.PolicyStatement(sid="CatalogRead", resources=glue_arns, actions=[
                "glue:GetDatabase", "glue:GetDatabases", "glue:GetTable", "glue:GetTables",
                "glue:GetPartition", "glue:GetPartitions", "glue:BatchGetPartition"]),
            iam.PolicyStatement(sid="BucketsList", resources=[lake, results], actions=[
                "s3:ListBucket", "s3:GetBucketLocation"]),
            iam.PolicyStatement(sid="LakeAndResultsRead", actions=["s3:GetObject"], resources=[
                f"{lake}/events/*", f"{lake}/{ATHENA_RESULTS}*", f"{results}/results/*",
                f"{results}/{REPORTS_PREFIX}*"]),
            iam.PolicyStatement(sid="QueryResultsWrite", resources=[f"{lake}/{ATHENA_RESULTS}*"],
                                actions=["s3:PutObject", "s3:AbortMultipartUpload",
                                         "s3:ListMultipartUploadParts"])])

    def _uploader_policy(self) -> iam.ManagedPolicy:
        """What a client that sends documents needs: calling the front door (the presigner's
        function URL, IAM auth). Since October 2025 a URL caller needs both
        ``lambda:InvokeFunctionUrl`` and ``lambda:InvokeFunction``; the upload itself and the
        result GET use the presigned POST and URL the slot carries, signed by the presigner's
        role, so no S3 permission is needed here."""
        function = self.presigner.function_arn
        return iam.ManagedPolicy(self, "UploaderPolicy", description=(
            "doclake uploaders: ask the front door for upload slots, nothing else"), statements=[
            iam.PolicyStatement(sid="FrontDoorUrl", actions=["lambda:InvokeFunctionUrl"],
                                resources=[function], conditions={"StringEquals": {
                                    "lambda:FunctionUrlAuthType": "AWS_IAM"}}),
            iam.PolicyStatement(sid="FrontDoorFunction", actions=["lambda:InvokeFunction"],
                                resources=[function])])

    def _outputs(self) -> None:
        """Every name a user or ``doclake aws --stack`` needs (``infra.aws.outputs``)."""
        values = {
            outputs.FRONT_DOOR_URL: self.front_door.url,
            outputs.UPLOADS_BUCKET: self.uploads.bucket_name,
            outputs.RESULTS_BUCKET: self.results.bucket_name,
            outputs.LAKE_BUCKET: self.lake.bucket_name,
            outputs.STATE_TABLE: self.table.table_name,
            outputs.DATABASE: self.database.ref,
            outputs.WORKGROUP: self.workgroup.ref,
            outputs.ATHENA_RESULTS: f"s3://{self.lake.bucket_name}/{ATHENA_RESULTS}",
            outputs.ANALYST_POLICY: self.analyst_policy.managed_policy_arn,
            outputs.UPLOADER_POLICY: self.uploader_policy.managed_policy_arn,
            outputs.ALARMS_TOPIC: self.alarms.topic_arn,
            outputs.DASHBOARD: self.operations.dashboard.dashboard_name,
            outputs.PROJECTION_START: self.settings.projection_start,
        }
        for key, value in values.items():
            CfnOutput(self, f"Output{key}", key=key, value=value,
                      description=outputs.DESCRIPTIONS[key])
        if self.gemini_key is not None:  # the secret it made (a given one's ARN is known)
            CfnOutput(self, f"Output{outputs.GEMINI_KEY_SECRET}", key=outputs.GEMINI_KEY_SECRET,
                      value=self.gemini_key_secret.ref, condition=self.gemini_key_created,
                      description=outputs.DESCRIPTIONS[outputs.GEMINI_KEY_SECRET])

    # --- the lake's catalog and Athena -------------------------------------------------------

    def _catalog(self) -> None:
        database = database_input(self.names.database)
        # The typed property: jsii drops a plain dict's PascalCase keys without a word, which
        # left ``DatabaseInput: {}`` (a database named after its logical id, and every table
        # naming ``doclake`` failing with "database not found").
        db = glue.CfnDatabase(self, "LakeDatabase", catalog_id=self.account,
                              database_input=glue.CfnDatabase.DatabaseInputProperty(
                                  name=database["Name"], description=database["Description"],
                                  # the raw tables are this stack's alone:
                                  # ``doclake aws setup`` writes only the views
                                  parameters={**database["Parameters"],
                                              OWNER_PARAMETER: "cloudformation"}))
        self.database_name = database["Name"]
        self.database = db
        # Partition projection tables, generated from the event schemas (lake.glue); the
        # bucket name is a token, so the location strings are built by CloudFormation.
        for name, table in raw_table_inputs("placeholder-bucket", "",
                                            projection_start=self.settings.projection_start).items():
            resource = glue.CfnTable(self, f"Raw{name.title().replace('_', '')}",
                                     catalog_id=self.account, database_name=db.ref,
                                     table_input=_with_bucket(table, self.lake.bucket_name))
            resource.node.add_dependency(db)
        self.workgroup = athena.CfnWorkGroup(
            self, "Workgroup", name=self.names.workgroup, state="ENABLED",
            recursive_delete_option=False,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                bytes_scanned_cutoff_per_query=self.settings.athena_bytes_scanned_cutoff,
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                engine_version=athena.CfnWorkGroup.EngineVersionProperty(
                    selected_engine_version="Athena engine version 3"),
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=f"s3://{self.lake.bucket_name}/{ATHENA_RESULTS}",
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_S3"))))


    # --- small documents' queues (SQS has no priorities) --------------------------------------

    def _small_document_queues(self, specs: dict[str, FunctionSpec]) -> dict[str, sqs.Queue]:
        """A twin for small documents beside each queue whose work grows with the pages
        (``infra.aws.routing.TWINNED_QUEUES``: ``read-small``, ``convert-small``), with the same
        DLQ, redrive and alarms as its queue; the adapter sends a document with few pages left
        there (``extract.scheduling.queue_class``), so a letter never waits behind a book."""
        return {small_queue(name): self._queue(small_queue(name), specs[name])
                for name in TWINNED_QUEUES}

    def _wire_small_document_queues(self, specs: dict[str, FunctionSpec]) -> None:
        """Each twin feeds its queue's function through an event source of its own, capped on
        its own (``concurrency_<queue>_small``): small documents have consumers the bulk cannot
        take. Whoever may send to the queue may send to its twin."""
        for name in TWINNED_QUEUES:
            twin, spec = self.queues[small_queue(name)], specs[name]
            function = self.functions[name]
            function.add_event_source(sources.SqsEventSource(
                twin, batch_size=spec.batch_size,
                max_batching_window=Duration.seconds(1) if spec.batch_size > 1 else None,
                report_batch_item_failures=True,
                max_concurrency=self.parameters.cap(f"{name}_small")))
            twin.grant(function, "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes")
            for sender, sends in SENDS.items():
                if name in sends:
                    twin.grant_send_messages(self.functions[sender])


def _camel(key: str) -> str:
    return key[0].lower() + key[1:]


def _with_bucket(value, bucket: str):
    """A Glue API ``TableInput`` as CDK's property shape, the placeholder bucket replaced by the
    real bucket's name (a token) in every string."""
    if isinstance(value, dict):
        if "Name" in value and "Type" in value and len(value) <= 3:  # a column
            return {_camel(k): v for k, v in value.items()}
        if "SerializationLibrary" in value or "serialization.format" in value:
            return {(_camel(k) if k[0].isupper() else k): _with_bucket(v, bucket)
                    for k, v in value.items()}
        return {(_camel(k) if k[0].isupper() and k not in ("EXTERNAL",) else k):
                _with_bucket(v, bucket) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_bucket(v, bucket) for v in value]
    if isinstance(value, str) and "placeholder-bucket" in value:
        head, tail = value.split("placeholder-bucket", 1)
        return head + bucket + tail
    return value
