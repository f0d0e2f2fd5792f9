# syntax=docker/dockerfile:1.7
# One image for every Sleuth service: `docker run IMAGE sleuth-gateway` (or sleuth-agent,
# sleuth-authz-cache, sleuth-alerts, sleuth-scheduler, sleuth-reporter, sleuth-kube-mcp,
# sleuth-simcluster, sleuth).
# The install step is the one `make install` runs (`uv sync --frozen --all-packages` from uv.lock),
# without the dev group and with the workspace installed as wheels; tests/test_dockerfile.py runs
# these RUN steps in a scratch directory to keep them honest (no Docker engine is needed for that).
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV UV_LINK_MODE=copy \
    UV_COMPILE_BYTECODE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/sleuth \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m pip install --no-cache-dir "uv==0.13.9"
COPY pyproject.toml uv.lock README.md ./
COPY libs ./libs
COPY services ./services
COPY src ./src
RUN uv sync --frozen --all-packages --no-dev --no-editable

FROM python:${PYTHON_VERSION}-slim-bookworm AS runtime
ARG VERSION=0.0.0
LABEL org.opencontainers.image.title="sleuth" \
      org.opencontainers.image.description="ChatOps SRE assistant for Kubernetes: investigates read-only, as the person asking" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/sleuth/sleuth" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/sleuth/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Only the virtual environment crosses over: no compiler, no uv, no pip cache, no sources.
COPY --from=build /opt/sleuth /opt/sleuth
COPY deploy/entrypoint.sh /usr/local/bin/sleuth-entrypoint
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/sleuth-entrypoint"]
CMD ["sleuth", "--help"]
