# gpu-price-tracker: the collector (`gpu-tracker run`), the dashboard (`gpu-tracker serve`) and the CLI in
# one image; docker-compose.yml runs the first two from it, each with its own health check.
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
EXPOSE 8000
# the default command is the collector: healthy while a scheduler is active on the store
HEALTHCHECK --interval=1m --timeout=30s --start-period=2m CMD ["gpu-tracker", "status", "--check"]
ENTRYPOINT ["gpu-tracker"]
CMD ["run"]
