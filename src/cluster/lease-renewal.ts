import type { LeaseStore } from '../libraries/persistence/lease-port.js';

export interface HeldLease {
  readonly shard: number;
  readonly epoch: number;
}

export interface LeaseRenewalOptions {
  readonly nodeId: string;
  readonly leases: Pick<LeaseStore, 'heartbeat' | 'renew'>;
  readonly ttlMs: number;
  /**
   * The main thread not heard from for longer than this is wedged, not busy: its leases are left to expire so
   * another node takes its shards.
   */
  readonly stallToleranceMs: number;
  readonly now: () => number;
}

export type RenewalOutcome =
  { readonly renewed: readonly number[] } | { readonly skipped: 'main_thread_silent'; readonly silentMs: number };

/**
 * A node's lease renewal apart from its main thread (run in a worker thread with its own connection): the leases
 * the main thread says it holds, at their epochs, extended on the renewal's own clock, so a main thread held up by
 * its own work (a long turn of its event loop, a queue of statements in its pool) keeps its shards. Only while the
 * main thread still speaks: one silent past the tolerance is treated as wedged and loses its leases after the TTL, as
 * a dead one does. A renewal never revives a lease: an expired or taken over lease (another owner, another epoch)
 * stays lost, so the main thread's fence semantics are unchanged.
 */
export function createLeaseRenewal(options: LeaseRenewalOptions) {
  const { nodeId, leases, ttlMs, stallToleranceMs, now } = options;
  let held: readonly HeldLease[] = [];
  let heardAt = now();
  return {
    /** The main thread's current leases (it speaks, so it is alive). */
    hold(next: readonly HeldLease[]): void {
      held = [...next];
      heardAt = now();
    },
    /** The main thread's periodic sign of life. */
    alive(): void {
      heardAt = now();
    },
    async renew(): Promise<RenewalOutcome> {
      const silentMs = now() - heardAt;
      if (silentMs > stallToleranceMs) return { skipped: 'main_thread_silent', silentMs };
      await leases.heartbeat(nodeId, ttlMs);
      return { renewed: await leases.renew(nodeId, held, ttlMs) };
    },
  };
}

export type LeaseRenewal = ReturnType<typeof createLeaseRenewal>;

/** Messages from the main thread to the renewal thread. */
export type ToRenewalThread =
  { readonly type: 'hold'; readonly held: readonly HeldLease[] } | { readonly type: 'alive' } | { readonly type: 'stop' };

/** Messages from the renewal thread to the main thread. */
export type FromRenewalThread =
  | { readonly type: 'ready' }
  | { readonly type: 'silent'; readonly silentMs: number }
  /** `databaseUnavailable`: the database could not be reached (an error's class and code do not cross threads). */
  | { readonly type: 'error'; readonly error: unknown; readonly databaseUnavailable: boolean };

/** What the renewal thread is started with. */
export interface RenewalThreadData {
  readonly connectionString: string;
  readonly nodeId: string;
  readonly ttlMs: number;
  readonly tickMs: number;
  readonly stallToleranceMs: number;
}
