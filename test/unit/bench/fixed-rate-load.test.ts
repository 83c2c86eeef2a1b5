import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runFixedRate, summarizeRun } from '../../../scripts/bench/fixed-rate-load.js';

type Handler = (req: IncomingMessage, res: ServerResponse, index: number) => void;

/** A loopback server that hands the nth request to `handler` and notes when each arrived. */
async function receiver(handler: Handler): Promise<{ url: string; arrivals: number[]; server: Server }> {
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    const index = arrivals.push(performance.now()) - 1;
    req.resume();
    req.on('end', () => {
      handler(req, res, index);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/send`, arrivals, server };
}

const close = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => {
      resolve();
    });
  });

describe('bench:api fixed-rate load generator', () => {
  it('spreads rate × duration requests over the duration instead of sending them as one burst', async () => {
    const { url, arrivals, server } = await receiver((_req, res) => res.end('{}'));
    try {
      const before = performance.now();
      const summary = await runFixedRate({ url, method: 'POST', headers: {}, body: '{}', rate: 200, durationS: 0.25, connections: 8 });
      expect(summary.requests.total).to.equal(50);
      expect(summary.errors).to.equal(0);
      expect(summary.non2xx).to.equal(0);
      // the 50th is due 49 × 5 ms after the run started, so it cannot arrive sooner however slow the machine (a lower
      // bound only: load makes it later, never earlier); one burst would have arrived within a few milliseconds
      const last = arrivals[arrivals.length - 1] ?? Number.NaN;
      expect(last - before).to.be.at.least(245);
    } finally {
      await close(server);
    }
  });

  it('counts a stall against every request that was due during it (latency from when each was due)', async () => {
    // the first answer takes 300 ms; with one connection the requests due at 10, 20 … 190 ms wait behind it, so each
    // was late by at least 110 ms even though the server answered it at once
    const { url, server } = await receiver((_req, res, index) => {
      if (index === 0) setTimeout(() => res.end('{}'), 300);
      else res.end('{}');
    });
    try {
      const summary = await runFixedRate({ url, method: 'GET', headers: {}, rate: 100, durationS: 0.2, connections: 1 });
      expect(summary.requests.total).to.equal(20);
      expect(summary.latency.p50).to.be.at.least(110);
      // all of them were due in the run's first second, whose row tells the same
      expect(summary.seconds.map((s) => s.second)).to.deep.equal([0]);
      expect(summary.seconds[0]?.p50).to.be.at.least(110);
      expect(summary.seconds[0]?.max).to.be.at.least(summary.latency.p99);
    } finally {
      await close(server);
    }
  });

  it('counts answers outside 2xx', async () => {
    const { url, server } = await receiver((_req, res) => {
      res.statusCode = 503;
      res.end('{}');
    });
    try {
      const summary = await runFixedRate({ url, method: 'GET', headers: {}, rate: 100, durationS: 0.1, connections: 2 });
      expect(summary.non2xx).to.equal(10);
      expect(summary.requests.total).to.equal(10);
    } finally {
      await close(server);
    }
  });

  it('counts requests that got no answer as errors, and answers none per second', async () => {
    const { url, server } = await receiver((req) => {
      req.socket.destroy();
    });
    try {
      const summary = await runFixedRate({ url, method: 'GET', headers: {}, rate: 100, durationS: 0.1, connections: 2 });
      expect(summary.errors).to.equal(10);
      expect(summary.requests.total).to.equal(0);
      expect(summary.requests.average).to.equal(0);
      expect(summary.seconds).to.deep.equal([]);
    } finally {
      await close(server);
    }
  });

  it('sorts the requests of a run with a warm-up by the second they were due in, and reports the warm-up marked', async () => {
    // the first answer takes 300 ms: whatever the machine's speed, that warm-up request waited at least that long
    const { url, server } = await receiver((_req, res, index) => {
      if (index === 0) setTimeout(() => res.end('{}'), 300);
      else res.end('{}');
    });
    try {
      const summary = await runFixedRate({ url, method: 'GET', headers: {}, rate: 100, durationS: 0.2, warmupS: 1, connections: 1 });
      expect(summary.requests.total).to.equal(20);
      expect(summary.requests.answered).to.equal(120);
      expect(summary.seconds.map((s) => [s.second, s.warmup])).to.deep.equal([
        [0, true],
        [1, false],
      ]);
      expect(summary.seconds[0]?.max).to.be.at.least(300);
      // the summary's percentiles are those of the measured second alone (what they leave out: summarizeRun's tests)
      const measured = summary.seconds[1];
      expect(summary.latency).to.deep.equal({ p50: measured?.p50, p99: measured?.p99 });
    } finally {
      await close(server);
    }
  });

  describe('summary of a run (no network, no clock)', () => {
    // two warm-up seconds of slow answers, then a measured second of fast ones, a hole, and one more
    const warmup = [Array.from({ length: 100 }, (_, i) => 300 - i), Array.from({ length: 100 }, () => 250)];
    const measured = [Array.from({ length: 98 }, (_, i) => 1 + (i % 5)), undefined, [40, 90]];

    it('leaves the warm-up seconds out of the percentiles, the total and the rate, and reports them marked', () => {
      const summary = summarizeRun({ bySecond: [...warmup, ...measured], warmupS: 2, elapsedMs: 4_500, non2xx: 3, errors: 1 });

      expect(summary.requests).to.deep.equal({ total: 100, answered: 300, average: 100 / 2.5 });
      expect(summary.latency).to.deep.equal({ p50: 3, p99: 40 });
      expect(summary.seconds.map((s) => [s.second, s.warmup, s.p50, s.max])).to.deep.equal([
        [0, true, 250, 300],
        [1, true, 250, 250],
        [2, false, 3, 5],
        [4, false, 40, 90],
      ]);
      expect([summary.non2xx, summary.errors]).to.deep.equal([3, 1]);
    });

    it('without a warm-up, counts every second; with no answer at all, answers none per second', () => {
      const all = summarizeRun({ bySecond: measured, warmupS: 0, elapsedMs: 2_000, non2xx: 0, errors: 0 });
      expect(all.requests).to.deep.equal({ total: 100, answered: 100, average: 50 });
      expect(all.seconds.every((s) => !s.warmup)).to.equal(true);

      const none = summarizeRun({ bySecond: [], warmupS: 1, elapsedMs: 0, non2xx: 0, errors: 5 });
      expect(none.requests).to.deep.equal({ total: 0, answered: 0, average: 0 });
      expect(none.seconds).to.deep.equal([]);
    });
  });

  it('refuses a warm-up of part of a second', async () => {
    let error: unknown = null;
    await runFixedRate({
      url: 'http://127.0.0.1:9/',
      method: 'GET',
      headers: {},
      rate: 100,
      durationS: 0.1,
      warmupS: 0.5,
      connections: 1,
    }).catch((e: unknown) => {
      error = e;
    });
    expect(String(error)).to.contain('whole number of seconds');
  });
});
