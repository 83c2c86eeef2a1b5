import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Ports for the processes a test starts (nodes, PostgreSQL, nats-server, Kannel).
 *
 * A port the kernel hands out for `listen(0)` comes from its ephemeral range, the same range it takes the local
 * port of every outgoing connection from. Between the moment a test learns such a port and the moment its child
 * process listens on it (seconds, for a node starting under tsx), any connection the test run opens may take it:
 * the child then fails with EADDRINUSE. So ports are picked below that range, where the kernel never assigns one by
 * itself, each checked free by binding it, from a start that differs per test process; the workers of a parallel run
 * each walk a part of that range of their own, so one cannot take a port another has just checked for its child.
 */
const FALLBACK_EPHEMERAL_LOW = 32_768;
const POOL_LOW = 10_000;
/** Fewer candidates than this below the ephemeral range (an unusual kernel setting): let the kernel pick. */
const POOL_MIN_SIZE = 2_000;
const ATTEMPTS = 200;

/** The first port of the kernel's ephemeral range (Linux); the usual default elsewhere. */
export function ephemeralRangeLow(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): number {
  try {
    const low = Number.parseInt(readFileSync(rangeFile, 'utf8').trim().split(/\s+/)[0] ?? '', 10);
    return Number.isInteger(low) && low > 0 ? low : FALLBACK_EPHEMERAL_LOW;
  } catch {
    return FALLBACK_EPHEMERAL_LOW;
  }
}

/** The ports below the ephemeral range that tests pick from, or null when there are too few of them. */
export function portPool(ephemeralLow: number): { low: number; size: number } | null {
  const size = ephemeralLow - POOL_LOW;
  return size >= POOL_MIN_SIZE ? { low: POOL_LOW, size } : null;
}

/** Parts of the pool a parallel run's workers take one each, so two workers never pick the same port. */
const WORKER_SHARES = 8;
const WORKER_SHARE_MIN_SIZE = 1_000;

/**
 * The part of the pool a test process walks: all of it, or in a parallel run (mocha numbers its workers in
 * MOCHA_WORKER_ID, and a worker's children inherit it) one of WORKER_SHARES parts, chosen by the worker's number.
 */
export function workerShare(whole: { low: number; size: number }, workerId: string | undefined): { low: number; size: number } {
  const id = workerId === undefined || workerId === '' ? Number.NaN : Number(workerId);
  const size = Math.floor(whole.size / WORKER_SHARES);
  if (!Number.isInteger(id) || id < 0 || size < WORKER_SHARE_MIN_SIZE) return whole;
  return { low: whole.low + (id % WORKER_SHARES) * size, size };
}

const wholePool = portPool(ephemeralRangeLow());
const pool = wholePool ? workerShare(wholePool, process.env.MOCHA_WORKER_ID) : null;
let cursor = pool ? (process.pid * 7_919 + Math.floor(Math.random() * pool.size)) % pool.size : 0;

/** Resolves whether `port` on 127.0.0.1 could be bound just now. */
export function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => {
      resolve(false);
    });
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      server.close(() => {
        resolve(true);
      });
    });
  });
}

/** A port the kernel picks (its ephemeral range): the fallback when there is no pool. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

/**
 * A TCP port free on 127.0.0.1 a moment ago, below the kernel's ephemeral range, and not handed out before by this
 * process (the pool is walked in order, wrapping round).
 */
export async function freePort(): Promise<number> {
  if (!pool) return kernelPort();
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = pool.low + cursor;
    cursor = (cursor + 1) % pool.size;
    if (await canListen(port)) return port;
  }
  return kernelPort();
}
