import { secretContext, type ApiKeyReplies } from '../api-keys/api-key-behaviour.js';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { SecretBox } from '../libraries/secrets/secret-box.js';
import { SecretUnreadableError } from '../libraries/errors/internal-errors.js';
import { toIsoUtc, type Clock } from '../libraries/clock/clock.js';
import { createExpiringCache } from '../libraries/clock/expiring-cache.js';
import { loggableUrl } from '../libraries/logger/loggable-url.js';
import type { Logger } from '../libraries/logger/logger.js';
import type { DeadLetters } from '../libraries/persistence/dead-letters-port.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { AttemptPace } from './merchant-slots.js';
import { attemptOutcome, judgeAttempt, type AttemptResult } from './retry-plan.js';
import { publishJob, type WebhookJob } from './webhook-jobs.js';
import type { WebhookCredentials, WebhookSender } from './webhook-sender.js';

export interface WebhookDeliveryOptions {
  readonly transport: Transport;
  readonly router: ActorRouter;
  readonly sender: WebhookSender;
  readonly deadLetters: DeadLetters;
  readonly clock: Clock;
  /** Delays before each retry (the contract's 30 s, 2 min, 10 min, 1 h by default). */
  readonly retryDelaysMs: readonly number[];
  /** Opens the key's sealed Basic password and signing secret, only here where they are used. */
  readonly secrets: SecretBox;
  /** One `warn` line per failed attempt (what follows it: the next attempt's time or the dead letter). */
  readonly logger: Logger;
  /** Where each merchant's attempt durations go (its waiting room is sized by them). */
  readonly pace: Pick<AttemptPace, 'record'>;
  readonly onAttempt?: (outcome: { merchantId: string; verdict: string; seconds: number }) => void;
  readonly onError?: (error: unknown) => void;
  /**
   * Reads a key's webhook target from its actor, for credentials not cached here (by default one ask through the
   * router; in a cluster, batched per shard).
   */
  readonly webhookTarget?: (merchantId: string, keyId: string) => Promise<ApiKeyReplies['webhook_target']>;
}

type DeadLetterReason = 'rejected' | 'retries_exhausted' | 'refused_address';

/** The start of an attempt's error when the key's secrets could not be opened. */
export const SECRET_UNREADABLE = 'secret_unreadable' as const;

/** How long a key's webhook credentials are reused before asking its actor again. */
const CREDENTIALS_TTL_MS = 5_000;

const NO_CREDENTIALS: WebhookCredentials = { username: null, password: null, signingSecret: null };

/**
 * One attempt of a webhook job: one POST; any 2xx acknowledges, any 4xx ends it, everything else is retried after
 * the next delay as a new job (the broker holds it until due), and after the last retry the event is recorded as
 * dropped. The same event_id goes out on every attempt.
 */
export function createWebhookDelivery(options: WebhookDeliveryOptions) {
  const credentials = createExpiringCache<string, WebhookCredentials>({ clock: options.clock, ttlMs: CREDENTIALS_TTL_MS, max: 10_000 });
  const webhookTarget =
    options.webhookTarget ??
    ((merchantId: string, keyId: string) => options.router.apiKey(merchantId, keyId).ask({ type: 'webhook_target' }));

  async function credentialsFor(job: WebhookJob): Promise<WebhookCredentials> {
    if (job.auth === 'none') return NO_CREDENTIALS;
    const cached = credentials.get(job.keyId);
    if (cached) return cached;
    const reply = await webhookTarget(job.merchantId, job.keyId);
    const webhook = reply.ok ? reply.target.webhook : null;
    const password = webhook?.password ?? null;
    const signingSecret = reply.ok ? reply.target.signingSecret : null;
    const value: WebhookCredentials = reply.ok
      ? {
          username: webhook?.username ?? null,
          password: password === null ? null : options.secrets.open(password, secretContext.webhookPassword(job.keyId)),
          signingSecret: signingSecret === null ? null : options.secrets.open(signingSecret, secretContext.signingSecret(job.keyId)),
        }
      : NO_CREDENTIALS;
    credentials.set(job.keyId, value);
    return value;
  }

  /**
   * The line of a failed attempt: whose event, which attempt, how it ended and what follows. Never the credentials,
   * and the URL only as scheme://host[:port]/path (a merchant's URL may carry a token in its userinfo or query).
   */
  function logFailure(
    job: WebhookJob,
    result: AttemptResult,
    tookMs: number,
    next: { nextAttemptAt: number } | { deadLetter: DeadLetterReason },
  ): void {
    const line = {
      merchant_id: job.merchantId,
      message_id: job.event.message_id,
      event_id: job.event.event_id,
      event_type: job.event.event_type,
      attempt: job.attempt,
      outcome: attemptOutcome(result),
      target: job.auth === 'key' ? 'webhook_url' : 'callback_url',
      url: loggableUrl(job.url),
      duration_ms: tookMs,
    };
    if ('nextAttemptAt' in next)
      options.logger.warn({ ...line, next_attempt_at: toIsoUtc(next.nextAttemptAt) }, 'webhook attempt failed: retrying');
    else options.logger.warn({ ...line, dead_letter: next.deadLetter }, 'webhook attempt failed: event dead-lettered');
  }

  async function giveUp(job: WebhookJob, reason: DeadLetterReason, result: AttemptResult): Promise<void> {
    await options.deadLetters.record({
      id: job.jobId,
      eventId: job.event.event_id,
      merchantId: job.merchantId,
      keyId: job.keyId,
      url: job.url,
      auth: job.auth,
      event: job.event,
      attempts: job.attempt,
      reason,
      lastStatus: result.type === 'response' ? result.status : null,
      lastError: result.type === 'connection_error' ? result.reason : result.type === 'timeout' ? 'timeout' : null,
      droppedAt: options.clock.now(),
    });
  }

  async function deliver(job: WebhookJob): Promise<void> {
    const started = options.clock.now();
    const body = JSON.stringify(job.event);
    const credentials = await credentialsFor(job).catch((error: unknown) => {
      if (!(error instanceof SecretUnreadableError)) throw error;
      options.onError?.(error);
      return error;
    });
    // a secret no configured key opens: nothing goes out without its credentials; the attempt fails and follows the
    // retry plan (a node given the missing key in time delivers it; otherwise it ends among the dead letters)
    const result: AttemptResult =
      credentials instanceof SecretUnreadableError
        ? { type: 'connection_error', kind: SECRET_UNREADABLE, reason: `${SECRET_UNREADABLE}: ${credentials.message}` }
        : await options.sender.send(job.url, body, credentials, started);
    const refused = result.type === 'connection_error' && result.kind === 'refused_address';
    const verdict = refused ? ({ verdict: 'dropped' } as const) : judgeAttempt(result, job.attempt, options.retryDelaysMs);
    const tookMs = options.clock.now() - started;
    options.pace.record(job.merchantId, tookMs);
    options.onAttempt?.({ merchantId: job.merchantId, verdict: verdict.verdict, seconds: tookMs / 1000 });
    // the line comes before what follows is carried out: if that fails, the delivery comes back and this attempt is
    // made (and logged) again
    switch (verdict.verdict) {
      case 'acknowledged':
        return;
      case 'rejected':
        logFailure(job, result, tookMs, { deadLetter: 'rejected' });
        await giveUp(job, 'rejected', result);
        return;
      case 'dropped': {
        const reason = refused ? 'refused_address' : 'retries_exhausted';
        logFailure(job, result, tookMs, { deadLetter: reason });
        await giveUp(job, reason, result);
        return;
      }
      case 'retry': {
        const dueAt = options.clock.now() + verdict.delayMs;
        logFailure(job, result, tookMs, { nextAttemptAt: dueAt });
        await publishJob(options.transport, { ...job, attempt: job.attempt + 1, dueAt });
        return;
      }
    }
  }

  return { deliver };
}

/** Operator replay of a dropped event: a fresh first attempt to the same URL. */
export async function replayDeadLetter(
  deps: { transport: Transport; deadLetters: DeadLetters; clock: Clock },
  id: string,
): Promise<boolean> {
  const letter = await deps.deadLetters.take(id);
  if (!letter) return false;
  const now = deps.clock.now();
  const job: WebhookJob = {
    version: 1,
    jobId: letter.id,
    merchantId: letter.merchantId,
    keyId: letter.keyId,
    url: letter.url,
    auth: letter.auth,
    event: letter.event as WebhookJob['event'],
    attempt: 1,
    dueAt: now,
  };
  await publishJob(deps.transport, job, `${job.jobId}:replay:${now}`);
  return true;
}
