# The airlock server image: `airlock serve` (HTTP API and /mcp) in a FROM scratch
# image, built offline. The build context is prepared on the host (`make
# server-image`): bin/airlock, a static binary (CGO_ENABLED=0), bin/airlock-init,
# airlock's init (PID 1 of every sandbox it starts, found beside /airlock), and bin/busybox,
# a copy of the host's static busybox (Debian's busybox-static), from which the
# server builds the sandbox image airlock/minimal itself when the engine lacks
# it. Nothing is pulled: scratch is no image, and .dockerignore admits only
# those three files.
FROM scratch

LABEL io.airlock.component=server \
      org.opencontainers.image.title="airlock server" \
      org.opencontainers.image.description="runs untrusted shell commands in throw-away containers over HTTP and MCP"

COPY bin/airlock /airlock
COPY bin/airlock-init /airlock-init
COPY bin/busybox /bin/busybox

# WORKDIR creates the directories a scratch image cannot mkdir. /data holds the
# job records, the job logs and the audit log: mount a volume there (compose does)
# so that background jobs and their output survive a new container. No VOLUME
# instruction, so that a plain `docker run` leaves no anonymous volume behind.
WORKDIR /tmp
WORKDIR /data
WORKDIR /

ENV AIRLOCK_DATA=/data \
    AIRLOCK_LISTEN=0.0.0.0:8080

EXPOSE 8080

# The server runs as root on purpose: it drives the engine through the mounted
# Docker socket (root:docker, 0660), which is root on the host in all but name.
# Every sandbox it starts is locked down (nobody, no capabilities, read-only root,
# no network); this process is not, so expose its port only to trusted networks
# and always with AIRLOCK_TOKENS set.
USER 0:0

# /readyz answers when the engine does; busybox is in the image anyway. (No
# wget -T: Debian's static busybox 1.35 crashes with it; --timeout bounds the probe.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/bin/busybox", "sh", "-c", "exec /bin/busybox wget -q -O /dev/null http://127.0.0.1:${AIRLOCK_LISTEN##*:}/readyz"]

# SIGTERM (docker stop) is a graceful shutdown: no new requests, foreground runs
# finish, background jobs go on for the next server on /data to adopt.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/airlock", "serve"]
