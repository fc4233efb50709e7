# syntax=docker/dockerfile:1
# Multi-stage: build with dev dependencies, ship only the compiled service, production dependencies and migrations.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY *.ts ./
COPY cli ./cli
COPY lib ./lib
COPY plugins ./plugins
COPY routes ./routes
COPY schemas ./schemas
COPY views ./views
# `npm ci --ignore-scripts` skipped `prepare`; this is the same `build` script it runs (docs/tooling.md).
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
# Read at run time (not compiled): the pages' stylesheet.
COPY views/style.css ./views/style.css
# Files the service reads at run time: the guide behind the MCP resource marketplace://docs/webhooks.md.
COPY docs/webhooks.md ./docs/webhooks.md
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Migrations run at start under an advisory lock, so several replicas can start together.
CMD ["node", "dist/cli.js", "serve"]
