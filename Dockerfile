# SMS gateway image: one image for the gateway node, the simulator connector and the operator CLI.
#   docker build -t sms-gateway .
#   docker run -p 3000:3000 sms-gateway                                  (embedded sandbox, data in /app/data)
#   docker run -p 3000:3000 -e NODE_ENV=production -e DATABASE_URL=… -e NATS_URL=… -e SECRETS_KEY=… sms-gateway
#                                                                        (a production node in server mode)
#   docker compose up                                                    (PostgreSQL, NATS, two nodes, simulator)
# test/integration/operations/production-commands.test.ts runs the same commands without Docker.

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:22-bookworm-slim AS runtime
# NODE_ENV is left unset so that the plain `docker run` is the embedded sandbox; production sets NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
COPY docs/schemas ./docs/schemas
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 3000}/api/v1/messaging/sms-api/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
