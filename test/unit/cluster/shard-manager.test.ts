import { expect } from 'chai';
import sinon from 'sinon';
import { createLeaseRenewal, type LeaseRenewal } from '../../../src/cluster/lease-renewal.js';
import { createShardManager, type ShardChanges, type ShardManager } from '../../../src/cluster/shard-manager.js';
import { shardRanges } from '../../../src/cluster/shards.js';
import type { LeaseStore } from '../../../src/libraries/persistence/lease-port.js';
import { createMemoryLeases } from '../../helpers/memory-leases.js';

const SHARDS = 4;
const TTL_MS = 3_000;
const TOLERANCE_MS = 9_000;

interface Node {
  readonly manager: ShardManager;
  readonly acquired: number[];
  readonly lost: { shard: number; why: string }[];
  /** Each report of a round that changed something. */
  readonly rounds: ShardChanges[];
}

function node(nodeId: string, leases: LeaseStore, renewal?: LeaseRenewal, whileLosing?: (shard: number) => void): Node {
  const acquired: number[] = [];
  const lost: { shard: number; why: string }[] = [];
  const rounds: ShardChanges[] = [];
  const manager = createShardManager({
    nodeId,
    shards: SHARDS,
    leases,
    ttlMs: TTL_MS,
    onAcquired: (shard) => {
      acquired.push(shard);
      return Promise.resolve();
    },
    onLost: (shard, why) => {
      lost.push({ shard, why });
      whileLosing?.(shard);
      return Promise.resolve();
    },
    onRebalanced: (changes) => rounds.push(changes),
    ...(renewal
      ? {
          renewer: () =>
            Promise.resolve({
              hold: (held) => {
                renewal.hold(held);
              },
              stop: () => Promise.resolve(),
            }),
        }
      : {}),
  });
  return { manager, acquired, lost, rounds };
}

describe('shard manager: leases under load and while stopping', () => {
  let clock: sinon.SinonFakeTimers;
  let leases: ReturnType<typeof createMemoryLeases>;
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    leases = createMemoryLeases(() => Date.now());
  });
  afterEach(() => {
    clock.restore();
  });

  /** a and b sharing the shards two and two. */
  async function twoNodes(): Promise<{ a: Node; b: Node }> {
    const a = node('a', leases.store);
    const b = node('b', leases.store);
    await a.manager.start();
    await b.manager.start(); // b is live: a is over its share
    await a.manager.tick(); // a hands two over
    await b.manager.tick(); // b takes them
    expect(a.manager.ownedShards()).to.have.length(2);
    expect(b.manager.ownedShards()).to.have.length(2);
    return { a, b };
  }

  /** The main thread does nothing for `ms` (no timer fires): the clock jumps. */
  function stall(ms: number): void {
    clock.setSystemTime(Date.now() + ms);
  }

  it('when a node has begun to stop and the other node leaves, then it takes none of the freed shards and keeps renewing its own', async () => {
    const { a, b } = await twoNodes();
    const mine = a.manager.ownedShards();
    const acquiredBefore = a.acquired.length;

    a.manager.stopAcquiring();
    await b.manager.stop(); // hands its shards over and leaves: a is alone
    await a.manager.tick();
    stall(TTL_MS - 1);
    await a.manager.tick();
    stall(TTL_MS - 1);
    await a.manager.tick();

    expect(a.manager.ownedShards()).to.deep.equal(mine);
    expect(a.acquired).to.have.length(acquiredBefore);
    expect(leases.heldBy('a'), 'its own leases, renewed past their first expiry').to.deep.equal(mine);
    await a.manager.stop();
    expect(leases.heldBy('a')).to.deep.equal([]);
  });

  it('when the stop begins while an acquisition is under way, then the shards won are given back without being served', async () => {
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowAcquire: LeaseStore = {
      ...leases.store,
      acquire: async (...args) => {
        await gate;
        return leases.store.acquire(...args);
      },
    };
    const a = node('a', slowAcquire);

    const starting = a.manager.start();
    await clock.tickAsync(0);
    a.manager.stopAcquiring(); // the crash arrives while the acquire statement runs
    release();
    await starting;

    expect(a.acquired).to.deep.equal([]);
    expect(a.manager.ownedShards()).to.deep.equal([]);
    expect(leases.heldBy('a'), 'released at once').to.deep.equal([]);
    await a.manager.stop();
  });

  it('when its main thread stalls for twice the TTL while the renewal runs, then the node keeps every shard at the same epoch and nobody takes one', async () => {
    const renewal = createLeaseRenewal({
      nodeId: 'a',
      leases: leases.store,
      ttlMs: TTL_MS,
      stallToleranceMs: TOLERANCE_MS,
      now: () => Date.now(),
    });
    const a = node('a', leases.store, renewal);
    await a.manager.start();
    expect(a.manager.ownedShards()).to.deep.equal([0, 1, 2, 3]);
    const epochs = await leases.store.list();
    const b = node('b', leases.store);

    // the stall: a's timers do not fire, only its renewal thread renews every third of the TTL
    for (let elapsed = 0; elapsed < 2 * TTL_MS; elapsed += TTL_MS / 3) {
      stall(TTL_MS / 3);
      expect(await renewal.renew()).to.have.property('renewed');
      await b.manager.tick(); // a survivor looking for expired shards meanwhile
    }

    expect(b.manager.ownedShards()).to.deep.equal([]);
    expect(await leases.store.list(), 'the same owner and epochs, renewed').to.deep.equal(
      epochs.map((lease) => ({ ...lease, expiresAt: Date.now() + TTL_MS })),
    );
    await a.manager.tick(); // the main thread wakes: it lost nothing (it may hand shards over to b, now live)
    expect(a.lost.filter((l) => l.why === 'expired')).to.deep.equal([]);
    expect(a.manager.ownedShards().length).to.be.at.least(SHARDS / 2);
  });

  it('when its main thread stalls past the TTL with no renewal beside it, then its shards expire and a survivor takes them under new epochs', async () => {
    const a = node('a', leases.store);
    await a.manager.start();
    const b = node('b', leases.store);
    await b.manager.start();

    stall(TTL_MS + 1);
    await b.manager.tick();
    await a.manager.tick();

    expect(a.lost.map((l) => l.why)).to.deep.equal(['expired', 'expired', 'expired', 'expired']);
    expect(b.manager.ownedShards()).to.deep.equal([0, 1, 2, 3]);
    expect((await leases.store.list()).map((lease) => [lease.owner, lease.epoch])).to.deep.equal(
      Array.from({ length: SHARDS }, () => ['b', 2]),
    );
  });

  it('when its main thread is silent past the tolerance (wedged), then the renewal stops and a survivor takes its shards after the TTL', async () => {
    const renewal = createLeaseRenewal({
      nodeId: 'a',
      leases: leases.store,
      ttlMs: TTL_MS,
      stallToleranceMs: TOLERANCE_MS,
      now: () => Date.now(),
    });
    const a = node('a', leases.store, renewal);
    await a.manager.start();
    const b = node('b', leases.store);

    let elapsed = 0;
    const outcomes: string[] = [];
    while (b.manager.ownedShards().length === 0) {
      stall(TTL_MS / 3);
      elapsed += TTL_MS / 3;
      const outcome = await renewal.renew();
      outcomes.push('skipped' in outcome ? 'skipped' : 'renewed');
      await b.manager.tick();
      expect(elapsed, 'taken over within the tolerance, the TTL and a tick').to.be.at.most(TOLERANCE_MS + TTL_MS + TTL_MS / 3);
    }

    expect(outcomes.slice(0, 9)).to.deep.equal(Array<string>(9).fill('renewed'));
    expect(outcomes.slice(9)).to.include('skipped').and.not.include('renewed');
    expect(elapsed).to.be.greaterThan(TOLERANCE_MS + TTL_MS - TTL_MS / 3);
    await a.manager.tick(); // it wakes: the shards are gone
    expect(a.manager.ownedShards()).to.deep.equal([]);
    expect(a.lost.map((l) => l.why)).to.deep.equal(['expired', 'expired', 'expired', 'expired']);
  });

  it('reports each round that changed its shards once, with every shard it took, handed over or lost, and none for a round that changed nothing', async () => {
    const a = node('a', leases.store);
    await a.manager.start();
    expect(a.rounds, 'the initial acquisition: one report').to.deep.equal([
      { acquired: [0, 1, 2, 3], handedOver: [], expired: [], owned: 4 },
    ]);
    await a.manager.tick();
    expect(a.rounds, 'a renewal only').to.have.length(1);

    const b = node('b', leases.store);
    await b.manager.start(); // live, but every shard is a's
    await a.manager.tick(); // a hands two over
    await b.manager.tick(); // b takes them
    expect(a.rounds.slice(1)).to.deep.equal([{ acquired: [], handedOver: [2, 3], expired: [], owned: 2 }]);
    expect(b.rounds).to.deep.equal([{ acquired: [2, 3], handedOver: [], expired: [], owned: 2 }]);

    stall(TTL_MS + 1); // a's leases run out; b's too, but b renews first and takes a's
    await b.manager.tick();
    await a.manager.tick();
    expect(a.rounds.slice(2)).to.deep.equal([{ acquired: [], handedOver: [], expired: [0, 1], owned: 0 }]);

    await b.manager.stop();
    expect(b.rounds.at(-1), 'the stop: one report of the whole hand-over').to.deep.equal({
      acquired: [],
      handedOver: [0, 1, 2, 3],
      expired: [],
      owned: 0,
    });
  });

  it('when a node stops, then each lease is released as soon as its shard’s actors stopped, before the next shard’s stop', async () => {
    const heldWhileStopping: number[][] = [];
    const a = node('a', leases.store, undefined, () => heldWhileStopping.push(leases.heldBy('a')));
    await a.manager.start();
    await a.manager.stop();
    // a stop that takes long would otherwise leave the stopped shards unrenewed until the last one, and let them lapse
    expect(heldWhileStopping).to.deep.equal([[0, 1, 2, 3], [1, 2, 3], [2, 3], [3]]);
    expect(leases.heldBy('a')).to.deep.equal([]);
  });

  it('when a node hands its excess over, then each lease is released as soon as its shard’s actors stopped', async () => {
    const heldWhileHandingOver: number[][] = [];
    const a = node('a', leases.store, undefined, () => heldWhileHandingOver.push(leases.heldBy('a')));
    await a.manager.start();
    const b = node('b', leases.store);
    await b.manager.start();
    await a.manager.tick(); // over its share: hands 3, then 2, over
    expect(heldWhileHandingOver).to.deep.equal([
      [0, 1, 2, 3],
      [0, 1, 2],
    ]);
    expect(leases.heldBy('a')).to.deep.equal([0, 1]);
  });

  it('when a release fails while stopping, then every shard’s actors still stop, the failure is reported once, and no other release is tried', async () => {
    const releases: number[][] = [];
    const failing: LeaseStore = {
      ...leases.store,
      release: (nodeId, shards) => {
        releases.push([...shards]);
        return Promise.reject(new Error('database unavailable'));
      },
    };
    const errors: unknown[] = [];
    const manager = createShardManager({
      nodeId: 'a',
      shards: SHARDS,
      leases: failing,
      ttlMs: TTL_MS,
      onAcquired: () => Promise.resolve(),
      onLost: () => Promise.resolve(),
      onError: (error) => errors.push(error),
    });
    await manager.start();
    await manager.stop();
    expect(manager.ownedShards()).to.deep.equal([]);
    expect(releases, 'the first shard only').to.deep.equal([[0]]);
    expect(errors.map((error) => (error instanceof Error ? error.message : error))).to.deep.equal(['database unavailable']);
  });

  it("when nodes take shards, then each names every shard's holder as of its last round: its own at once, another's once it has run a round since", async () => {
    const { a, b } = await twoNodes();
    const ofA = a.manager.ownedShards();
    const ofB = b.manager.ownedShards();
    // a's last round came before b took its two shards: a still names itself, the releaser, for them
    await a.manager.tick();
    for (const shard of ofA) expect(a.manager.ownerOf(shard), `shard ${shard} on a`).to.equal('a');
    for (const shard of ofB) expect(a.manager.ownerOf(shard), `shard ${shard} on a`).to.equal('b');
    for (const shard of ofA) expect(b.manager.ownerOf(shard), `shard ${shard} on b`).to.equal('a');
    for (const shard of ofB) expect(b.manager.ownerOf(shard), `shard ${shard} on b`).to.equal('b');
  });

  it('when b dies and a takes its shards, then a names itself for them; before its round it still named b', async () => {
    const { a, b } = await twoNodes();
    const ofB = b.manager.ownedShards();
    await a.manager.tick();
    for (const shard of ofB) expect(a.manager.ownerOf(shard)).to.equal('b');
    // b stops renewing (killed): its leases and its heartbeat expire (a's too; a takes every shard in its round)
    stall(TTL_MS + 1);
    await a.manager.tick();
    for (const shard of ofB) expect(a.manager.ownerOf(shard), `shard ${shard}`).to.equal('a');
  });

  it('when a round acquires shards, then it announces them once, with their epochs, after serving them; a round that acquires none announces nothing', async () => {
    const steps: string[] = [];
    const announcing = (nodeId: string): ShardManager =>
      createShardManager({
        nodeId,
        shards: SHARDS,
        leases: leases.store,
        ttlMs: TTL_MS,
        onAcquired: (shard) => {
          steps.push(`${nodeId} serves ${shard}`);
          return Promise.resolve();
        },
        onLost: () => Promise.resolve(),
        announce: (acquired) => steps.push(`${nodeId} announces ${JSON.stringify(acquired)}`),
      });
    const a = announcing('a');
    const b = announcing('b');
    await a.start();
    expect(steps.splice(0)).to.deep.equal([
      'a serves 0',
      'a serves 1',
      'a serves 2',
      'a serves 3',
      'a announces [{"shard":0,"epoch":1},{"shard":1,"epoch":1},{"shard":2,"epoch":1},{"shard":3,"epoch":1}]',
    ]);
    await b.start(); // nothing free: b takes none
    await a.tick(); // a hands two over, takes none
    expect(steps.splice(0), 'rounds that acquired nothing').to.deep.equal([]);
    await b.tick();
    expect(steps.splice(0)).to.deep.equal(['b serves 2', 'b serves 3', 'b announces [{"shard":2,"epoch":2},{"shard":3,"epoch":2}]']);
    await a.stop();
    await b.stop();
  });

  it('when another node announces shards it acquired, then this node names it their holder at once, and an older epoch heard later does not take that back', async () => {
    const { a, b } = await twoNodes();
    await a.manager.tick();
    const [shard] = b.manager.ownedShards();
    const epoch = (await leases.store.list()).find((lease) => lease.shard === shard)!.epoch;
    expect(a.manager.ownerOf(shard!)).to.equal('b');
    a.manager.learn('c', [{ shard: shard!, epoch: epoch + 1 }]);
    expect(a.manager.ownerOf(shard!), 'the announcement, before any round').to.equal('c');
    a.manager.learn('b', [{ shard: shard!, epoch }]);
    expect(a.manager.ownerOf(shard!), 'an older epoch heard later').to.equal('c');
    a.manager.learn('d', [{ shard: SHARDS, epoch: 99 }]);
    a.manager.learn('d', [{ shard: -1, epoch: 99 }]);
    for (let other = 0; other < SHARDS; other++) expect(a.manager.ownerOf(other), `shard ${other}`).to.not.equal('d');
    // its own shards stay its own whatever it hears: only the lease decides, at its next renewal
    const [own] = a.manager.ownedShards();
    a.manager.learn('c', [{ shard: own!, epoch: 99 }]);
    expect(a.manager.ownerOf(own!)).to.equal('a');
  });

  it('when a notice is heard while a read of the holders is under way, then that read keeps it; a read begun after it has the last word', async () => {
    const { b } = await twoNodes();
    const [shard] = b.manager.ownedShards();
    const epoch = (await leases.store.list()).find((lease) => lease.shard === shard)!.epoch;
    let gate: Promise<void> | null = null;
    let open = (): void => undefined;
    let listing = (): void => undefined;
    const observer = createShardManager({
      nodeId: 'o',
      shards: SHARDS,
      leases: {
        ...leases.store,
        list: async () => {
          const read = await leases.store.list();
          listing();
          if (gate) await gate;
          return read;
        },
      },
      ttlMs: TTL_MS,
      onAcquired: () => Promise.resolve(),
      onLost: () => Promise.resolve(),
    });
    await observer.start();
    expect(observer.ownerOf(shard!)).to.equal('b');
    gate = new Promise((resolve) => {
      open = resolve;
    });
    const listed = new Promise<void>((resolve) => {
      listing = resolve;
    });
    const round = observer.tick();
    await listed; // the read has begun (and found b at its epoch)
    observer.learn('c', [{ shard: shard!, epoch: epoch + 1 }]);
    open();
    await round;
    expect(observer.ownerOf(shard!), 'a notice newer than the read under way').to.equal('c');
    gate = null;
    await observer.tick();
    expect(observer.ownerOf(shard!), 'the table, read after the notice (a notice naming a wrong epoch does not outlive it)').to.equal('b');
    await observer.stop();
  });

  it('when a notice names a shard the table never leased, then the next read forgets it', async () => {
    const observer = createShardManager({
      nodeId: 'o',
      shards: SHARDS,
      leases: { ...leases.store, acquire: () => Promise.resolve([]), list: () => Promise.resolve([]) },
      ttlMs: TTL_MS,
      onAcquired: () => Promise.resolve(),
      onLost: () => Promise.resolve(),
    });
    await observer.start();
    observer.learn('c', [{ shard: 1, epoch: 3 }]);
    expect(observer.ownerOf(1)).to.equal('c');
    await observer.tick();
    expect(observer.ownerOf(1)).to.equal(null);
    await observer.stop();
  });

  it('when the database is away, then each round reports one failure, and the holders last read are kept', async () => {
    const { a, b } = await twoNodes();
    await a.manager.tick();
    const ofB = b.manager.ownedShards();
    let away = false;
    const unavailable = () => Promise.reject(new Error('database unavailable'));
    const errors: unknown[] = [];
    const manager = createShardManager({
      nodeId: 'c',
      shards: SHARDS,
      leases: {
        ...leases.store,
        heartbeat: (...args) => (away ? unavailable() : leases.store.heartbeat(...args)),
        list: () => (away ? unavailable() : leases.store.list()),
      },
      ttlMs: TTL_MS,
      onAcquired: () => Promise.resolve(),
      onLost: () => Promise.resolve(),
      onError: (error) => errors.push(error),
    });
    await manager.start();
    away = true;
    await manager.tick();
    await manager.tick();
    expect(errors.map((error) => (error instanceof Error ? error.message : error))).to.deep.equal([
      'database unavailable',
      'database unavailable',
    ]);
    for (const shard of ofB) expect(manager.ownerOf(shard), `shard ${shard}`).to.equal('b');
  });

  it('writes shards as compact ranges', () => {
    expect(shardRanges([])).to.equal('');
    expect(shardRanges([5])).to.equal('5');
    expect(shardRanges([0, 1, 2, 3, 7, 9, 10])).to.equal('0-3, 7, 9-10');
    expect(
      shardRanges([47, 32, 33, ...Array.from({ length: 14 }, (_, i) => 34 + i), 15, 0, ...Array.from({ length: 14 }, (_, i) => 1 + i)]),
    ).to.equal('0-15, 32-47');
  });
});
