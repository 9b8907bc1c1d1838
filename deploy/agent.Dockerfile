# perfwatch agent: serves one location (PERFWATCH_LOCATION) with Lighthouse in Chromium.
# Build from the repository root:  docker build -f deploy/agent.Dockerfile -t perfwatch-agent .
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY common/package.json common/
COPY gateway/package.json gateway/
COPY agent/package.json agent/
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts
COPY common/src common/src
COPY agent/src agent/src
COPY gateway/src gateway/src
COPY bin bin

FROM node:24-bookworm-slim
# Debian's Chromium and the fonts pages expect; nothing else from the network at run time.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-liberation fonts-noto-color-emoji ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    CHROME_PATH=/usr/bin/chromium \
    PERFWATCH_OPS_PORT=9464 \
    HOME=/tmp
WORKDIR /app
COPY --from=build /app /app
USER node
EXPOSE 9464
# Chrome's own sandbox needs user namespaces a locked-down pod does not grant; the pod's
# securityContext (non-root, no capabilities, read-only root, seccomp) is the sandbox, and the
# target guard keeps runs off private networks. Set CHROME_NO_SANDBOX=false where user
# namespaces are available.
ENV CHROME_NO_SANDBOX=true
ENTRYPOINT ["node", "bin/perfwatch.js"]
CMD ["agent"]
