import { createGatewayNode, type GatewayNode } from './gateway-node.js';
import { loadConfig, type Config } from './libraries/config/config.js';
import { createProcessTerminator, stopOnSignals } from './libraries/lifecycle/process-terminator.js';
import { createLogger } from './libraries/logger/logger.js';
import { createMetrics } from './libraries/observability/metrics.js';
import { ConfigError } from './libraries/errors/internal-errors.js';

function loadConfigOrExit(): Config {
  try {
    return loadConfig({ reader: 'node' });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * Process entry: configuration first (a bad value, or settings at odds with each other, stop here before anything
 * connects or opens), then the node. Signals,
 * uncaught exceptions, unhandled rejections and a failed start all end in the one terminator.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.log.level, base: { service: 'sms-gateway', environment: config.environment } });
  let node: GatewayNode | null = null;
  const terminate = createProcessTerminator({
    logger,
    graceMs: config.shutdown.graceMs,
    stop: async (reason) => {
      // a crashed process serves nothing new: only a signal's stop keeps serving through SHUTDOWN_DRAIN_MS
      await node?.stop({ drain: reason === 'SIGTERM' || reason === 'SIGINT' });
    },
    exit: (code) => process.exit(code),
  });
  stopOnSignals(terminate);
  process.on('uncaughtException', (error) => {
    terminate('uncaughtException', error);
  });
  process.on('unhandledRejection', (reason) => {
    terminate('unhandledRejection', reason);
  });
  try {
    node = await createGatewayNode({ config, logger, metrics: createMetrics() });
    await node.start();
  } catch (error) {
    terminate('startFailed', error);
  }
}

await main();
