# perfwatch gateway: the HTTP API, dispatch over NATS, persistence in MongoDB.
# Build from the repository root:  docker build -f deploy/gateway.Dockerfile -t perfwatch-gateway .
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY common/package.json common/
COPY gateway/package.json gateway/
COPY agent/package.json agent/
# Production dependencies only; the gateway imports the agent package's types and nothing that
# needs Chromium at run time.
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts
COPY common/src common/src
COPY gateway/src gateway/src
COPY agent/src agent/src
COPY bin bin

FROM node:24-bookworm-slim
ENV NODE_ENV=production PORT=8080
WORKDIR /app
COPY --from=build /app /app
# The image's own unprivileged user; the Kubernetes manifests also set runAsNonRoot.
USER node
EXPOSE 8080
# Node 24 runs the TypeScript sources directly (type stripping); no build step, no dist.
ENTRYPOINT ["node", "bin/perfwatch.js"]
CMD ["gateway"]
