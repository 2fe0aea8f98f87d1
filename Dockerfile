# solid-verbs server image: the built npm package, run as a non-root user.
#
#   docker build -t solid-verbs .
#   docker run --rm -p 4400:4400 -v solid-data:/data solid-verbs                   # SQLite in /data
#   docker run --rm -p 4400:4400 -e SOLID_DATABASE_URL=postgres://… \
#     -e SOLID_NONCE_SECRET=… -e SOLID_MASTER_KEY=… solid-verbs                     # PostgreSQL
# Two nodes on PostgreSQL behind one port: compose.yaml. Settings: docs/configuration.md.

# 1. Build the package from the sources (TypeScript → dist/, web bundles) and pack it.
FROM node:26-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp && mv /tmp/solid-verbs-*.tgz /tmp/solid-verbs.tgz

# 2. Install only the packed package and its runtime dependencies (better-sqlite3 compiles here).
FROM node:26-bookworm-slim AS install
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /tmp/solid-verbs.tgz /tmp/
RUN npm init -y >/dev/null && npm install --omit=dev --no-audit --no-fund /tmp/solid-verbs.tgz
COPY docker/start.sh /app/start.sh

# 3. The runtime image: node, the installed package, no compiler, no sources, user `node`.
FROM node:26-bookworm-slim
ENV NODE_ENV=production PATH=/app/node_modules/.bin:$PATH PORT=4400 SOLID_DB=/data/solid.db
COPY --from=install /app /app
RUN mkdir -p /data && chown node:node /data
USER node
WORKDIR /data
VOLUME /data
EXPOSE 4400
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||4400)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/app/start.sh"]
