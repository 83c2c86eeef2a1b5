import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Directory } from '../libraries/persistence/directory-port.js';
import { connectorDurable, dispatchSubject, type NatsNames } from '../libraries/transport/nats-names.js';
import { STREAMS } from '../libraries/transport/transport-port.js';
import { createPresenceReader, liveCountByCarrier } from './connector/presence-reader.js';

/**
 * Whether each carrier the gateway routes to has a connector taking its jobs (docs/carrier-protocol.md,
 * "Connector presence"), and how many of its jobs wait: `checks.carriers` of GET /health, the start-up warning
 * of a production node, the `carrier_*` metrics and `carriers status`.
 *
 * The routed carriers are the slugs the pricing rows name plus the default carrier (production), or the sandbox
 * simulator (sandbox). A carrier with no live connector is not an error of the gateway: its jobs wait in the
 * `SMS_DISPATCH` stream until a connector takes them.
 */

export interface CarrierCheck {
  /** `ok`: at least one connector of the carrier is live; `down`: none is. */
  readonly status: 'ok' | 'down';
  /** Live connectors. */
  readonly connectors: number;
}

export type CarriersCheck = Readonly<Record<string, CarrierCheck>>;

/**
 * One check per carrier: every routed carrier, plus any other carrier a live connector announces. Keys are sorted
 * (a stable JSON body).
 */
export function carriersCheck(routed: readonly string[], liveCounts: ReadonlyMap<string, number>): CarriersCheck {
  const carriers = [...new Set([...routed, ...[...liveCounts].filter(([, count]) => count > 0).map(([carrier]) => carrier)])].sort();
  return Object.fromEntries(
    carriers.map((carrier) => {
      const connectors = liveCounts.get(carrier) ?? 0;
      return [carrier, { status: connectors > 0 ? 'ok' : 'down', connectors }];
    }),
  );
}

/** The carriers of a check that have no live connector, sorted. */
export const carriersDown = (check: CarriersCheck): string[] =>
  Object.entries(check)
    .filter(([, state]) => state.status === 'down')
    .map(([carrier]) => carrier);

/** The routed carriers: the sandbox simulator, or the pricing rows' carriers and the default carrier. */
export function routedCarriers(
  environment: 'sandbox' | 'production',
  pricingCarriers: Iterable<string>,
  defaultCarrier: string,
  sandboxCarrier: string,
): string[] {
  if (environment === 'sandbox') return [sandboxCarrier];
  return [...new Set([...pricingCarriers, defaultCarrier])].filter((carrier) => carrier.length > 0).sort();
}

/** Every carrier slug some merchant's pricing rows name (one read per merchant). */
export async function pricingCarriers(directory: Pick<Directory, 'merchants' | 'pricing'>): Promise<string[]> {
  const slugs = new Set<string>();
  for (const merchant of await directory.merchants()) {
    for (const row of await directory.pricing(merchant.id)) if (row.carrier) slugs.add(row.carrier);
  }
  return [...slugs].sort();
}

/**
 * Jobs waiting in `SMS_DISPATCH` for each carrier: `num_pending + num_ack_pending` of the carrier's durable
 * `connector-<carrier>` when it exists (not yet delivered, and delivered but not yet settled), otherwise the
 * messages the stream holds on `sms.dispatch.<carrier>` (the stream is a work queue: a job leaves it once settled).
 * Carriers with nothing in the stream and no durable are 0. The stream, subjects and durables are the deployment's
 * (`names`).
 */
export async function readDispatchBacklog(
  jsm: JetStreamManager,
  names: NatsNames,
  carriers: readonly string[],
): Promise<Map<string, number>> {
  const stream = names.stream(STREAMS.dispatch.name);
  const subjectOf = (carrier: string): string => names.subject(dispatchSubject(carrier));
  let subjects: Readonly<Record<string, number>>;
  try {
    subjects = (await jsm.streams.info(stream, { subjects_filter: subjectOf('>') })).state.subjects ?? {};
  } catch (error) {
    // no gateway started on this NATS yet: nothing waits
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)
      return new Map(carriers.map((carrier) => [carrier, 0]));
    throw error;
  }
  const prefix = subjectOf('');
  const all = new Set(carriers);
  for (const subject of Object.keys(subjects)) if (subject.startsWith(prefix)) all.add(subject.slice(prefix.length));
  const backlog = new Map<string, number>();
  await Promise.all(
    [...all].map(async (carrier) => {
      try {
        const consumer = await jsm.consumers.info(stream, names.consumer(connectorDurable(carrier)));
        backlog.set(carrier, consumer.num_pending + consumer.num_ack_pending);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        backlog.set(carrier, subjects[subjectOf(carrier)] ?? 0);
      }
    }),
  );
  return backlog;
}

function isNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound;
}

/** One carrier's figures for the metrics (the backlog is the last value read: it stays while NATS is away). */
export interface CarrierGaugeSample {
  readonly carrier: string;
  readonly connectorsLive: number;
  /** Null when not known (embedded mode, or NATS not answering since the node started). */
  readonly dispatchBacklog: number | null;
}

export interface CarrierMonitorOptions {
  /** The carriers the gateway routes to (see `routedCarriers`); read at start and every `routedRefreshMs`. */
  readonly routed: () => Promise<readonly string[]>;
  /** Server mode: a NATS connection to read presence and the dispatch backlog; null in embedded mode. */
  readonly nats: NatsConnection | null;
  /** The deployment's names on NATS (`NATS_NAMESPACE`). */
  readonly names: NatsNames;
  /** Carriers served inside this process (the embedded simulator): always one live connector. */
  readonly inProcess: readonly string[];
  readonly now: () => number;
  readonly routedRefreshMs?: number;
  readonly backlogRefreshMs?: number;
  readonly onError: (error: unknown, context: string) => void;
}

export interface CarrierMonitor {
  start(): Promise<void>;
  /** From memory: `checks.carriers` of GET /health (empty when the node has neither NATS nor an in-process carrier). */
  check(): CarriersCheck;
  /** From memory: the metrics' figures, one per carrier of `check()` and any carrier with jobs waiting. */
  samples(): CarrierGaugeSample[];
  stop(): Promise<void>;
}

export const ROUTED_REFRESH_MS = 30_000;
export const BACKLOG_REFRESH_MS = 5_000;

export function createCarrierMonitor(options: CarrierMonitorOptions): CarrierMonitor {
  const { nats, names, now, onError } = options;
  let routed: readonly string[] = [];
  let backlog = new Map<string, number>();
  const timers: NodeJS.Timeout[] = [];
  let jsm: JetStreamManager | null = null;
  const reader = nats ? createPresenceReader({ nats, names, onError }) : null;
  const running = new Set<Promise<void>>();

  const refreshRouted = async (): Promise<void> => {
    try {
      routed = await options.routed();
    } catch (error) {
      onError(error, 'routed carriers');
    }
  };
  const refreshBacklog = async (): Promise<void> => {
    if (!nats) return;
    try {
      jsm ??= await jetstreamManager(nats);
      backlog = await readDispatchBacklog(jsm, names, routed);
    } catch (error) {
      onError(error, 'dispatch backlog');
    }
  };
  /** Runs `work` every `ms`, skipping a beat while the previous round is still out (NATS or the database slow or away). */
  const every = (ms: number, work: () => Promise<void>): void => {
    let current: Promise<void> | null = null;
    const timer = setInterval(() => {
      if (current) return;
      const round = work().finally(() => {
        current = null;
        running.delete(round);
      });
      current = round;
      running.add(round);
    }, ms);
    timer.unref();
    timers.push(timer);
  };

  function liveCounts(): Map<string, number> {
    const counts = reader ? liveCountByCarrier(reader.entries(), now()) : new Map<string, number>();
    for (const carrier of options.inProcess) counts.set(carrier, (counts.get(carrier) ?? 0) + 1);
    return counts;
  }

  // a node given another transport than NATS and no in-process carrier (tests) sees no connector: it reports none
  const observes = nats !== null || options.inProcess.length > 0;
  const check = (): CarriersCheck => (observes ? carriersCheck(routed, liveCounts()) : {});

  return {
    async start() {
      await reader?.start();
      await refreshRouted();
      await refreshBacklog();
      every(options.routedRefreshMs ?? ROUTED_REFRESH_MS, refreshRouted);
      if (nats) every(options.backlogRefreshMs ?? BACKLOG_REFRESH_MS, refreshBacklog);
    },
    check,
    samples() {
      const current = check();
      const carriers = [...new Set([...Object.keys(current), ...backlog.keys()])].sort();
      return carriers.map((carrier) => ({
        carrier,
        connectorsLive: current[carrier]?.connectors ?? 0,
        dispatchBacklog: nats ? (backlog.get(carrier) ?? null) : null,
      }));
    },
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await reader?.stop();
      await Promise.allSettled([...running]);
    },
  };
}
