# Turnstile's image: a wheel built and installed into a virtualenv in a builder stage, then only that
# virtualenv copied onto a slim Python base. No compiler, no pip, no source tree in the final image.
#   docker build -t turnstile:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/turnstile
# Dependencies first, so editing the code does not re-download them.
COPY pyproject.toml README.md ./
COPY webhook ./webhook
RUN /opt/turnstile/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/turnstile/bin/pip install /wheels/*.whl \
 && /opt/turnstile/bin/pip uninstall --yes pip \
 # The root filesystem is read-only at run time: compile now, never at import.
 && /opt/turnstile/bin/python -m compileall -q /opt/turnstile/lib

FROM ${PYTHON_IMAGE}
# The base's own pip and setuptools are not needed to run: remove them with their attack surface.
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
 && useradd --uid 65532 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin turnstile
COPY --from=builder /opt/turnstile /opt/turnstile
ENV PATH=/opt/turnstile/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 9443 8080
ENTRYPOINT ["turnstile"]
CMD ["run"]
