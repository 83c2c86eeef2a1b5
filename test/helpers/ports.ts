import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Ports for the processes a test starts (nodes, PostgreSQL, nats-server, Kannel).
 *
 * A port the kernel hands out for `listen(0)` comes from its ephemeral range, the same range it takes the local
 * port of every outgoing connection from. Between the moment a test learns such a port and the moment its child
 * process listens on it (seconds, for a node starting under tsx), any connection the test run opens may take it:
 * the child then fails with EADDRINUSE. So ports are picked below that range, where the kernel never assigns one by
 * itself, each checked free by binding it, from a start that differs per test process.
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

const pool = portPool(ephemeralRangeLow());
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
