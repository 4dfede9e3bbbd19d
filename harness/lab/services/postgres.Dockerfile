# The postgres kind's image for the docker backend (harness.lab.services.pgcontainer): the same pinned PostgreSQL
# binaries a local step runs (Zonky's, unpacked by `invoke setup`; they carry their own lib/ and share/), on the
# lab's base image. `invoke image` builds it with the binaries' directory as the build context; no registry needed.
# The cluster is not in the image: each step mounts the cached cluster and runs as its owner (never root).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
COPY . /opt/postgres
ENTRYPOINT ["/opt/postgres/bin/postgres"]
