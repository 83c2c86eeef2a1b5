import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runFixedRate } from '../../../scripts/bench/fixed-rate-load.js';

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
      const summary = await runFixedRate({ url, method: 'POST', headers: {}, body: '{}', rate: 200, durationS: 0.25, connections: 8 });
      expect(summary.requests.total).to.equal(50);
      expect(summary.errors).to.equal(0);
      expect(summary.non2xx).to.equal(0);
      // the 50th is due 49 × 5 ms after the first (which may come late by a connection's set-up): one burst would
      // have arrived within a few milliseconds
      const first = arrivals[0] ?? Number.NaN;
      const last = arrivals[arrivals.length - 1] ?? Number.NaN;
      expect(last - first).to.be.at.least(200);
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

  it('leaves the warm-up seconds out of the summary, and reports them marked', async () => {
    // the first answer takes 300 ms: with one connection, a third of the warm-up second's requests wait behind it; the
    // measured requests (due from 1 s on) are answered at once. Counted in, 30 of 120 would be 100 ms late or more.
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
      expect(summary.latency.p99).to.be.below(100);
      // the measured rate is over the measured second, not the warm-up
      expect(summary.requests.average).to.be.above(50);
    } finally {
      await close(server);
    }
  });

  it('refuses a warm-up of part of a second', async () => {
    let error: unknown = null;
    await runFixedRate({ url: 'http://127.0.0.1:9/', method: 'GET', headers: {}, rate: 100, durationS: 0.1, warmupS: 0.5, connections: 1 }).catch((e: unknown) => {
      error = e;
    });
    expect(String(error)).to.contain('whole number of seconds');
  });
});
