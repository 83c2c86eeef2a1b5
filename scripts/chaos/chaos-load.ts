/**
 * The mixed load of a chaos run: immediate sends to one recipient, multi-recipient sends, sends scheduled for the
 * next whole minute (some cancelled before their time), half of them with an Idempotency-Key. Every request is
 * recorded with its outcome. Each send's text carries a marker unique to it, so the journal tells whether a request
 * that was not answered 201 was applied anyway.
 *
 * A send with an Idempotency-Key is retried, with the same key and body, after a 503, a 5xx, a broken connection or
 * a timeout, on the next node (as a client with a load balancer would), until it gets an answer. A send without one
 * is made once: its 503 is the one the client is told means "nothing happened".
 */
import { toUnits } from '../../test/helpers/cluster.js';

export type SendKind = 'immediate' | 'multi' | 'scheduled';

/** A number (201, 503...), or what happened instead of an answer. */
export type Outcome = number | 'refused' | 'network' | 'timeout';

export interface Attempt {
  readonly node: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly outcome: Outcome;
  readonly errorCode?: string;
  /** The answer carried `Idempotent-Replayed: true`. */
  readonly replayed?: boolean;
  readonly detail?: string;
}

export interface LoadTarget {
  readonly id: string;
  readonly api: string;
}

export interface LoadMerchant {
  readonly merchantId: string;
  readonly apiKey: string;
  readonly timezone: string;
}

export interface Accepted {
  readonly messageId: string;
  /** Ten-thousandths of the currency. */
  readonly totalCost: number;
  readonly totalRecipients: number;
}

export interface CancelRecord {
  readonly attempts: Attempt[];
  /** Ten-thousandths refunded by the 200 answer(s); null until one came. */
  refunded: number | null;
}

export interface SendRecord {
  readonly index: number;
  readonly marker: string;
  readonly kind: SendKind;
  readonly merchant: LoadMerchant;
  readonly idempotencyKey: string | null;
  readonly body: Record<string, unknown>;
  readonly recipients: readonly string[];
  /** The instant a scheduled send is for. */
  readonly scheduledFor: number | null;
  readonly attempts: Attempt[];
  accepted: Accepted | null;
  /** Set for the scheduled sends the load cancels. */
  cancel: CancelRecord | null;
}

export interface LoadOptions {
  readonly runId: string;
  readonly merchants: readonly LoadMerchant[];
  readonly ratePerSecond: number;
  /** Where requests may go now (read at each attempt). */
  readonly targets: () => readonly LoadTarget[];
  readonly scheduleLeadMs: number;
  readonly requestTimeoutMs: number;
  /** Retries of a send with an Idempotency-Key (or of a cancel) stop after this many attempts... */
  readonly maxAttempts?: number;
  /** ...or once this long has passed since the first (its outcome then stays unknown). */
  readonly retryForMs?: number;
  readonly now?: () => number;
}

export interface Load {
  readonly records: readonly SendRecord[];
  /** Stops starting sends; resolves once every send and cancel under way has its final answer. */
  stop(): Promise<void>;
  /** Stops starting scheduled sends (their time must fall before the run ends). */
  stopScheduling(): void;
}

/** The element at `index` modulo the length (a list that must not be empty). */
export function cyclic<T>(list: readonly T[], index: number): T {
  const item = list[index % list.length];
  if (item === undefined) throw new Error('cyclic: empty list');
  return item;
}

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/** The pattern of sends, by index: 10 in a cycle. */
export function kindOf(index: number): SendKind {
  const slot = index % 10;
  if (slot === 3 || slot === 7) return 'multi';
  if (slot === 5) return 'scheduled';
  return 'immediate';
}

/** Half the scheduled sends are cancelled: both of each other cycle of 20. */
export const isCancelled = (index: number): boolean => kindOf(index) === 'scheduled' && Math.floor(index / 20) % 2 === 0;

/** Half the sends carry an Idempotency-Key; the parity flips every 10 so each kind comes with and without one. */
export const hasIdempotencyKey = (index: number): boolean => (index + Math.floor(index / 10)) % 2 === 0;

const ENDINGS = ['00', '90', '91', '01'] as const;

/** Distinct numbers priced 0.02 (Vodacom DR Congo); the last two digits pick the simulator's final outcome. */
export function recipientsOf(index: number, kind: SendKind): string[] {
  const count = kind === 'multi' ? 2 + (Math.floor(index / 10) % 2) : 1;
  return Array.from({ length: count }, (_, j) => {
    const n = index * 3 + j;
    return `+24381${String(n % 100_000).padStart(5, '0')}${cyclic(ENDINGS, n)}`;
  });
}

/** The terminal webhook a recipient's number leads to. */
export const terminalTypeOf = (phone: string): string => (phone.endsWith('00') || phone.endsWith('01') ? 'sms.delivered' : 'sms.failed');

/** The first whole minute at least `leadMs` after `now`, as the API's local date and time in `timezone`. */
export function nextMinute(now: number, leadMs: number, timezone: string): { instant: number; date: string; time: string } {
  const instant = Math.ceil((now + leadMs) / 60_000) * 60_000;
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(new Date(instant))
      .map((part) => [part.type, part.value]),
  );
  return { instant, date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}` };
}

interface Answer {
  readonly attempt: Attempt;
  readonly body: unknown;
}

async function request(
  target: LoadTarget,
  path: string,
  init: { method: string; key: string; json?: unknown; headers?: Record<string, string> },
  timeoutMs: number,
): Promise<Answer> {
  const startedAt = Date.now();
  const headers: Record<string, string> = { 'app-key': init.key, ...init.headers };
  if (init.json !== undefined) headers['content-type'] = 'application/json';
  try {
    const response = await fetch(`${target.api}${path}`, {
      method: init.method,
      headers,
      ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const errorCode = (body as { error_code?: unknown } | undefined)?.error_code;
    return {
      body,
      attempt: {
        node: target.id,
        startedAt,
        endedAt: Date.now(),
        outcome: response.status,
        ...(typeof errorCode === 'string' ? { errorCode } : {}),
        ...(response.headers.get('idempotent-replayed') === 'true' ? { replayed: true } : {}),
        ...(response.status >= 300 ? { detail: text.slice(0, 200) } : {}),
      },
    };
  } catch (error) {
    const code = errorCodeOf(error);
    const outcome: Outcome = code === 'ECONNREFUSED' ? 'refused' : code === 'TimeoutError' || code === 'AbortError' ? 'timeout' : 'network';
    return { body: undefined, attempt: { node: target.id, startedAt, endedAt: Date.now(), outcome, errorCode: code } };
  }
}

function errorCodeOf(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (current.name === 'TimeoutError' || current.name === 'AbortError') return current.name;
    current = current.cause;
  }
  return error instanceof Error ? error.message : String(error);
}

/** An answer that tells nothing final: the request is worth repeating (with its Idempotency-Key). */
const retryable = (outcome: Outcome): boolean => typeof outcome !== 'number' || outcome >= 500;

export function startLoad(options: LoadOptions): Load {
  const now = options.now ?? Date.now;
  const maxAttempts = options.maxAttempts ?? 40;
  const retryForMs = options.retryForMs ?? 120_000;
  const records: SendRecord[] = [];
  const underWay = new Set<Promise<void>>();
  // objects, not lets: the closures below change them
  const state = { stopped: false, scheduling: true };
  const stopped = (): boolean => state.stopped;
  let turn = 0;

  const nextTarget = (): LoadTarget | null => {
    const targets = options.targets();
    if (targets.length === 0) return null;
    return cyclic(targets, turn++);
  };

  async function attemptUntilFinal(
    attempts: Attempt[],
    retry: boolean,
    make: (target: LoadTarget) => Promise<Answer>,
  ): Promise<Answer | null> {
    const giveUpAt = now() + retryForMs;
    for (let n = 0; n < maxAttempts && now() < giveUpAt; n++) {
      const target = nextTarget();
      if (!target) {
        await sleep(250);
        continue;
      }
      const answer = await make(target);
      attempts.push(answer.attempt);
      if (!retry || !retryable(answer.attempt.outcome)) return answer;
      await sleep(Math.min(250 * 2 ** Math.min(n, 3), 2_000));
    }
    return null;
  }

  async function runSend(index: number): Promise<void> {
    const merchant = cyclic(options.merchants, index);
    let kind = kindOf(index);
    if (kind === 'scheduled' && !state.scheduling) kind = 'immediate';
    const recipients = recipientsOf(index, kind);
    const marker = `chaos ${options.runId} #${index}`;
    const body: Record<string, unknown> = { to: recipients, message: marker };
    let scheduledFor: number | null = null;
    if (kind === 'scheduled') {
      const at = nextMinute(now(), options.scheduleLeadMs, merchant.timezone);
      scheduledFor = at.instant;
      body.sending_type = 'scheduled';
      body.scheduled_dates = [{ date: at.date, time: at.time }];
    }
    const idempotencyKey = hasIdempotencyKey(index) ? `chaos-${options.runId}-${index}` : null;
    const record: SendRecord = {
      index,
      marker,
      kind,
      merchant,
      idempotencyKey,
      body,
      recipients,
      scheduledFor,
      attempts: [],
      accepted: null,
      cancel: null,
    };
    records.push(record);
    const answer = await attemptUntilFinal(record.attempts, idempotencyKey !== null, (target) =>
      request(
        target,
        '/send',
        { method: 'POST', key: merchant.apiKey, json: body, ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}) },
        options.requestTimeoutMs,
      ),
    );
    if (answer?.attempt.outcome !== 201) return;
    const data = (answer.body as { data: { message_id: string; total_cost: number; total_recipients: number } }).data;
    record.accepted = { messageId: data.message_id, totalCost: toUnits(data.total_cost), totalRecipients: data.total_recipients };
    if (kind === 'scheduled' && isCancelled(index)) {
      const cancel: CancelRecord = { attempts: [], refunded: null };
      record.cancel = cancel;
      await sleep(1_000);
      // a cancel is idempotent (a second one refunds 0): retried like a keyed send
      const answered = await attemptUntilFinal(cancel.attempts, true, (target) =>
        request(target, `/cancel/${data.message_id}`, { method: 'DELETE', key: merchant.apiKey }, options.requestTimeoutMs),
      );
      if (answered?.attempt.outcome === 200)
        cancel.refunded = toUnits((answered.body as { data: { refunded_amount: number } }).data.refunded_amount);
    }
  }

  const started = now();
  const ticker = (async () => {
    for (let index = 0; !stopped(); index++) {
      const due = started + (index * 1_000) / options.ratePerSecond;
      if (due > now()) await sleep(due - now());
      if (stopped()) break;
      const running = runSend(index).catch((error: unknown) => {
        process.stderr.write(`chaos load: send ${index} failed in the harness: ${String(error)}\n`);
      });
      underWay.add(running);
      void running.finally(() => underWay.delete(running));
    }
  })();

  return {
    records,
    async stop() {
      state.stopped = true;
      await ticker;
      while (underWay.size > 0) await Promise.all([...underWay]);
    },
    stopScheduling() {
      state.scheduling = false;
    },
  };
}
