# sanlens exporter image: every input pinned. The base by digest (BASE_IMAGE, named only here),
# every Python package by version and sha256 from requirements/ (pip --require-hashes), the
# wheel built by the locked build backend; a CycloneDX SBOM of what the image runs ships inside.
#
# The digest is python:3.11-slim-bookworm's as it appears in public Dockerfiles; it was not
# checked against a registry when it was written (none was reachable). Check it before a release
# (`docker buildx imagetools inspect python:3.11-slim-bookworm`, `crane digest ...`); Renovate
# keeps it current (renovate.json). Where no registry is reachable, scripts/image.sh builds this
# file FROM a local Debian bookworm + CPython 3.11 base: --build-arg BASE_IMAGE=...
ARG BASE_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY requirements/build.txt requirements/runtime.txt requirements/
# Build tools in a venv of their own: setuptools and wheel (pyproject's build backend) and
# cyclonedx-bom. The runtime venv gets no pip of its own: the build venv's pip installs into it.
# runtime.txt is what `sanlens serve` runs on and nothing more: no `analyze` extra (numpy, pyarrow,
# tqdm) and no simulator (a distribution of its own, sim/), see docs/container.md.
RUN python -m venv /opt/build \
 && /opt/build/bin/pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      --only-binary=:all: -r requirements/build.txt \
 && python -m venv --without-pip /opt/sanlens \
 && /opt/build/bin/pip --python /opt/sanlens/bin/python install --no-cache-dir \
      --disable-pip-version-check --require-hashes --only-binary=:all: -r requirements/runtime.txt
COPY pyproject.toml README.md ./
COPY exporter ./exporter
# The wheel, built offline by the locked backend (no build isolation, so nothing unpinned is
# fetched), installed alone; VERSION, when given, must be the wheel's. Then the SBOM of the venv.
ARG VERSION=unknown
RUN /opt/build/bin/pip wheel --no-cache-dir --disable-pip-version-check --no-build-isolation \
      --no-deps --wheel-dir /dist . \
 && if [ "$VERSION" != unknown ] && [ ! -e "/dist/sanlens-$VERSION-py3-none-any.whl" ]; then \
      echo "VERSION=$VERSION is not the version of the wheel: $(ls /dist)" >&2; exit 1; fi \
 && /opt/build/bin/pip --python /opt/sanlens/bin/python install --no-cache-dir \
      --disable-pip-version-check --no-deps /dist/sanlens-*.whl \
 && /opt/build/bin/cyclonedx-py environment --pyproject pyproject.toml --output-reproducible \
      --output-format JSON --output-file /opt/sanlens/sbom.cdx.json /opt/sanlens/bin/python

FROM ${BASE_IMAGE}
ARG BASE_IMAGE
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="sanlens" \
      org.opencontainers.image.description="Prometheus exporter that joins Windows host disk and NetApp ONTAP LUN views into named SAN performance diagnoses" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/sanlens/sanlens" \
      org.opencontainers.image.documentation="https://github.com/sanlens/sanlens#container-image" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      io.github.sanlens.sbom="/opt/sanlens/sbom.cdx.json"
ENV PATH=/opt/sanlens/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/sanlens /opt/sanlens
# Numeric non-root user (the "nonroot" id of distroless images); Kubernetes' runAsNonRoot can check it.
USER 65532:65532
EXPOSE 9842
# `sanlens healthcheck` finds the server as serve was told to listen: SANLENS_LISTEN and
# SANLENS_WEB_CONFIG_FILE (read by both), so TLS and basic auth need no change here.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD ["sanlens", "healthcheck"]
ENTRYPOINT ["sanlens", "serve"]
CMD ["--config", "/etc/sanlens/config.yaml"]
