import { hostname } from 'node:os';
import { ratePolicyOf } from '../api-keys/rate-limiter.js';
import { createDomainHosts, createLocalActorRouter, type ActorRouter, type DomainHosts } from '../cluster/actor-router.js';
import { createClusterRouter, type ClusterRouter } from '../cluster/cluster-router.js';
import { leaseRenewerOn } from '../cluster/lease-renewal-worker.js';
import { createShardManager, type ShardChanges, type ShardManager } from '../cluster/shard-manager.js';
import { announceShardOwners, listenForShardOwners } from '../cluster/shard-notices.js';
import { meteredJournal } from '../gateway-metrics.js';
import { createActorRuntime, type ActorRuntime } from '../libraries/actors/actor-runtime.js';
import type { Clock, IdGenerator } from '../libraries/clock/clock.js';
import type { Config } from '../libraries/config/config.js';
import type { Metrics } from '../libraries/observability/metrics.js';
import type { Persistence } from '../libraries/persistence/persistence.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { Component } from './lifecycle.js';

/** Something went wrong in a component; `what` says which and where. */
export type IncidentReport = (incident: { readonly what: string; readonly error: unknown }) => void;

export interface ActorsAndClusterOptions {
  readonly config: Config;
  readonly persistence: Persistence;
  readonly clock: Clock;
  readonly newEventId: IdGenerator;
  /** With one in server mode, the node is part of a cluster (of one node or many). */
  readonly transport?: Transport;
  readonly role?: 'node' | 'client';
  readonly report: IncidentReport;
  readonly onShardsChanged?: (changes: ShardChanges) => void;
  readonly metrics?: Metrics;
  /** A merchant's wallet currency, for the metered journal's labels. */
  readonly currencyOf: (merchantId: string) => Promise<string>;
}

/** A cluster client owns nothing: every ask goes to the shard's owner. */
const NO_SHARDS: ShardManager = {
  owns: () => false,
  ownedShards: () => [],
  fenceOf: (shard) => ({ shard, owner: '', epoch: -1 }),
  ownerOf: () => null,
  learn: () => undefined,
  start: () => Promise.resolve(),
  stopAcquiring: () => undefined,
  stop: () => Promise.resolve(),
  tick: () => Promise.resolve(),
};

/**
 * The actors (wallets, API keys, messages) and how a request reaches them: on this node alone, or in a cluster
 * through shards held by lease and a router that forwards to their owners.
 */
export function createActorsAndCluster(options: ActorsAndClusterOptions) {
  const { config, persistence, clock, report, metrics } = options;
  const runtime: ActorRuntime = createActorRuntime({
    journal: metrics
      ? meteredJournal(persistence.journal, metrics, options.currencyOf, (error) => {
          report({ what: 'metrics_failed', error });
        })
      : persistence.journal,
    clock,
    newId: options.newEventId,
    onIncident: (incident) => {
      report({ what: `${incident.what} ${incident.key}`, error: incident.error });
    },
  });
  // server mode with a transport is a cluster (of one node or many): shards by lease, fenced appends, routing
  const clusterTransport = config.mode === 'server' ? options.transport : undefined;
  const clustered = clusterTransport !== undefined;
  /**
   * A request's deadline, from its arrival: ACTOR_ASK_TIMEOUT_MS, or in a cluster CLUSTER_FAILOVER_DEADLINE_MS when
   * longer (a request may wait that long for a shard's new owner). A decided request waits as long again to finish.
   */
  const requestBudgetMs = clustered ? Math.max(config.actors.askTimeoutMs, config.cluster.failoverDeadlineMs) : config.actors.askTimeoutMs;
  const client = clustered && options.role === 'client';
  const nodeId = config.cluster.nodeId || `${hostname()}-${process.pid}-${options.newEventId().slice(0, 8)}`;
  let clusterRouter: ClusterRouter | null = null;
  const manager: ShardManager | null =
    clustered && !client
      ? createShardManager({
          nodeId,
          shards: config.cluster.shards,
          leases: persistence.leases,
          ttlMs: config.cluster.leaseTtlMs,
          // on PostgreSQL a worker thread renews too (its own connection), so a busy main thread keeps its shards
          ...(persistence.kind === 'postgres' && persistence.sql
            ? {
                renewer: leaseRenewerOn(persistence.sql, nodeId, config.cluster, (error) => {
                  report({ what: 'shard_lease_renewal_failed', error });
                }),
              }
            : {}),
          onAcquired: async (shard) => {
            await clusterRouter?.serveShard(shard);
          },
          onLost: async (shard) => {
            await clusterRouter?.leaveShard(shard);
          },
          onRebalanced: (changes) => {
            options.onShardsChanged?.(changes);
          },
          announce: announceShardOwners(clusterTransport, nodeId),
          onError: (error) => {
            report({ what: 'shard_lease_failed', error });
          },
        })
      : null;
  const hosts: DomainHosts = createDomainHosts(runtime, {
    host: {
      askTimeoutMs: config.actors.askTimeoutMs,
      idleShutdownMs: config.actors.idleShutdownMs,
      settledIdleMs: config.actors.settledIdleMs,
      snapshotEvery: config.actors.snapshotEvery,
      ...(manager ? { fenceOf: (shard: number) => manager.fenceOf(shard) } : {}),
    },
    ratePolicy: ratePolicyOf(config),
    idempotencyTtlMs: config.idempotency.ttlMs,
    ...(metrics
      ? {
          onRecipientTransition: (status: string) => {
            metrics.recipientTransition(status);
          },
        }
      : {}),
  });
  if (clusterTransport) {
    clusterRouter = createClusterRouter({
      nodeId,
      hosts,
      shards: config.cluster.shards,
      manager: manager ?? NO_SHARDS,
      transport: clusterTransport,
      clock,
      requestTimeoutMs: config.actors.askTimeoutMs,
      failoverDeadlineMs: config.cluster.failoverDeadlineMs,
      onRemoteHop: (seconds, what) => {
        metrics?.remoteHop(seconds, what);
      },
    });
  }
  const router: ActorRouter = clusterRouter ?? createLocalActorRouter(hosts, config.cluster.shards);

  let unbindMetrics = (): void => undefined;
  /** The actors' numbers (active actors, outbox backlog, shards) read by the metrics while the node runs. */
  const metricsBinding: Component = {
    name: 'metrics',
    start() {
      unbindMetrics =
        metrics?.bind({
          actorsActive: () => ({
            wallet: hosts.wallets.activeCount(),
            api_key: hosts.apiKeys.activeCount(),
            message: hosts.messages.activeCount(),
          }),
          outboxBacklog: () => persistence.outbox.backlog(),
          ...(manager ? { shardsOwned: () => manager.ownedShards().length } : {}),
          // a client node holds no shard but knows how many the cluster has
          ...(clustered ? { shardsTotal: () => config.cluster.shards } : {}),
        }) ?? unbindMetrics;
    },
    stop() {
      unbindMetrics();
    },
  };
  const actors: Component = {
    name: 'actors',
    stop() {
      runtime.stop();
    },
  };
  /** The other nodes' acquisitions, heard while this node holds shards (its routing hints change at once). */
  let listening: { stop(): Promise<void> } | null = null;
  /** Takes this node's share of the shards on start; hands them over on stop (their actors stop there). */
  const shards: Component = {
    name: 'shards',
    async start() {
      if (!manager) return;
      if (clusterTransport) listening = await listenForShardOwners(clusterTransport, manager, nodeId);
      await manager.start();
    },
    async stop() {
      await manager?.stop();
      await listening?.stop();
      listening = null;
    },
  };

  return {
    runtime,
    hosts,
    router,
    clusterRouter,
    manager,
    nodeId,
    clustered,
    requestBudgetMs,
    components: { metricsBinding, actors, shards },
  };
}
