# The extraction image: split, read, sheet, index, fields, ingest, poller, compaction, publisher
# and the weekly evals, one build; the function's CMD picks the entry point and each message's
# type picks the handler. Debian, as CI: tesseract comes from the distribution (the packages
# .ci/run installs), so a page without a text layer is read by OCR. awslambdaric is the Lambda
# runtime interface client (what the AWS base images ship), so any Python base image runs.
FROM python:3.11-slim-bookworm
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd \
    && rm -rf /var/lib/apt/lists/*
# Lambda's only writable folder is /tmp.
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1
WORKDIR /var/task
COPY pyproject.toml README.md ./
COPY extract extract
COPY ingest ingest
COPY lake lake
COPY evals evals
COPY dashboards dashboards
COPY infra infra
RUN pip install --no-cache-dir ".[aws]" awslambdaric
ENTRYPOINT ["python", "-m", "awslambdaric"]
CMD ["infra.aws.lambdas.extraction.handler"]
