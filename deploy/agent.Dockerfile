# perfwatch agent: serves one location (PERFWATCH_LOCATION) with Lighthouse in Chromium.
# Build from the repository root:  docker build -f deploy/agent.Dockerfile -t perfwatch-agent .
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
# Behind a TLS-intercepting proxy, pass its CA bundle as the build secret build_ca
# (docker build --secret id=build_ca,src=/etc/ssl/certs/ca-certificates.crt): it is mounted for
# this step only and never written into a layer.
RUN --mount=type=secret,id=build_ca,required=false \
    if [ -s /run/secrets/build_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/build_ca; fi \
 && npm ci --omit=dev --no-audit --no-fund --ignore-scripts
COPY common/src common/src
COPY client/src client/src
COPY agent/src agent/src
COPY gateway/src gateway/src
COPY bin bin

FROM ${NODE_IMAGE}
LABEL org.perfwatch.build="1"
# Debian's Chromium and the fonts pages expect; nothing else from the network at run time.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-liberation fonts-noto-color-emoji ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
# No OPS_PORT here: the agent's own default is 9464, and an image default would hide a
# deprecated PERFWATCH_OPS_PORT an operator still sets (the new name wins over the old).
ENV NODE_ENV=production \
    CHROME_PATH=/usr/bin/chromium \
    HOME=/tmp
WORKDIR /app
COPY --from=build /app /app
USER node
EXPOSE 9464
# Chrome runs with its own sandbox (CHROME_NO_SANDBOX unset: on for a non-root user): a renderer
# exploit on a hostile page then stays in Chrome's sandbox instead of running as the agent, which
# holds the NATS credentials. The sandbox needs user namespaces and a chroot inside them, which
# default seccomp profiles refuse to a container without capabilities: run with
# deploy/seccomp/chrome-sandbox.json (docs/operating.md, "The agent's seccomp profile").
# CHROME_NO_SANDBOX=true is the escape hatch where that is not possible.
# tini as PID 1 reaps what Chrome leaves: its helpers, orphaned when a browser is retired, would
# otherwise stay zombies of the agent, and the agent waits for a killed Chrome to be gone.
ENTRYPOINT ["tini", "--", "node", "bin/perfwatch.js"]
CMD ["agent"]
