/**
 * An open-model load generator for bench:api, run in its own process: requests start at a fixed rate, evenly spaced,
 * whether or not the earlier ones have been answered, and each one's latency counts from when it was due to start
 * (so a stalled server is charged for the requests that queued behind the stall: no coordinated omission).
 * autocannon's rate option sends each connection's quota for a second back to back at the start of that second, a
 * burst of every connection at once, which measures a burst, not a rate.
 *
 * Input: one JSON argument (FixedRateSpec). Output: one JSON line on stdout in the shape of autocannon's summary that
 * bench:api reads (requests.average/total, latency.p50/p99, non2xx, errors).
 */
import { pathToFileURL } from 'node:url';
import { Agent, type Dispatcher } from 'undici';
import { percentile } from './bench-common.js';

export interface FixedRateSpec {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body?: string;
  /** Requests per second. */
  readonly rate: number;
  readonly durationS: number;
  /**
   * Seconds at the same rate before the measured `durationS` (default 0): the generator's own start (its JIT, its
   * connections opening) is not the server's latency. Whole seconds; they are reported, marked, and their latencies
   * left out of the summary (non-2xx answers and errors count over the whole run, warm-up included).
   */
  readonly warmupS?: number;
  /** Most connections open at once; requests due while all are busy wait for one, their wait counted. */
  readonly connections: number;
}

/** Latencies of the requests due in one second of the run. */
export interface SecondOfRun {
  /** Seconds from the start of the run (0, 1, …), warm-up included. */
  readonly second: number;
  /** Due during the warm-up: not in the summary. */
  readonly warmup: boolean;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** The part of autocannon's summary bench:api reads (of the measured seconds), and the run second by second. */
export interface FixedRateSummary {
  /** `answered`: every answer, the warm-up's included (what the run cost is divided by). */
  readonly requests: { readonly average: number; readonly total: number; readonly answered: number };
  readonly latency: { readonly p50: number; readonly p99: number };
  readonly non2xx: number;
  readonly errors: number;
  readonly seconds: readonly SecondOfRun[];
}

export async function runFixedRate(spec: FixedRateSpec): Promise<FixedRateSummary> {
  const warmupS = spec.warmupS ?? 0;
  if (!Number.isInteger(warmupS) || warmupS < 0) throw new Error(`warmupS must be a whole number of seconds, not ${warmupS}`);
  const target = new URL(spec.url);
  const agent = new Agent({ connections: spec.connections, pipelining: 1 });
  const total = Math.round(spec.rate * (warmupS + spec.durationS));
  const intervalMs = 1000 / spec.rate;
  /** Latencies by the second of the run in which each request was due. */
  const bySecond: number[][] = [];
  let non2xx = 0;
  let errors = 0;
  let issued = 0;
  let finished = 0;
  let lastDone = 0;
  const started = performance.now();

  const path = target.pathname + target.search;
  const body = spec.body === undefined ? null : Buffer.from(spec.body);
  const options: Dispatcher.DispatchOptions = { origin: target.origin, path, method: spec.method, headers: spec.headers, body };

  await new Promise<void>((allFinished) => {
    const finish = (): void => {
      finished++;
      if (finished === total) allFinished();
    };
    // undici's dispatcher API rather than request(): no response stream per request, so the generator takes a little
    // less of the CPU it shares with the node under test (loopback trial at 1 000 req/s: 0.19 ms of CPU per request
    // instead of 0.21; most of what is left is the kernel's socket work, the JavaScript side is ~0.08 ms)
    const send = (index: number): void => {
      const dueAt = started + index * intervalMs;
      // the second it was due in, from its index: (dueAt - started) / 1000 can round just below a whole second
      const second = Math.floor(index / spec.rate);
      let status = 0;
      const failed = (): void => {
        errors++;
        finish();
      };
      const handler: Dispatcher.DispatchHandler = {
        // undici tells this handler API from its older one by this method
        onRequestStart() {
          // nothing to do when the request starts
        },
        onResponseStart(_controller, statusCode) {
          status = statusCode;
        },
        onResponseData() {
          // the body is not read: only that the answer ended
        },
        onResponseEnd() {
          if (status < 200 || status >= 300) non2xx++;
          lastDone = performance.now();
          (bySecond[second] ??= []).push(lastDone - dueAt);
          finish();
        },
        onResponseError: failed,
      };
      try {
        agent.dispatch(options, handler);
      } catch {
        // refused before it started (invalid options): an error like any other
        failed();
      }
    };
    const tick = (): void => {
      const due = Math.min(total, Math.floor((performance.now() - started) / intervalMs) + 1);
      for (; issued < due; issued++) send(issued);
      if (issued < total) setTimeout(tick, Math.max(0, started + issued * intervalMs - performance.now()));
    };
    tick();
  });
  await agent.close();

  return summarizeRun({ bySecond, warmupS, elapsedMs: lastDone - started, non2xx, errors });
}

/**
 * The summary of a run from its latencies by the second each request was due in (a pure function, so what the
 * summary counts is testable without depending on how fast the machine answers): the warm-up seconds are reported,
 * marked, and left out of the percentiles, the measured total and the rate. `elapsedMs` runs from the start to the
 * last answer.
 */
export function summarizeRun(run: {
  readonly bySecond: readonly (readonly number[] | undefined)[];
  readonly warmupS: number;
  readonly elapsedMs: number;
  readonly non2xx: number;
  readonly errors: number;
}): FixedRateSummary {
  const { bySecond, warmupS } = run;
  const latencies = bySecond
    .slice(warmupS)
    .flatMap((values) => values ?? [])
    .sort((a, b) => a - b);
  // from the first measured request due to the last answer (no answer at all: nothing answered per second)
  const elapsedS = latencies.length > 0 ? run.elapsedMs / 1000 - warmupS : Number.POSITIVE_INFINITY;
  return {
    requests: {
      average: latencies.length / elapsedS,
      total: latencies.length,
      answered: bySecond.flatMap((values) => values ?? []).length,
    },
    latency: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
    non2xx: run.non2xx,
    errors: run.errors,
    // a second in which nothing was answered is a hole in bySecond: it is left out
    seconds: bySecond.flatMap((values, second) => {
      if (values === undefined) return [];
      const sorted = [...values].sort((a, b) => a - b);
      return [
        {
          second,
          warmup: second < warmupS,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          max: sorted[sorted.length - 1] ?? Number.NaN,
        },
      ];
    }),
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argument = process.argv[2];
  if (argument === undefined) {
    process.stderr.write('usage: fixed-rate-load.ts <FixedRateSpec JSON>\n');
    process.exit(2);
  }
  runFixedRate(JSON.parse(argument) as FixedRateSpec).then(
    (summary) => process.stdout.write(`${JSON.stringify(summary)}\n`),
    (error: unknown) => {
      process.stderr.write(`${String(error)}\n`);
      process.exit(1);
    },
  );
}
