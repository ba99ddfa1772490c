# The extraction image: split, read, sheet, index, fields, ingest, poller and compaction, one
# build; the function's CMD picks the entry point and each message's type picks the handler.
FROM public.ecr.aws/lambda/python:3.13
COPY pyproject.toml README.md ${LAMBDA_TASK_ROOT}/
COPY extract ${LAMBDA_TASK_ROOT}/extract
COPY ingest ${LAMBDA_TASK_ROOT}/ingest
COPY lake ${LAMBDA_TASK_ROOT}/lake
COPY evals ${LAMBDA_TASK_ROOT}/evals
COPY dashboards ${LAMBDA_TASK_ROOT}/dashboards
COPY infra ${LAMBDA_TASK_ROOT}/infra
RUN pip install --no-cache-dir "${LAMBDA_TASK_ROOT}[aws]" --target "${LAMBDA_TASK_ROOT}"
CMD ["infra.aws.lambdas.extraction.handler"]
