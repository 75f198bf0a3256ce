# sanlens exporter image: build the wheel, then install it alone into a venv on a slim base.
# Pin the base by digest in your release pipeline: FROM python:3.11.14-slim-bookworm@sha256:...

FROM python:3.11.14-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY exporter ./exporter
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

FROM python:3.11.14-slim-bookworm
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="sanlens" \
      org.opencontainers.image.description="Prometheus exporter that joins Windows host disk and NetApp ONTAP LUN views into named SAN performance diagnoses" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/sanlens/sanlens" \
      org.opencontainers.image.documentation="https://github.com/sanlens/sanlens#container-image"
ENV PATH=/opt/sanlens/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /dist /tmp/wheels
RUN python -m venv /opt/sanlens \
 && /opt/sanlens/bin/pip install --no-cache-dir /tmp/wheels/sanlens-*.whl \
 && rm -rf /tmp/wheels
# Numeric non-root user (the "nonroot" id of distroless images); Kubernetes' runAsNonRoot can check it.
USER 65532:65532
EXPOSE 9842
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:9842/-/healthy', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["sanlens", "serve"]
CMD ["--config", "/etc/sanlens/config.yaml"]
