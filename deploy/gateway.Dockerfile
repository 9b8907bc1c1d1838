# perfwatch gateway: the HTTP API, dispatch over NATS, persistence in MongoDB.
# Build from the repository root:  docker build -f deploy/gateway.Dockerfile -t perfwatch-gateway .
# NODE_IMAGE: the Node 24 base; the tests pass a local stand-in built on a machine with no registry.
ARG NODE_IMAGE=node:24-bookworm-slim
FROM ${NODE_IMAGE} AS build
# Marks what this build leaves on the machine, so scripts/images.sh can clear it out later.
LABEL org.perfwatch.build="1"
WORKDIR /app
COPY package.json package-lock.json ./
COPY common/package.json common/
COPY client/package.json client/
COPY gateway/package.json gateway/
COPY agent/package.json agent/
COPY local/package.json local/
# Production dependencies only (every workspace's: npm ci installs them together); the gateway
# runs nothing that needs Chromium.
# Behind a TLS-intercepting proxy, pass its CA bundle as the build secret build_ca
# (docker build --secret id=build_ca,src=/etc/ssl/certs/ca-certificates.crt): it is mounted for
# this step only and never written into a layer.
RUN --mount=type=secret,id=build_ca,required=false \
    if [ -s /run/secrets/build_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build_ca; fi \
 && npm ci --omit=dev --no-audit --no-fund --ignore-scripts
COPY common/src common/src
COPY client/src client/src
COPY gateway/src gateway/src
COPY agent/src agent/src
# The demo site's server (local/src): the compose test serves its fixture site from this image.
COPY local/src local/src
COPY bin bin

FROM ${NODE_IMAGE}
LABEL org.perfwatch.build="1"
# A young generation of 2 × 16 MB: V8 would grow it to 2 × 64 MB on a large host, and that
# alone is a quarter of the gateway's memory budget (bench/results.md, overview streaming).
ENV NODE_ENV=production PORT=8080 NODE_OPTIONS=--max-semi-space-size=16
WORKDIR /app
COPY --from=build /app /app
# The fs artifact store's place (compose mounts a volume here, which takes this owner): the
# root filesystem is read-only when run as shipped.
RUN mkdir -p /var/lib/perfwatch/artifacts && chown node:node /var/lib/perfwatch/artifacts
# The image's own unprivileged user; the Kubernetes manifests also set runAsNonRoot.
USER node
EXPOSE 8080
# Node 24 runs the TypeScript sources directly (type stripping); no build step, no dist.
ENTRYPOINT ["node", "bin/perfwatch.js"]
CMD ["gateway"]
