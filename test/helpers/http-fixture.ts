import type { Config, DeepPartial } from '../../src/libraries/config/config.js';
import { createGatewayNode, type GatewayNode } from '../../src/gateway-node.js';
import type { GatewayOptions } from '../../src/gateway.js';
import { openPostgresPersistence } from '../../src/libraries/persistence/persistence.js';
import { createDatabaseBus } from '../../src/libraries/transport/database-bus.js';
import type { Transport } from '../../src/libraries/transport/transport-port.js';
import { silentLogger, type Logger } from '../../src/libraries/logger/logger.js';
import { testConfig } from './gateway-fixture.js';

export const API_ROOT = '/api/v1/messaging/sms-api';

/** A running node (HTTP on a free port) over a database of the private PostgreSQL. */
export interface ApiFixture {
  readonly node: GatewayNode;
  readonly baseUrl: string;
  /** `${baseUrl}${API_ROOT}` */
  readonly api: string;
  stop(): Promise<void>;
}

export async function startApi(
  url: string,
  options: Partial<Omit<GatewayOptions, 'config'>> & { config?: DeepPartial<Config>; logger?: Logger; inProcessSimulator?: boolean } = {},
): Promise<ApiFixture> {
  const config = testConfig({ database: { url }, ...options.config });
  const persistence = await openPostgresPersistence({ url, poolSize: 10 });
  // the database bus over the same PostgreSQL unless the test brings its own transport (NATS)
  const sql = persistence.sql;
  if (!sql) throw new Error('PostgreSQL persistence without SQL');
  const transport: Transport = options.transport ?? createDatabaseBus({ db: sql });
  const node = await createGatewayNode({ ...options, config, persistence, transport, logger: options.logger ?? silentLogger });
  const port = await node.start();
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    node,
    baseUrl,
    api: `${baseUrl}${API_ROOT}`,
    async stop() {
      await node.stop();
      if (!options.transport) await transport.close();
      await persistence.close();
    },
  };
}

export interface CallResult {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: unknown;
}

/** One HTTP call with fetch; the body is parsed when it is JSON. */
export async function call(
  url: string,
  init: { method?: string; key?: string | null; headers?: Record<string, string>; json?: unknown; raw?: string | Uint8Array } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers['app-key'] = init.key;
  let body: string | Uint8Array | undefined;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] ??= 'application/json';
  } else if (init.raw !== undefined) {
    body = init.raw;
  }
  const response = await fetch(url, { method: init.method ?? 'GET', headers, ...(body !== undefined ? { body } : {}) });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}
