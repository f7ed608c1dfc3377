# Turnstile's image: the wheel is built and installed into a virtualenv in a builder stage, then only that
# virtualenv is copied onto the runtime base. No compiler, no pip, no tests, no source tree in the final image.
#   docker build -t turnstile:0.1.0 .                      (public python:3.11-slim base)
#   make image                                              (buildah, a base made from Debian's packages)
# Both bases must put the same python3 (3.11) at the same path: the virtualenv points at its interpreter.
ARG BASE_IMAGE=python:3.11-slim-bookworm
# The builder needs `python3 -m venv` with pip; python:3.11-slim has it, a minimal Debian base needs python3-venv.
ARG BUILDER_IMAGE=${BASE_IMAGE}

FROM ${BUILDER_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# /opt/build holds pip for the build; /opt/turnstile, the only thing shipped, never gets pip.
RUN python3 -m venv /opt/build \
 && python3 -m venv --without-pip /opt/turnstile
WORKDIR /src
# Dependencies in a layer of their own, keyed by pyproject.toml only: editing the code does not re-download them.
COPY pyproject.toml ./
# A machine whose way to the index goes through a TLS proxy hands its CA in as the optional secret pip-ca
# (`--secret id=pip-ca,src=...`): used for the download, never stored in a layer.
RUN --mount=type=secret,id=pip-ca,required=false \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
 && /opt/build/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > /tmp/requirements.txt \
 && /opt/build/bin/pip --python /opt/turnstile/bin/python install --quiet --only-binary=:all: -r /tmp/requirements.txt
COPY README.md ./
COPY webhook ./webhook
RUN --mount=type=secret,id=pip-ca,required=false \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi \
 && /opt/build/bin/pip wheel --quiet --no-deps --wheel-dir /wheels . \
 && /opt/build/bin/pip --python /opt/turnstile/bin/python install --quiet --no-deps /wheels/*.whl \
 # The root filesystem is read-only at run time: compile now, never at import.
 && /opt/turnstile/bin/python -m compileall -q /opt/turnstile/lib

FROM ${BASE_IMAGE}
ARG VERSION=0.1.0
ARG SOURCE=https://github.com/turnstile-x-k8s/turnstile
LABEL org.opencontainers.image.title="turnstile" \
      org.opencontainers.image.description="Kueue-compatible job queueing for Kubernetes: admission webhooks plus an async reconciler" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
# A base that ships pip (python:3.11-slim) loses it, with its attack surface; the user gets a name for 65532
# (written directly: a minimal base has no useradd).
RUN if python3 -m pip --version >/dev/null 2>&1; then python3 -m pip uninstall --yes --quiet pip setuptools wheel; fi \
 && echo 'turnstile:x:65532:65532:turnstile:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'turnstile:x:65532:' >> /etc/group
COPY --from=builder /opt/turnstile /opt/turnstile
ENV PATH=/opt/turnstile/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 9443 8080
ENTRYPOINT ["turnstile"]
CMD ["run"]
