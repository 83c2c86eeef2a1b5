import { expect } from 'chai';
import {
  carriersCheck,
  carriersDown,
  createCarrierMonitor,
  pricingCarriers,
  routedCarriers,
} from '../../../src/carriers/carrier-health.js';
import { freshEntries, groupByCarrier, liveCountByCarrier, parsePresence } from '../../../src/carriers/connector/presence-reader.js';
import { PRESENCE_TTL_MS, presenceKey } from '../../../src/carriers/connector/connector-presence.js';
import { healthStatus } from '../../../src/entry-points/http/app/health.js';
import { NO_NAMESPACE } from '../../../src/libraries/transport/nats-names.js';
import { carrierViews, renderCarrierStatus } from '../../../src/entry-points/cli/carrier-commands.js';
import { presenceEntry } from '../../helpers/presence.js';

const NOW = Date.parse('2026-03-01T10:00:00.000Z');
const at = (msAgo: number): string => new Date(NOW - msAgo).toISOString();

describe('carrier health', () => {
  describe('routedCarriers', () => {
    it('in the sandbox, is the simulator only, whatever the pricing rows name', () => {
      expect(routedCarriers('sandbox', ['vodacom-cd'], 'acme', 'simulator')).to.deep.equal(['simulator']);
    });

    it('in production, is the pricing rows’ carriers and the default carrier, once each, sorted', () => {
      expect(routedCarriers('production', ['orange-fr', 'acme', 'airtel-cd', 'orange-fr'], 'acme', 'simulator')).to.deep.equal([
        'acme',
        'airtel-cd',
        'orange-fr',
      ]);
    });
  });

  it('pricingCarriers collects the carriers of every merchant’s rows', async () => {
    const rows: Record<string, { carrier: string }[]> = {
      a: [{ carrier: 'x' }, { carrier: 'y' }],
      b: [{ carrier: 'y' }, { carrier: 'z' }],
      c: [],
    };
    const directory = {
      merchants: () => Promise.resolve(Object.keys(rows).map((id) => ({ id }))),
      pricing: (id: string) => Promise.resolve(rows[id] ?? []),
    };
    expect(await pricingCarriers(directory as unknown as Parameters<typeof pricingCarriers>[0])).to.deep.equal(['x', 'y', 'z']);
  });

  describe('carriersCheck', () => {
    it('is down for a routed carrier without live connector, ok with its count otherwise, and adds announced carriers', () => {
      const check = carriersCheck(
        ['b', 'a'],
        new Map([
          ['a', 2],
          ['other', 1],
          ['gone', 0],
        ]),
      );
      expect(check).to.deep.equal({
        a: { status: 'ok', connectors: 2 },
        b: { status: 'down', connectors: 0 },
        other: { status: 'ok', connectors: 1 },
      });
      expect(Object.keys(check)).to.deep.equal(['a', 'b', 'other']);
      expect(carriersDown(check)).to.deep.equal(['b']);
    });
  });

  describe('createCarrierMonitor without NATS', () => {
    const monitor = (inProcess: readonly string[]) =>
      createCarrierMonitor({
        routed: () => Promise.resolve(['simulator', 'other']),
        nats: null,
        names: NO_NAMESPACE,
        inProcess,
        now: () => NOW,
        onError: () => undefined,
      });

    it('counts the in-process simulator as one live connector, and knows no backlog', async () => {
      const carriers = monitor(['simulator']);
      await carriers.start();
      try {
        expect(carriers.check()).to.deep.equal({ other: { status: 'down', connectors: 0 }, simulator: { status: 'ok', connectors: 1 } });
        expect(carriers.samples()).to.deep.equal([
          { carrier: 'other', connectorsLive: 0, dispatchBacklog: null },
          { carrier: 'simulator', connectorsLive: 1, dispatchBacklog: null },
        ]);
      } finally {
        await carriers.stop();
      }
    });

    it('reports no carrier when it can see no connector at all (no NATS, nothing in process)', async () => {
      const carriers = monitor([]);
      await carriers.start();
      try {
        expect(carriers.check()).to.deep.equal({});
      } finally {
        await carriers.stop();
      }
    });
  });

  describe('healthStatus', () => {
    const report = (healthy: boolean, carriers: Record<string, { status: 'ok' | 'down'; connectors: number }>) => ({
      healthy,
      checks: { database: healthy ? ('ok' as const) : ('down' as const), transport: 'ok' as const, carriers },
    });

    it('is ok when healthy with every carrier ok, degraded when a carrier is down or the node is unhealthy', () => {
      expect(healthStatus(report(true, { a: { status: 'ok', connectors: 1 } }))).to.equal('ok');
      expect(healthStatus(report(true, {}))).to.equal('ok');
      expect(healthStatus(report(true, { a: { status: 'ok', connectors: 1 }, b: { status: 'down', connectors: 0 } }))).to.equal('degraded');
      expect(healthStatus(report(false, { a: { status: 'ok', connectors: 1 } }))).to.equal('degraded');
    });
  });

  describe('presence entries', () => {
    it('parsePresence takes an entry under its own key and refuses a wrong key, a wrong version or a missing figure', () => {
      const entry = presenceEntry('vodacom-cd', 'smpp-primary');
      const key = presenceKey(entry.carrier, entry.connector_id);
      expect(parsePresence(key, entry)).to.deep.equal(entry);
      expect(parsePresence(presenceKey('other', entry.connector_id), entry)).to.equal(null);
      expect(parsePresence(key, { ...entry, version: 2 })).to.equal(null);
      const { binds_up: _omitted, ...withoutBinds } = entry;
      expect(parsePresence(key, withoutBinds)).to.equal(null);
      expect(parsePresence(key, { ...entry, updated_at: 'yesterday' })).to.equal(null);
      expect(parsePresence(key, 'text')).to.equal(null);
    });

    it('an entry older than the TTL is not fresh; a not-live entry is fresh but not counted live', () => {
      const fresh = presenceEntry('a', 'one', { updated_at: at(PRESENCE_TTL_MS) });
      const stale = presenceEntry('a', 'two', { updated_at: at(PRESENCE_TTL_MS + 1) });
      const down = presenceEntry('a', 'three', { live: false, active: false, updated_at: at(0) });
      expect(freshEntries([fresh, stale, down], NOW)).to.deep.equal([fresh, down]);
      expect(liveCountByCarrier([fresh, stale, down], NOW)).to.deep.equal(new Map([['a', 1]]));
    });

    it('groupByCarrier orders each carrier’s connectors by priority, then name', () => {
      const second = presenceEntry('a', 'b-name', { priority: 1, updated_at: at(0) });
      const firstB = presenceEntry('a', 'z-name', { priority: 0, updated_at: at(0) });
      const firstA = presenceEntry('a', 'a-name', { priority: 0, updated_at: at(0) });
      const other = presenceEntry('b', 'x', { updated_at: at(0) });
      const grouped = groupByCarrier([second, firstB, other, firstA], NOW);
      expect(grouped.get('a')?.map((e) => e.name)).to.deep.equal(['a-name', 'z-name', 'b-name']);
      expect(grouped.get('b')?.map((e) => e.name)).to.deep.equal(['x']);
    });
  });

  describe('carriers status views', () => {
    it('lists each routed carrier, says "no live connector" for one without, and shows connectors and backlog', () => {
      const primary = presenceEntry('vodacom-cd', 'smpp-primary', { updated_at: at(1_500) });
      const standby = presenceEntry('vodacom-cd', 'smpp-backup', {
        priority: 1,
        active: false,
        binds_up: 1,
        window_in_use: 0,
        submits_per_second: 0,
        updated_at: at(500),
      });
      const views = carrierViews(
        ['airtel-cd', 'vodacom-cd'],
        [primary, standby],
        new Map([
          ['airtel-cd', 12],
          ['vodacom-cd', 3],
        ]),
        NOW,
      );
      expect(views.map((v) => [v.carrier, v.live_connectors, v.dispatch_backlog, v.connectors.length])).to.deep.equal([
        ['airtel-cd', 0, 12, 0],
        ['vodacom-cd', 2, 3, 2],
      ]);
      expect(views[1]?.connectors[0]).to.include({
        name: 'smpp-primary',
        age_ms: 1_500,
        binds_up: 2,
        binds_total: 2,
        window_in_use: 3,
        window_size: 10,
      });
      const text = renderCarrierStatus(views, [['Environment', 'production']]);
      expect(text).to.include('airtel-cd: no live connector, backlog 12');
      expect(text).to.include('vodacom-cd: 2 live, backlog 3');
      expect(text).to.match(/smpp-primary\s+smpp\s+0\s+1\s+active\s+2\/2\s+3\/10\s+12\.5\s+1\.5s/);
      expect(text).to.match(/smpp-backup\s+smpp\s+1\s+1\s+standby\s+1\/2\s+0\/10\s+0\s+0\.5s/);
    });

    it('marks a carrier that is announced but not routed, and a carrier with jobs waiting but nobody routing to it any more', () => {
      const views = carrierViews(
        ['a'],
        [presenceEntry('b', 'x', { updated_at: at(0) })],
        new Map([
          ['a', 0],
          ['old', 4],
        ]),
        NOW,
      );
      expect(views.map((v) => [v.carrier, v.routed])).to.deep.equal([
        ['a', true],
        ['b', false],
        ['old', false],
      ]);
      expect(renderCarrierStatus(views, [['Mode', 'server']])).to.include('b (not routed): 1 live, backlog 0');
    });
  });
});
