import { randomUUID } from 'node:crypto';

/** Time as milliseconds since the epoch. Everything that depends on time takes a Clock so tests can drive it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export function createManualClock(startMs: number): Clock & { set(ms: number): void; advance(ms: number): void } {
  let current = startMs;
  return {
    now: () => current,
    set: (ms) => {
      current = ms;
    },
    advance: (ms) => {
      current += ms;
    },
  };
}

export function toIsoUtc(ms: number): string {
  return new Date(ms).toISOString();
}

export type IdGenerator = () => string;

export const uuidV4: IdGenerator = () => randomUUID();

/** Deterministic ids for tests: prefix-1, prefix-2, ... */
export function createSequentialIds(prefix: string): IdGenerator {
  let n = 0;
  return () => `${prefix}-${++n}`;
}
