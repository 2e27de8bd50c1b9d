# plancheck in a container, with PostgreSQL's server binaries for `plancheck demo`:
#
#   docker build -t plancheck .
#   docker run --rm plancheck demo
#   docker run --rm -v "$PWD:/project" -e DATABASE_URL plancheck check --require usable
#
# Untested: no Docker engine answers where plancheck is built and tested. Every command in it is
# the one `.ci/install-check.sh` runs and tests (a locked release build, the binary run with
# Debian's PostgreSQL 15 found under /usr/lib/postgresql/*/bin, as a user other than root).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/plancheck

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/plancheck /usr/local/bin/plancheck
# PostgreSQL refuses to run as root, and plancheck needs no rights of its own.
RUN useradd --create-home plancheck
USER plancheck
WORKDIR /project
ENTRYPOINT ["plancheck"]
CMD ["--help"]
