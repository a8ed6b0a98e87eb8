# gpu-price-tracker: the collector (`gpu-tracker run`) and the CLI in one image.
FROM python:3.12-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    XDG_DATA_HOME=/data \
    XDG_CONFIG_HOME=/config

WORKDIR /app
COPY pyproject.toml README.md ./
COPY tracker ./tracker
COPY scrapers ./scrapers
COPY db ./db
RUN pip install '.[postgres]' \
    && useradd --system --uid 10001 --home-dir /data tracker \
    && mkdir -p /data /config \
    && chown tracker /data /config

USER tracker
VOLUME ["/data"]
HEALTHCHECK --interval=5m --timeout=30s CMD ["gpu-tracker", "info", "--format", "json"]
ENTRYPOINT ["gpu-tracker"]
CMD ["run"]
