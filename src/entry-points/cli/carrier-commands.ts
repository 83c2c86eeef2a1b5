import { pricingCarriers, readDispatchBacklog, routedCarriers } from '../../carriers/carrier-health.js';
import { liveConnectors, type ConnectorPresence } from '../../carriers/connector/connector-presence.js';
import { groupByCarrier, readPresenceOnce } from '../../carriers/connector/presence-reader.js';
import { natsNames } from '../../libraries/transport/nats-names.js';
import { SANDBOX_CARRIER } from '../../messaging/send-message-use-case.js';
import { rejected, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { fields, humanTime, isoTime, table } from './format.js';

/**
 * `carriers status`: for each carrier the gateway routes to (and any other carrier whose connector announces
 * itself), its connectors as their presence entries describe them and the jobs waiting for it in SMS_DISPATCH.
 * Exit code 0 when every routed carrier has a live connector, `CARRIERS_DOWN_EXIT` when one has none.
 */

/** Exit code of `carriers status` when a routed carrier has no live connector. */
export const CARRIERS_DOWN_EXIT = 3; // EXIT.attention

export interface CarrierStatusView {
  readonly carrier: string;
  readonly routed: boolean;
  readonly live_connectors: number;
  /** Null: not known (embedded mode). */
  readonly dispatch_backlog: number | null;
  readonly connectors: readonly ConnectorView[];
}

/** A connector's presence entry as the CLI shows it: without its carrier (the view's) and with its age. */
export interface ConnectorView extends Omit<ConnectorPresence, 'version' | 'carrier'> {
  readonly age_ms: number;
}

/** The carriers' views, sorted by slug: routed ones first known, then any other with a fresh entry. */
export function carrierViews(
  routed: readonly string[],
  entries: readonly ConnectorPresence[],
  backlog: ReadonlyMap<string, number> | null,
  now: number,
): CarrierStatusView[] {
  const byCarrier = groupByCarrier(entries, now);
  const carriers = [
    ...new Set([...routed, ...byCarrier.keys(), ...(backlog ? [...backlog].filter(([, n]) => n > 0).map(([c]) => c) : [])]),
  ].sort();
  return carriers.map((carrier) => {
    const fresh = byCarrier.get(carrier) ?? [];
    return {
      carrier,
      routed: routed.includes(carrier),
      live_connectors: liveConnectors(fresh, now).length,
      dispatch_backlog: backlog ? (backlog.get(carrier) ?? 0) : null,
      connectors: fresh.map((entry) => ({
        connector_id: entry.connector_id,
        name: entry.name,
        kind: entry.kind,
        priority: entry.priority,
        weight: entry.weight,
        live: entry.live,
        active: entry.active,
        binds_up: entry.binds_up,
        binds_total: entry.binds_total,
        window_in_use: entry.window_in_use,
        window_size: entry.window_size,
        submits_per_second: entry.submits_per_second,
        updated_at: entry.updated_at,
        age_ms: Math.max(0, now - Date.parse(entry.updated_at)),
      })),
    };
  });
}

const seconds = (ms: number): string => `${(ms / 1_000).toFixed(1)}s`;
const stateOf = (view: ConnectorView): string => (view.active ? 'active' : view.live ? 'standby' : 'not live');

/** The text of `carriers status`. */
export function renderCarrierStatus(views: readonly CarrierStatusView[], summary: readonly (readonly [string, string])[]): string {
  const blocks = views.map((view) => {
    const backlog = view.dispatch_backlog === null ? '-' : String(view.dispatch_backlog);
    const head = `${view.carrier}${view.routed ? '' : ' (not routed)'}: ${view.live_connectors === 0 ? 'no live connector' : `${String(view.live_connectors)} live`}, backlog ${backlog}`;
    if (view.connectors.length === 0) return head;
    const rows = view.connectors.map((c) => [
      c.name,
      c.kind,
      String(c.priority),
      String(c.weight),
      stateOf(c),
      `${String(c.binds_up)}/${String(c.binds_total)}`,
      `${String(c.window_in_use)}/${String(c.window_size)}`,
      String(c.submits_per_second),
      seconds(c.age_ms),
    ]);
    const connectors = table(['NAME', 'KIND', 'PRIORITY', 'WEIGHT', 'STATE', 'BINDS', 'WINDOW', 'SUBMITS/S', 'AGE'], rows)
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n');
    return `${head}\n${connectors}`;
  });
  return [fields(summary), ...(blocks.length === 0 ? ['No carrier.'] : blocks)].join('\n\n');
}

export async function carriersStatus(gateway: CliGateway): Promise<CommandOutcome> {
  const { config } = gateway;
  const now = gateway.clock.now();
  const routed = routedCarriers(
    config.environment,
    config.environment === 'sandbox' ? [] : await pricingCarriers(gateway.persistence.directory),
    config.carriers.defaultCarrier,
    SANDBOX_CARRIER,
  );
  let views: CarrierStatusView[];
  if (config.mode === 'embedded') {
    // the sandbox simulator runs inside the server process: live whenever the server runs
    views = carrierViews(routed, [], null, now).map((view) => (view.carrier === SANDBOX_CARRIER ? { ...view, live_connectors: 1 } : view));
  } else {
    if (!config.nats.url) return rejected('server mode: set NATS_URL to read the connectors');
    const { connectNats } = await import('../../libraries/transport/nats-connect.js');
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const nats = await connectNats({ servers: config.nats.url.split(',').map((s) => s.trim()), name: 'sms-gateway-cli', timeout: 5_000 });
    const names = natsNames(config.nats.namespace);
    try {
      const entries = await readPresenceOnce(nats, names);
      const backlog = await readDispatchBacklog(await jetstreamManager(nats), names, routed);
      views = carrierViews(routed, entries, backlog, now);
    } finally {
      await nats.close();
    }
  }
  const down = views.filter((view) => view.routed && view.live_connectors === 0).map((view) => view.carrier);
  const summary: [string, string][] = [
    ['Mode', config.mode === 'embedded' ? 'embedded (simulator in the server process)' : 'server'],
    ['Environment', config.environment],
    ['No live connector', down.length === 0 ? 'none' : down.join(', ')],
    ['As of', humanTime(now)],
  ];
  const text = renderCarrierStatus(views, summary);
  const json = { environment: config.environment, mode: config.mode, carriers: views, no_live_connector: down, as_of: isoTime(now) };
  return { ok: true, text, json, notices: [], ...(down.length > 0 ? { exitCode: CARRIERS_DOWN_EXIT } : {}) };
}

export const CARRIER_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['carriers', 'status'],
    args: [],
    summary: `each carrier's connectors (live, binds, window, submits/s) and jobs waiting; exit code ${String(CARRIERS_DOWN_EXIT)} when a routed carrier has no live connector`,
    prepare: () => carriersStatus,
  },
];
