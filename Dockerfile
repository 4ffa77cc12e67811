# syntax=docker/dockerfile:1
#
# The Sluice image: one image for the gateway, the operator and the workers;
# only the command differs (the Helm chart, charts/sluice, passes it):
#
#   docker run sluice                                # node gateway/dist/main.js (default)
#   docker run sluice operator/dist/main.js          # the operator
#   docker run sluice dataplane/dist/main.js         # a worker (started by the operator)
#
# Build from the repository root (docs/image.md):
#
#   make image                                  # buildah, no Docker engine, no registry
#   docker build -t <registry>/sluice:0.1.0 .   # Docker, with Docker Hub's base
#
# NODE_IMAGE, the base, is the public node:24-bookworm-slim by default;
# `make image` passes localhost/sluice-node:24, made on the machine from
# Debian's minbase and the npm registry's Node 24, laid out the same
# (scripts/image/ensure-base.sh). e2e/chart.test.ts checks that every path this
# file COPYs exists and is not excluded by .dockerignore, and the user id
# against the chart (10001); e2e/image.test.ts starts the built image.
#
# Stages: `build` installs every dependency (dev included) and compiles the
# TypeScript workspaces; `deps` installs production dependencies only; the
# runtime stage takes those node_modules plus the compiled dist/ folders, and
# nothing else (no sources, no compiler, no tests).

ARG NODE_IMAGE=node:24-bookworm-slim

# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
# Manifests first, so the dependency layer is reused while only sources change.
# `npm ci`: exactly the committed lockfile, for a reproducible image.
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY dataplane/package.json dataplane/
COPY gateway/package.json gateway/
COPY operator/package.json operator/
COPY e2e/package.json e2e/
COPY bench/package.json bench/
# The workers' Kafka client gets its encoding patch (scripts/patch-kafka-client.mjs).
COPY scripts/patch-kafka-client.mjs scripts/
RUN npm ci --no-audit --no-fund && node scripts/patch-kafka-client.mjs
COPY tsconfig.json tsconfig.base.json ./
COPY shared/tsconfig.json shared/
COPY shared/src shared/src
COPY dataplane/tsconfig.json dataplane/
COPY dataplane/src dataplane/src
COPY gateway/tsconfig.json gateway/
COPY gateway/src gateway/src
COPY operator/tsconfig.json operator/
COPY operator/src operator/src
RUN npm run build

# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY dataplane/package.json dataplane/
COPY gateway/package.json gateway/
COPY operator/package.json operator/
COPY e2e/package.json e2e/
COPY bench/package.json bench/
# Production dependencies of the four runtime workspaces only (not the e2e
# and bench ones); workspace packages become symlinks into /app/<workspace>.
COPY scripts/patch-kafka-client.mjs scripts/
RUN npm ci --omit=dev --no-audit --no-fund \
      --workspace shared --workspace dataplane --workspace gateway --workspace operator \
 && node scripts/patch-kafka-client.mjs \
 && npm cache clean --force

# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    SLUICE_DATA_DIR=/var/lib/sluice \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
# A fixed numeric user, so Kubernetes' runAsNonRoot can verify it (the chart
# runs everything as 10001:10001 with a read-only root filesystem; /tmp and
# the data directory are volumes there).
RUN groupadd --gid 10001 sluice \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sluice \
 && mkdir -p /var/lib/sluice \
 && chown 10001:10001 /var/lib/sluice
COPY --from=deps /app/node_modules node_modules
COPY --from=build /src/package.json ./
COPY --from=build /src/shared/package.json shared/
COPY --from=build /src/shared/dist shared/dist
COPY --from=build /src/dataplane/package.json dataplane/
COPY --from=build /src/dataplane/dist dataplane/dist
COPY --from=build /src/gateway/package.json gateway/
COPY --from=build /src/gateway/dist gateway/dist
COPY --from=build /src/operator/package.json operator/
COPY --from=build /src/operator/dist operator/dist
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["node"]
CMD ["gateway/dist/main.js"]
