# The conversion image: the extraction image's code plus headless LibreOffice (its own image, so
# the extraction functions do not pay its size in cold starts). Debian, as CI: LibreOffice and
# tesseract come from the distribution (the packages .ci/run installs); the Lambda Python base
# image (Amazon Linux 2023) has no LibreOffice package. awslambdaric is the runtime client.
FROM python:3.11-slim-bookworm
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       libreoffice-writer-nogui libreoffice-impress-nogui \
       tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd \
    && rm -rf /var/lib/apt/lists/*
# Lambda's only writable folder is /tmp: LibreOffice's profile goes there.
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
