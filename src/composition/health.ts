import type { CarriersCheck } from '../carriers/carrier-health.js';
import type { HealthReport } from '../entry-points/http/app/health.js';

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

const probe = (ms: number, check: () => Promise<void>) =>
  within(ms, check()).then(
    () => 'ok' as const,
    () => 'down' as const,
  );

export interface HealthCheckOptions {
  readonly database: { ping(): Promise<void> };
  readonly transport: { ping(): Promise<void> };
  /** The carriers' state, from memory. */
  readonly carriers: () => CarriersCheck;
  /** A ping slower than this reports its dependency down (HEALTH_PROBE_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /** True once the node has begun to stop: from then on it reports itself unhealthy. */
  readonly stopping?: () => boolean;
}

/**
 * GET /health's answer, and the probes the dependency watch uses. Checks arriving while one is running share its
 * answer: the endpoint is unauthenticated and unlimited, so a flood of checks costs the database and NATS one ping
 * at a time, not one per request.
 */
export function createHealthCheck(options: HealthCheckOptions) {
  const probes = {
    database: () => probe(options.timeoutMs, () => options.database.ping()),
    transport: () => probe(options.timeoutMs, () => options.transport.ping()),
  };
  async function checkHealth(): Promise<HealthReport> {
    const [database, transport] = await Promise.all([probes.database(), probes.transport()]);
    const checks = { database, transport, carriers: options.carriers() };
    if (options.stopping?.()) return { healthy: false, checks: { ...checks, node: 'stopping' } };
    return { healthy: database === 'ok' && transport === 'ok', checks };
  }
  let running: Promise<HealthReport> | null = null;
  function health(): Promise<HealthReport> {
    running ??= checkHealth().finally(() => {
      running = null;
    });
    return running;
  }
  return { probes, health };
}
