# syntax=docker/dockerfile:1
# The driftless image: the CLI on Node 24 LTS with production dependencies only, running as a non-root
# numeric user on a read-only root filesystem. State and temp files live on volumes the pod mounts.
# Pin by digest too where your registry policy asks for it: node:24.21.0-bookworm-slim@sha256:...
ARG NODE_VERSION=24.21.0

# Build: every dependency, then the bundle of the program (rolldown.config.ts).
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
# The manifest and lockfile first, so this layer is reused until the dependencies change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json rolldown.config.ts ./
COPY src ./src
RUN npm run build

# Production dependencies only, straight from the lockfile; no dependency needs an install script.
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:${NODE_VERSION}-bookworm-slim
# An ARG before the first FROM is only in scope for FROM lines: the label below needs it again.
ARG NODE_VERSION
ARG VERSION=0.3.0
# The git commit built (docker build --build-arg REVISION=$(git rev-parse HEAD)): driftless_build_info.
ARG REVISION=unknown
LABEL org.opencontainers.image.title="driftless" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.description="GitOps reconciler for a hosted analytics database platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/node:${NODE_VERSION}-bookworm-slim"
# tini as PID 1: Node ignores SIGTERM as PID 1 until the daemon installs its handler, and nothing else
# would reap a child process. Kubernetes has no equivalent of `docker run --init`. npm and corepack
# are not needed to run, so they leave the image with their dependencies.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The platform's contracts: the simulator's full mode and `validate --contract full` read them.
COPY contracts ./contracts
COPY package.json ./
# The state folder exists and belongs to the runtime user, so a bare `docker run` works too; in
# Kubernetes a volume is mounted over it.
RUN mkdir -p /var/lib/driftless /var/run/secrets/driftless \
 && chown 10001:10001 /var/lib/driftless
ENV NODE_ENV=production \
    HOME=/tmp \
    TMPDIR=/tmp \
    DRIFTLESS_STATE_DIR=/var/lib/driftless \
    DRIFTLESS_MANIFESTS=/manifests \
    DRIFTLESS_BUILD_REVISION=${REVISION}
USER 10001:10001
EXPOSE 9464
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/cli.js"]
CMD ["run"]
