import { expect } from 'chai';
import { createManualClock } from '../../../../src/libraries/clock/clock.js';
import type { Correlation } from '../../../../src/carriers/connector/connector-records.js';
import { createCorrelationMemory, type CorrelationMemory } from '../../../../src/carriers/connector/correlation-memory.js';

const TTL_MS = 60_000;
const first: Correlation = { dispatch_id: 'msg_a:0:0', part: 0, parts: 1 };
const second: Correlation = { dispatch_id: 'msg_b:0:0', part: 0, parts: 1 };

describe('correlation memory', () => {
  let clock: ReturnType<typeof createManualClock>;
  let memory: CorrelationMemory;

  beforeEach(() => {
    clock = createManualClock(Date.parse('2026-12-01T10:00:00Z'));
    memory = createCorrelationMemory({ capacity: 3, ttlMs: TTL_MS, clock });
    memory.resume();
  });

  /** This instance writes `correlation` under `key` at `revision`, its answer coming back at once. */
  function write(key: string, correlation: Correlation, revision: number): void {
    const writing = memory.beginWrite(key);
    writing.written(correlation, revision);
    writing.end();
  }

  it('recalls a correlation it wrote until the bucket would have dropped it, counting from before the write was sent', () => {
    const writing = memory.beginWrite('ref-1');
    // the write's answer takes a while: the stored record's age counts from when it was sent
    clock.advance(5_000);
    writing.written(first, 7);
    writing.end();
    expect(memory.recall('ref-1')).to.deep.equal(first);
    clock.advance(TTL_MS - 5_000 - 1);
    expect(memory.recall('ref-1')).to.deep.equal(first);
    clock.advance(1);
    expect(memory.recall('ref-1')).to.equal(null);
    expect(memory.size()).to.equal(0);
  });

  it('lets go of the expired correlations as it remembers new ones, even those never asked for', () => {
    write('ref-1', first, 7);
    clock.advance(TTL_MS);
    write('ref-2', second, 8);
    expect(memory.size()).to.equal(1);
    expect(memory.recall('ref-2')).to.deep.equal(second);
  });

  it('drops a correlation once the feed shows a later write of its key (another instance was given the id), and counts it', () => {
    write('ref-1', first, 7);
    write('ref-2', second, 8);
    // its own write, and an earlier one of the key, change nothing
    memory.observed('ref-1', 7);
    memory.observed('ref-1', 3);
    expect(memory.recall('ref-1')).to.deep.equal(first);
    memory.observed('ref-1', 12);
    expect(memory.recall('ref-1')).to.equal(null);
    expect(memory.recall('ref-2')).to.deep.equal(second);
    expect(memory.superseded()).to.equal(1);
  });

  it('does not remember a write when the feed showed a later write of the key before its answer came', () => {
    const writing = memory.beginWrite('ref-1');
    memory.observed('ref-1', 7);
    memory.observed('ref-1', 9);
    writing.written(first, 7);
    writing.end();
    expect(memory.recall('ref-1')).to.equal(null);
    expect(memory.superseded()).to.equal(1);
  });

  it('remembers the latest of its own writes of a key (the carrier gave this instance the id again)', () => {
    write('ref-1', first, 7);
    const again = memory.beginWrite('ref-1');
    // the feed shows the second write before its answer: it is the one being remembered
    memory.observed('ref-1', 11);
    again.written(second, 11);
    again.end();
    expect(memory.recall('ref-1')).to.deep.equal(second);
  });

  it('remembers nothing while the feed is not followed, nor a write begun before it was followed again', () => {
    memory.suspend();
    write('ref-1', first, 7);
    expect(memory.recall('ref-1')).to.equal(null);
    const before = memory.beginWrite('ref-2');
    memory.resume();
    // another instance may have written ref-2 while nobody followed the feed
    before.written(second, 8);
    before.end();
    expect(memory.recall('ref-2')).to.equal(null);
    write('ref-3', first, 9);
    expect(memory.recall('ref-3')).to.deep.equal(first);
  });

  it('forgets everything when the feed stops, and what was being written then', () => {
    write('ref-1', first, 7);
    const inFlight = memory.beginWrite('ref-2');
    memory.suspend();
    expect(memory.recall('ref-1')).to.equal(null);
    memory.resume();
    inFlight.written(second, 8);
    inFlight.end();
    expect(memory.recall('ref-2')).to.equal(null);
    expect(memory.size()).to.equal(0);
  });

  it('keeps at most its capacity, the oldest going first, and forgets a correlation on request', () => {
    write('ref-1', first, 1);
    write('ref-2', first, 2);
    write('ref-3', first, 3);
    write('ref-4', first, 4);
    expect(memory.recall('ref-1')).to.equal(null);
    expect(memory.size()).to.equal(3);
    memory.forget('ref-4');
    expect(memory.recall('ref-4')).to.equal(null);
    expect(memory.recall('ref-3')).to.deep.equal(first);
  });
});
