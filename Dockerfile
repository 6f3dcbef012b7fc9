# syntax=docker/dockerfile:1
# The federation-manager image referenced by config/manager/deployment.yaml
# (federation-manager:0.1.0). Build from the repository root:
#   docker build -t federation-manager:0.1.0 .
# One image for every mode: flags choose management and/or cell controllers.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY federation ./federation
COPY cells ./cells
COPY projector ./projector
COPY mcruntime ./mcruntime
COPY kubeplane ./kubeplane
# Wheels for the project and all of its dependencies, so the runtime stage needs no
# compiler and no network.
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
LABEL org.opencontainers.image.title="federation-manager" \
      org.opencontainers.image.description="asyncio multicluster federation manager for compute.datumapis.com/v1alpha" \
      org.opencontainers.image.licenses="Apache-2.0"
# No .pyc writes: the Deployment mounts the root filesystem read-only.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels
# Numeric non-root user, so the Deployment's runAsNonRoot can verify it.
USER 65532:65532
# Metrics (--metrics-bind-address) and health probes (--health-probe-bind-address).
EXPOSE 8080 8081
ENTRYPOINT ["federation-manager"]
CMD ["run"]
