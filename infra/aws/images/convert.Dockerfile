# The conversion image: the extraction image's code plus headless LibreOffice (its own image, so
# the extraction functions do not pay its size in cold starts).
FROM public.ecr.aws/lambda/python:3.13
RUN dnf install -y libreoffice-core libreoffice-writer libreoffice-impress libreoffice-calc \
    && dnf clean all
COPY pyproject.toml README.md ${LAMBDA_TASK_ROOT}/
COPY extract ${LAMBDA_TASK_ROOT}/extract
COPY ingest ${LAMBDA_TASK_ROOT}/ingest
COPY lake ${LAMBDA_TASK_ROOT}/lake
COPY evals ${LAMBDA_TASK_ROOT}/evals
COPY dashboards ${LAMBDA_TASK_ROOT}/dashboards
COPY infra ${LAMBDA_TASK_ROOT}/infra
RUN pip install --no-cache-dir "${LAMBDA_TASK_ROOT}[aws]" --target "${LAMBDA_TASK_ROOT}"
CMD ["infra.aws.lambdas.extraction.handler"]
