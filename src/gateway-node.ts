import { createHttpApp, type HealthReport } from './entry-points/http/http-app.js';
import { createHttpServer } from './entry-points/http/http-server.js';
import { createGateway, type GatewayOptions } from './gateway.js';
import type { Config } from './libraries/config/config.js';
import type { Logger } from './libraries/logger/logger.js';
import { seedDemoMerchant } from './merchants/demo-merchant.js';

export interface GatewayNodeOptions extends Omit<GatewayOptions, 'config'> {
  readonly config: Config;
  readonly logger: Logger;
  /** Where the one-time sandbox key line goes (stdout by default). */
  readonly announce?: (line: string) => void;
  /** Whether the transport answers; in-process transport when absent. */
  readonly transportCheck?: () => Promise<void>;
}

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** One gateway process: the wired gateway plus its HTTP facade, started and stopped together. */
export async function createGatewayNode(options: GatewayNodeOptions) {
  const { config, logger } = options;
  const gateway = await createGateway({
    ...options,
    onIncident: (incident) => {
      logger.error({ err: incident.error }, incident.what);
    },
  });

  async function health(): Promise<HealthReport> {
    const database = await within(1_000, gateway.persistence.ping()).then(
      () => 'ok' as const,
      () => 'down' as const,
    );
    const transport = options.transportCheck
      ? await within(1_000, options.transportCheck()).then(
          () => 'ok' as const,
          () => 'down' as const,
        )
      : ('ok' as const);
    return { healthy: database === 'ok' && transport === 'ok', checks: { database, transport } };
  }

  const app = createHttpApp({
    useCases: gateway.useCases,
    environment: config.environment,
    version: config.version,
    bodyLimitBytes: config.http.bodyLimitBytes,
    health,
    logger,
  });
  const http = createHttpServer(app, { host: config.http.host, port: config.http.port });
  const announce =
    options.announce ??
    ((line: string) => {
      process.stdout.write(`${line}\n`);
    });

  return {
    gateway,
    http,
    async start(): Promise<number> {
      if (config.demo.seedMerchant && config.environment === 'sandbox') {
        const demo = await seedDemoMerchant(gateway);
        if (demo) announce(`Sandbox API key: ${demo.apiKey}`);
      }
      gateway.start();
      const port = await http.start();
      logger.info({ port, mode: config.mode }, 'listening');
      return port;
    },
    async stop(): Promise<void> {
      await http.stop();
      await gateway.stop();
    },
  };
}

export type GatewayNode = Awaited<ReturnType<typeof createGatewayNode>>;
