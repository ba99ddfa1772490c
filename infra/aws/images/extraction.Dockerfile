# The extraction image: split, read, sheet, index, fields, ingest, poller, compaction, publisher
# and the weekly evals, one build; the function's CMD picks the entry point and each message's
# type picks the handler. Debian, as CI: tesseract comes from the distribution (the packages
# .ci/run installs), so a page without a text layer is read by OCR. awslambdaric is the Lambda
# runtime interface client (what the AWS base images ship), so any Python base image runs.
# The base by digest: a tag moves, a digest is the image the tests were run against. Refresh it
# (both Dockerfiles) with: docker buildx imagetools inspect python:3.11-slim-bookworm
FROM python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd \
    && rm -rf /var/lib/apt/lists/*
# Lambda's only writable folder is /tmp.
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1
WORKDIR /var/task
# Every Python dependency from the lock, each checked against its hash (make lock writes it;
# the test venvs take the same versions), then the project itself with nothing more.
COPY infra/aws/images/requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir --require-hashes --no-deps -r /tmp/requirements.lock \
    && rm /tmp/requirements.lock
COPY pyproject.toml README.md ./
COPY extract extract
COPY ingest ingest
COPY lake lake
COPY evals evals
COPY dashboards dashboards
COPY infra infra
RUN pip install --no-cache-dir --no-deps --no-build-isolation .
ENTRYPOINT ["python", "-m", "awslambdaric"]
CMD ["infra.aws.lambdas.extraction.handler"]
