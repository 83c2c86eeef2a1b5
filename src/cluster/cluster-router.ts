import pRetry, { AbortError } from 'p-retry';
import type { ActorHost, ActorRef, AskOptions } from '../libraries/actors/actor-runtime.js';
import { isOneOf, isRecord } from '../libraries/validation/guards.js';
import type { Command, ReplyMap } from '../libraries/actors/behaviour.js';
import { NO_SCOPE, askDeadline, patientTimer, recordRemoteHop, type RequestScope } from '../libraries/actors/request-deadline.js';
import type { Clock } from '../libraries/clock/clock.js';
import { ownerShardSubject, shardSubject } from '../libraries/transport/nats-names.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { ActorRouter, DomainHosts } from './actor-router.js';
import type { ShardManager } from './shard-manager.js';
import { decodeShardSet, encodeShardSet, shardOf } from './shards.js';
import {
  ACTOR_FAILURE_REASONS,
  ActorFailureError,
  InternalError,
  NoResponderError,
  RequestTimeoutError,
} from '../libraries/errors/internal-errors.js';

type ActorKind = 'wallet' | 'apiKey' | 'message';

/** What crosses the wire to a shard's owner: one actor's command, or a merchant's whole request. */
type ShardRequest =
  | {
      readonly kind: ActorKind;
      readonly id: string;
      readonly command: Command;
      /** Absolute (ms since the epoch): the owner refuses the command if it has not taken it by then. */
      readonly deadline?: number;
    }
  | {
      readonly kind: 'operation';
      readonly name: string;
      readonly merchantId: string;
      readonly operation: unknown;
      readonly deadline?: number;
    };

const ACTOR_KINDS = ['wallet', 'apiKey', 'message'] as const satisfies readonly ActorKind[];

const isCommand = (value: unknown): value is Command => isRecord(value) && typeof value.type === 'string';

/**
 * A request off the wire, checked field by field: its envelope here, its command's type against the commands the
 * actor has (answer), the operation by its handler. Null: not a shard request.
 */
function shardRequestOf(payload: unknown): ShardRequest | null {
  if (!isRecord(payload)) return null;
  const deadline = payload.deadline;
  if (deadline !== undefined && typeof deadline !== 'number') return null;
  const within = deadline === undefined ? {} : { deadline };
  if (payload.kind === 'operation') {
    const { name, merchantId } = payload;
    if (typeof name !== 'string' || typeof merchantId !== 'string' || !('operation' in payload)) return null;
    return { kind: 'operation', name, merchantId, operation: payload.operation, ...within };
  }
  const { kind, id, command } = payload;
  if (!isOneOf(ACTOR_KINDS, kind) || typeof id !== 'string' || !isCommand(command)) return null;
  return { kind, id, command, ...within };
}

/** A reply off the wire, checked field by field (null: not a shard reply); `shards`: the deployment's shard count. */
function shardReplyOf(value: unknown, shards: number): ShardReply | null {
  if (!isRecord(value)) return null;
  switch (value.outcome) {
    case 'ok': {
      // a node from before routing hints names no shards (nor does a malformed set): nothing is learnt from its reply
      const owned = decodeShardSet(value.owned, shards);
      return owned === null ? { outcome: 'ok', value: value.value } : { outcome: 'ok', value: value.value, owned };
    }
    case 'not_owner':
      return { outcome: 'not_owner' };
    case 'refused':
      return typeof value.detail === 'string' ? { outcome: 'refused', detail: value.detail } : null;
    case 'failed':
      return isOneOf(ACTOR_FAILURE_REASONS, value.reason) && typeof value.detail === 'string'
        ? { outcome: 'failed', reason: value.reason, detail: value.detail }
        : null;
    default:
      return null;
  }
}

/**
 * Runs a merchant's request forwarded by another node (or this one, when it owns the shard): every ask it makes is
 * then local, and carries `scope` (the request's deadline; the shard being served, when forwarded). It answers with a
 * value the wire carries (JSON); what it throws is the caller's error.
 */
export type OperationHandler = (merchantId: string, operation: unknown, scope: RequestScope) => Promise<unknown>;

type ShardReply =
  /**
   * `owned`: every shard the answering node held as it answered, ascending (a routing hint, see `shardGroupOf`); on the
   * wire, a bitmap (`encodeShardSet`).
   */
  | { readonly outcome: 'ok'; readonly value: unknown; readonly owned?: readonly number[] }
  | { readonly outcome: 'failed'; readonly reason: ActorFailureError['reason']; readonly detail: string }
  | { readonly outcome: 'not_owner' }
  | { readonly outcome: 'refused'; readonly detail: string };

/** A reply as it goes on the wire: an answer's shards encoded. */
type WireReply =
  Exclude<ShardReply, { readonly outcome: 'ok' }> | { readonly outcome: 'ok'; readonly value: unknown; readonly owned: string };

/** The transport's own timeout, in multiples of the patient wait (which ends first unless the process froze). */
const PATIENCE_BACKSTOP = 10;

/** Tried again elsewhere: nothing was applied (nobody served the shard, the server did not own it, or its write was fenced). */
export class NotApplied extends InternalError {
  readonly kind = 'not_applied';
}

/**
 * Whether a forwarded operation failed because this node no longer owns its shard (nothing of the step applied):
 * the operation's handler lets it through, and the node that forwarded it tries the shard's new owner.
 */
export const isNotApplied = (error: unknown): boolean => error instanceof NotApplied;

export interface ClusterRouterOptions {
  /** This node's id: it serves its shards on their owner subjects too (`gw.shard.<n>.<node id>`). */
  readonly nodeId: string;
  readonly hosts: DomainHosts;
  readonly shards: number;
  readonly manager: ShardManager;
  readonly transport: Transport;
  readonly clock: Clock;
  /**
   * How long one ask may wait to be taken (its deadline, capped by the request's); a taken command is then waited
   * for up to as long again before its outcome is called unknown.
   */
  readonly requestTimeoutMs: number;
  /** How long to keep trying while a shard has no owner (failover), before answering 503. */
  readonly failoverDeadlineMs: number;
  /**
   * Each crossing to another node, timed, with what crossed: an operation's name (`merchant-request`, `receipts`, …)
   * or `ask:<actor kind>` for one actor's command.
   */
  readonly onRemoteHop?: (seconds: number, what: string) => void;
}

export interface ClusterRouter extends ActorRouter {
  /** Starts answering `gw.shard.<shard>` and `gw.shard.<shard>.<node id>` (on acquiring it). */
  serveShard(shard: number): Promise<void>;
  /** Stops answering and stops the shard's actors (on losing it). */
  leaveShard(shard: number): Promise<void>;
  /**
   * Runs `operation` with the operation handler on the node owning the merchant's shard: here when it is ours,
   * otherwise in one remote hop, waiting for an owner through hand-overs and failovers like an ask.
   */
  forward(name: string, merchantId: string, operation: unknown, scope?: RequestScope): Promise<unknown>;
  /** Whether this node owns the merchant's shard now. */
  ownsMerchant(merchantId: string): boolean;
  /** The handler of the operations called `name` (merchants' requests, batches of receipts…), set once. */
  handleOperations(name: string, handler: OperationHandler): void;
  /**
   * The lowest shard last known to share its owner with `shard` (`shard` itself when nothing is known): work for
   * shards of one group can travel to that owner together. Learnt from the shards every answering node names in its
   * replies; a hint only, which may be out of date (see `runForShardOf`).
   */
  shardGroupOf(shard: number): number;
  /**
   * Runs `step` for a merchant whose shard this node owns, on behalf of an operation forwarded here for another shard
   * (work grouped by a routing hint): throws what `isNotApplied` recognises when the shard is not ours; the asks it
   * makes with the scope it is given (the operation's `scope`, naming that shard) never wait for a new owner of that
   * shard, and leaving the shard waits for it as for the shard's own requests.
   */
  runForShardOf<T>(merchantId: string, step: (scope: RequestScope) => Promise<T>, scope?: RequestScope): Promise<T>;
}

/**
 * The cluster implementation of ActorRouter (docs/architecture.md, "Cluster"): an actor of an owned shard is asked here; any
 * other is asked through NATS on `gw.shard.<n>`, which only its owner serves. While a shard has no owner (a node
 * died, a hand-over is under way) the ask is retried with backoff until a deadline, then fails as unavailable.
 * A request that timed out is not retried: it may have been applied.
 */
export function createClusterRouter(options: ClusterRouterOptions): ClusterRouter {
  const { hosts, manager, transport } = options;
  const serving = new Map<number, readonly { stop(): Promise<void> }[]>();
  /** Steps of grouped work running for a shard outside its own server (`runForShardOf`): leaving it waits for them. */
  const runningFor = new Map<number, Set<Promise<unknown>>>();
  /** Routing hints: shard → the lowest shard its owner named alongside it. */
  const groupOf = new Map<number, number>();
  function learnOwned(owned: readonly number[]): void {
    if (owned.length === 0) return;
    const lowest = Math.min(...owned);
    for (const shard of owned) groupOf.set(shard, lowest);
  }

  function hostOf(kind: ActorKind): ActorHost<Command, ReplyMap<Command>> {
    const host = kind === 'wallet' ? hosts.wallets : kind === 'apiKey' ? hosts.apiKeys : hosts.messages;
    return host as unknown as ActorHost<Command, ReplyMap<Command>>;
  }

  async function askLocal(kind: ActorKind, id: string, shard: number, command: Command, deadline: number): Promise<unknown> {
    try {
      return await hostOf(kind).ref(id, shard).ask(command, { deadline });
    } catch (error) {
      // our lease went away under us: the command was not applied, its new owner will take it
      if (error instanceof ActorFailureError && error.reason === 'fenced') throw new NotApplied(error.message);
      throw error;
    }
  }

  async function askRemote(target: string, shard: number, request: ShardRequest, deadline: number, scope: RequestScope): Promise<unknown> {
    const started = process.hrtime.bigint();
    recordRemoteHop(scope);
    let answered: unknown;
    // the owner takes the command by its deadline or refuses it; one it took is waited for up to the timeout again
    const waitMs = Math.max(1, deadline - options.clock.now()) + options.requestTimeoutMs;
    try {
      answered = await requestOwner(shard, { ...request, deadline }, waitMs);
    } catch (error) {
      if (error instanceof NoResponderError) throw new NotApplied(error.message);
      if (error instanceof RequestTimeoutError) throw new AbortError(new ActorFailureError(target, 'timeout', error.message));
      throw error;
    } finally {
      options.onRemoteHop?.(
        Number(process.hrtime.bigint() - started) / 1e9,
        request.kind === 'operation' ? request.name : `ask:${request.kind}`,
      );
    }
    const reply = shardReplyOf(answered, options.shards);
    if (reply === null)
      throw new AbortError(
        new ActorFailureError(target, 'unavailable', `shard ${shard} answered with something that is not a shard reply`),
      );
    if (reply.outcome === 'ok') {
      // a node from before the hints (a rolling upgrade) names none and serves only its own shard's items: no grouping
      if (reply.owned) learnOwned(reply.owned);
      else groupOf.clear();
      return reply.value;
    }
    if (reply.outcome === 'not_owner' || (reply.outcome === 'failed' && reply.reason === 'fenced')) {
      groupOf.delete(shard);
      throw new NotApplied(`shard ${shard} changed hands`);
    }
    if (reply.outcome === 'refused') throw new AbortError(new Error(`shard ${shard} refused a malformed request: ${reply.detail}`));
    throw new AbortError(new ActorFailureError(target, reply.reason, reply.detail));
  }

  /**
   * To the owner the lease table names, on its own subject: a former owner still in the shard's queue group (frozen,
   * its connection not yet dropped by NATS) is never handed it. Nobody there (the table is a round old, or the owner
   * runs a version without owner subjects): the shard's queue group, in the same attempt.
   */
  async function requestOwner(shard: number, payload: ShardRequest, waitMs: number): Promise<unknown> {
    const owner = manager.ownerOf(shard);
    if (owner !== null && owner !== options.nodeId) {
      try {
        return await patientRequest(ownerShardSubject(shard, owner), payload, waitMs);
      } catch (error) {
        if (!(error instanceof NoResponderError)) throw error;
      }
    }
    return patientRequest(shardSubject(shard), payload, waitMs);
  }

  /**
   * A request given up after `waitMs` of this process's running time: after a freeze, a reply the owner sent
   * meanwhile is read rather than lost to a timer that fired first. The transport's own timeout is a backstop.
   */
  function patientRequest(subject: string, payload: ShardRequest, waitMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const cancel = patientTimer(options.clock, waitMs, () => {
        reject(new RequestTimeoutError(subject));
      });
      transport.request(subject, payload, waitMs * PATIENCE_BACKSTOP).then(
        (value) => {
          cancel();
          resolve(value);
        },
        (error: unknown) => {
          cancel();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  async function ask(
    kind: ActorKind,
    merchantId: string,
    id: string,
    command: Command,
    askOptions: AskOptions | undefined,
  ): Promise<unknown> {
    const target = `${kind}:${id}`;
    const scope = askOptions?.scope ?? NO_SCOPE;
    return routed(
      merchantId,
      target,
      (shard, deadline) => askLocal(kind, id, shard, command, deadline),
      (shard, deadline) => askRemote(target, shard, { kind, id, command }, deadline, scope),
      askOptions?.deadline,
      scope,
    );
  }

  const operationHandlers = new Map<string, OperationHandler>();

  async function runOperation(name: string, merchantId: string, operation: unknown, scope: RequestScope): Promise<unknown> {
    const handler = operationHandlers.get(name);
    if (!handler) throw new NotApplied(`this node does not serve ${name} operations yet`);
    return handler(merchantId, operation, scope);
  }

  function forward(name: string, merchantId: string, operation: unknown, scope: RequestScope = NO_SCOPE): Promise<unknown> {
    const target = `${name} of ${merchantId}`;
    return routed(
      merchantId,
      target,
      (_shard, deadline) => runOperation(name, merchantId, operation, { ...scope, deadline }),
      (shard, deadline) => askRemote(target, shard, { kind: 'operation', name, merchantId, operation }, deadline, scope),
      scope.deadline ?? undefined,
      scope,
    );
  }

  /**
   * One step for a merchant's shard: `local` when this node owns it, `remote` otherwise; while the shard has no owner
   * (nothing applied), tried again until the failover deadline or the request's own.
   */
  async function routed(
    merchantId: string,
    target: string,
    local: (shard: number, deadline: number) => Promise<unknown>,
    remote: (shard: number, deadline: number) => Promise<unknown>,
    explicitDeadline: number | undefined,
    scope: RequestScope,
  ): Promise<unknown> {
    const shard = shardOf(merchantId, options.shards);
    // each attempt carries the request's deadline, or its own askTimeout from the attempt, whichever comes first
    const attemptDeadline = () => explicitDeadline ?? askDeadline(options.clock.now(), options.requestTimeoutMs, scope.deadline);
    const attempt = () => (manager.owns(shard) ? local : remote)(shard, attemptDeadline());
    // the common case, an owned shard, goes straight to the actor; the retry loop is for hand-overs and failovers
    if (manager.owns(shard)) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof NotApplied)) throw error;
      }
    }
    // serving an operation another node forwarded for this shard, which this node no longer holds: the forwarder
    // finds the new owner itself. Waiting here would hold up this node's hand-over of the shard (its server waits for
    // the operations in flight), the very thing the wait would be waiting for.
    if (scope.forwardedShard === shard) throw new NotApplied(`shard ${shard} left this node while serving a forwarded operation`);
    // waiting for an owner stops at the failover deadline, or at the request's own deadline if sooner
    const request = explicitDeadline ?? scope.deadline;
    const retryMs = Math.min(options.failoverDeadlineMs, request === null ? Infinity : request - options.clock.now());
    try {
      return await pRetry(attempt, {
        retries: 1_000,
        minTimeout: 25,
        maxTimeout: 500,
        factor: 1.6,
        maxRetryTime: Math.max(0, retryMs),
        shouldRetry: ({ error }) => error instanceof NotApplied,
      });
    } catch (error) {
      if (error instanceof NotApplied) throw new ActorFailureError(target, 'unavailable', `shard ${shard} has no owner: ${error.message}`);
      throw error;
    }
  }

  function ref<C extends Command, RM extends ReplyMap<C>>(kind: ActorKind, merchantId: string, id: string): ActorRef<C, RM> {
    return {
      key: `${kind}:${id}`,
      ask: (command, askOptions) => ask(kind, merchantId, id, command, askOptions) as Promise<never>,
    };
  }

  /** The shards this node holds, encoded once per change (every gain and loss passes through serveShard / leaveShard). */
  let ownedOnWire: string | null = null;
  /** An answer off to the wire, with the shards this node holds now (the requester's routing hint). */
  const ok = (value: unknown): WireReply => ({
    outcome: 'ok',
    value,
    owned: (ownedOnWire ??= encodeShardSet(manager.ownedShards(), options.shards)),
  });

  async function answer(shard: number, payload: unknown): Promise<WireReply> {
    if (!manager.owns(shard)) return { outcome: 'not_owner' };
    const request = shardRequestOf(payload);
    if (request === null) return { outcome: 'refused', detail: 'not a shard request' };
    try {
      if (request.kind === 'operation') {
        if (shardOf(request.merchantId, options.shards) !== shard) return { outcome: 'refused', detail: `merchant not in shard ${shard}` };
        const deadline = request.deadline ?? askDeadline(options.clock.now(), options.requestTimeoutMs);
        const { name, merchantId, operation } = request;
        return ok(await runOperation(name, merchantId, operation, { deadline, forwardedShard: shard }));
      }
      const host = hostOf(request.kind);
      if (!host.handles(request.command.type))
        return { outcome: 'refused', detail: `${request.kind} has no command ${JSON.stringify(request.command.type)}` };
      // a requester from before deadlines sends none: the command then gets this node's default
      const deadline = typeof request.deadline === 'number' ? { deadline: request.deadline } : {};
      return ok(await host.ref(request.id, shard).ask(request.command, deadline));
    } catch (error) {
      if (error instanceof NotApplied) return { outcome: 'not_owner' };
      if (error instanceof ActorFailureError) return { outcome: 'failed', reason: error.reason, detail: error.message };
      throw error;
    }
  }

  return {
    wallet: (merchantId) => ref('wallet', merchantId, merchantId),
    apiKey: (merchantId, keyId) => ref('apiKey', merchantId, keyId),
    message: (merchantId, messageId) => ref('message', merchantId, messageId),
    shardOf: (merchantId) => shardOf(merchantId, options.shards),
    forward,
    ownsMerchant: (merchantId) => manager.owns(shardOf(merchantId, options.shards)),
    handleOperations(name, handler) {
      operationHandlers.set(name, handler);
    },
    shardGroupOf: (shard) => groupOf.get(shard) ?? shard,
    async runForShardOf(merchantId, step, scope = NO_SCOPE) {
      const shard = shardOf(merchantId, options.shards);
      if (!manager.owns(shard)) throw new NotApplied(`shard ${shard} is not this node's`);
      const running = step({ ...scope, forwardedShard: shard });
      const tracked = runningFor.get(shard) ?? new Set<Promise<unknown>>();
      runningFor.set(shard, tracked);
      tracked.add(running);
      try {
        return await running;
      } finally {
        tracked.delete(running);
        if (tracked.size === 0 && runningFor.get(shard) === tracked) runningFor.delete(shard);
      }
    },
    async serveShard(shard) {
      ownedOnWire = null;
      if (serving.has(shard)) return;
      const handler = (payload: unknown) => answer(shard, payload);
      const started = await Promise.allSettled([
        transport.serve(shardSubject(shard), handler),
        transport.serve(ownerShardSubject(shard, options.nodeId), handler),
      ]);
      const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      const failed = started.find((result) => result.status === 'rejected');
      if (failed) {
        // both subjects or neither: a subscription kept here would be stopped by no leaveShard
        await Promise.allSettled(servers.map((server) => server.stop()));
        throw failed.reason;
      }
      serving.set(shard, servers);
    },
    async leaveShard(shard) {
      ownedOnWire = null;
      const servers = serving.get(shard) ?? [];
      serving.delete(shard);
      await Promise.all(servers.map((server) => server.stop()));
      // grouped work for this shard that arrived in another shard's requests (it fails fast now that the shard is gone)
      const grouped = runningFor.get(shard);
      if (grouped) await Promise.allSettled([...grouped]);
      const inShard = (_id: string, actorShard: number) => actorShard === shard;
      hosts.wallets.passivate(inShard);
      hosts.apiKeys.passivate(inShard);
      hosts.messages.passivate(inShard);
      hosts.keyWebhooks.forgetShard(shard);
    },
  };
}
