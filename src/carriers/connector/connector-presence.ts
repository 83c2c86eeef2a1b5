/**
 * Connectors announce themselves on NATS so the gateway, the CLI and other connectors of the same carrier know who
 * is live (docs/carriers.md, "Routing and health"). Each connector instance keeps one entry fresh in the JetStream
 * key-value bucket `PRESENCE_BUCKET` (nats-names.ts), key `<carrier>.<connector id>`, every `PRESENCE_INTERVAL_MS`; the
 * bucket's history is 1 and its entries expire after `PRESENCE_TTL_MS`, so a connector that died disappears on
 * its own. A stopping connector deletes its entry.
 */

export const PRESENCE_INTERVAL_MS = 2_000;
/** An entry older than this is not live, whatever it says (three missed heartbeats). */
export const PRESENCE_TTL_MS = 3 * PRESENCE_INTERVAL_MS;

export interface ConnectorPresence {
  readonly version: 1;
  readonly carrier: string;
  /** Unique per process: `<name>-<random>`. */
  readonly connector_id: string;
  /** Operator's name for this connector (CONNECTOR_NAME), e.g. `smpp-primary`. */
  readonly name: string;
  /** `smpp`, `kannel`, `simulator`, or a third party's. */
  readonly kind: string;
  /** Failover order: the connectors with the lowest number that are live take the carrier's traffic. */
  readonly priority: number;
  /** Share of the traffic among live connectors of the same priority (scales how many jobs it holds at once). */
  readonly weight: number;
  /** Able to submit now (a bind is up) and taking jobs. */
  readonly live: boolean;
  /** Taking jobs: live, and no live connector of this carrier has a lower priority number. */
  readonly active: boolean;
  readonly binds_up: number;
  readonly binds_total: number;
  readonly window_in_use: number;
  readonly window_size: number;
  readonly submits_per_second: number;
  /** ISO 8601 UTC: when this entry was written. */
  readonly updated_at: string;
}

export const presenceKey = (carrier: string, connectorId: string): string => `${carrier}.${connectorId}`;

/** Live entries only: fresh (by `now`) and saying so. */
export function liveConnectors(entries: readonly ConnectorPresence[], now: number): ConnectorPresence[] {
  return entries.filter((entry) => entry.live && now - Date.parse(entry.updated_at) <= PRESENCE_TTL_MS);
}

/** Whether a connector of `priority` should take jobs, given the live entries of its carrier (its own included). */
export function shouldTakeJobs(priority: number, liveOfCarrier: readonly ConnectorPresence[]): boolean {
  return liveOfCarrier.every((entry) => entry.priority >= priority);
}
