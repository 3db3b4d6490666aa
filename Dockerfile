# shepherd: one image for the ResourceManager (`shepherd rm`), the NodeManager (`shepherd nm`) and the CLI.
#
#   podman build --format docker -t shepherd .            # or: docker build -t shepherd .
#   podman build --format docker --build-arg BASE_IMAGE=localhost/debian:bookworm -t shepherd .
#
#   podman run -d --network host -e SHEPHERD_NODE_SECRET -e SHEPHERD_CLIENT_SECRET -v rm-data:/var/lib/shepherd \
#       shepherd rm --host 0.0.0.0 --data-dir /var/lib/shepherd/rm --create-store
#   podman run -d --network host -e SHEPHERD_NODE_SECRET shepherd nm --rm rm-host:7030 --host 0.0.0.0 \
#       --hostname "$(hostname -f)" --no-cgroups
#
# BASE_IMAGE is any Debian-like image with apt (python3 >= 3.11 and python3-venv are installed if missing): no
# image registry is needed when it is made locally (debootstrap | podman import; docs/deploy.md). A directory
# wheels/ in the build context (`pip wheel -w wheels . setuptools`) makes the build work offline.
# Both daemons run as the unprivileged user shepherd (uid 10001); containers the NodeManager starts run as it too.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
RUN python3 -c "import ensurepip, venv" 2>/dev/null || { apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
      && rm -rf /var/lib/apt/lists/*; }
COPY . /opt/shepherd/app
# An editable install: the state store's migrations live beside the packages in the source tree
RUN python3 -m venv /opt/shepherd \
    && if ls /opt/shepherd/app/wheels/*.whl >/dev/null 2>&1; then \
         /opt/shepherd/bin/pip install --no-cache-dir --no-index --find-links /opt/shepherd/app/wheels \
           -e /opt/shepherd/app; \
       else \
         /opt/shepherd/bin/pip install --no-cache-dir -e /opt/shepherd/app; \
       fi \
    && rm -rf /opt/shepherd/app/wheels \
    && /opt/shepherd/bin/shepherd --help >/dev/null

FROM ${BASE_IMAGE}
RUN { command -v python3 >/dev/null || { apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 \
        && rm -rf /var/lib/apt/lists/*; }; } \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/shepherd \
         --shell /usr/sbin/nologin shepherd \
    && install -d -m 0755 /etc/shepherd/hadoop
COPY --from=build /opt/shepherd /opt/shepherd
ENV PATH=/opt/shepherd/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    SHEPHERD_LOG_FORMAT=json \
    HADOOP_CONF_DIR=/etc/shepherd/hadoop \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=8388608 \
    MALLOC_TRIM_THRESHOLD_=16777216
USER shepherd
WORKDIR /var/lib/shepherd
VOLUME /var/lib/shepherd
# RM: gRPC, REST/web, Hadoop IPC client, scheduler and admin; NodeManager: ContainerManager gRPC, web
EXPOSE 7030 8088 8032 8030 8033 7040 8042
# gRPC health of the daemon running as process 1 (its --grpc-port/--port, or $SHEPHERD_HEALTH_ADDRESS)
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["python", "-m", "proto.probe"]
ENTRYPOINT ["shepherd"]
CMD ["--help"]
