// Types only: any module may load this one, down to the actor behaviours and the lease renewal thread.
import type { GatewayEnvironment } from '../config/config.js';

/**
 * The catalogue of internal failures: what goes wrong inside the gateway and its connectors, as opposed to the
 * client-facing errors of error-catalogue.ts (an internal failure reaches a client, if at all, as one of those).
 * Each kind is a stable name code tells failures apart by (never by a message's wording); every internal error class
 * extends `InternalError` with one of these kinds.
 *
 * The classes of the shared libraries are defined below. A business area's own failures (a carrier connector's
 * settings, the CLI's refusals, a webhook's refused address, a forwarded operation not applied) are defined in that
 * area, next to the code that raises and handles them, and take their kind from this catalogue.
 */
export const INTERNAL_ERRORS = {
  // shared libraries (classes below)
  config_invalid: 'A setting is invalid, missing, or at odds with another: the process does not start.',
  actor_failure: 'An actor could not answer: it crashed on the command, lost its fence, timed out, or its storage failed.',
  deadline_expired: "A step was not started because the request's deadline had passed: nothing of it was applied.",
  journal_conflict: "Another writer took the journal's sequence number first, or the writer's lease is gone.",
  duplicate_record: 'A record with the same identity already exists.',
  data_directory_in_use: "Another process holds the embedded database's directory.",
  environment_mismatch: 'The database was initialised for the other environment.',
  secret_unreadable: 'A sealed secret cannot be opened (unknown key, tampered, or malformed).',
  nats_namespace_invalid: 'The NATS namespace is not a valid prefix.',
  no_responder: 'Nobody serves the subject a request was sent on.',
  request_timeout: 'A request on the transport got no answer in time.',
  unreadable_payload: "An outbox entry's payload does not have its topic's shape: it is reported and left pending.",
  dependency_unavailable: 'The database or the transport did not answer: nothing of the operation was applied by it.',
  // business areas (each class in its area)
  cli_refusal: 'The CLI refuses to run a command in the situation it finds (exit code 1).',
  not_applied: 'A forwarded operation was not applied: the shard changed hands or had no owner; it is tried again.',
  refused_address: 'A webhook address resolves to a non-public address.',
  unsupported_schema: 'A request schema uses a joi feature the JSON Schema conversion does not cover.',
  gsm_encoding: 'A text does not fit the GSM 03.38 alphabet or its septets are malformed.',
  smpp_settings_invalid: "The SMPP connector's settings are invalid.",
  kannel_settings_invalid: "The Kannel connector's settings are invalid.",
  connector_settings_invalid: "A carrier connector's common settings are invalid.",
} as const;

export type InternalErrorKind = keyof typeof INTERNAL_ERRORS;

/** The base of every internal failure: a stable `kind`, the class's name, and the failure it follows from (`cause`). */
export abstract class InternalError extends Error {
  abstract readonly kind: InternalErrorKind;

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
}

/** Whether `error` is an internal failure, of the given kind when one is given. */
export function isInternalError(error: unknown, kind?: InternalErrorKind): error is InternalError {
  return error instanceof InternalError && (kind === undefined || error.kind === kind);
}

/** A setting is invalid, missing, or at odds with another; `key` is the setting at fault (its dotted path). */
export class ConfigError extends InternalError {
  readonly kind = 'config_invalid';

  constructor(
    message: string,
    readonly key: string,
  ) {
    super(message);
  }
}

/** Why an actor's command failed (on the wire between nodes too: the list checks what arrives). */
export const ACTOR_FAILURE_REASONS = ['crashed', 'fenced', 'unavailable', 'timeout', 'expired'] as const;
export type ActorFailureReason = (typeof ACTOR_FAILURE_REASONS)[number];

/** The actor could not answer: it crashed on the command, lost its fence, or its storage failed. */
export class ActorFailureError extends InternalError {
  readonly kind = 'actor_failure';

  constructor(
    readonly key: string,
    readonly reason: ActorFailureReason,
    detail: string,
  ) {
    super(`${key}: ${reason}: ${detail}`);
  }
}

/** A step was not started because the request's deadline had passed: nothing of it was applied. */
export class DeadlineExpiredError extends InternalError {
  readonly kind = 'deadline_expired';

  constructor(readonly step: string) {
    super(`deadline passed before ${step}`);
  }
}

/** Another writer took this sequence number first, or the writer's lease is gone: it must stop. */
export class JournalConflictError extends InternalError {
  readonly kind = 'journal_conflict';

  constructor(
    readonly key: string,
    readonly seq: number,
    readonly reason: 'sequence_taken' | 'fenced',
  ) {
    super(reason === 'fenced' ? `lease lost: append to ${key}@${seq} refused` : `sequence ${seq} of ${key} already written`);
  }
}

export function isJournalConflict(error: unknown): error is JournalConflictError {
  return error instanceof JournalConflictError;
}

export class DuplicateRecordError extends InternalError {
  readonly kind = 'duplicate_record';

  constructor(what: string) {
    super(`${what} already exists`);
  }
}

/** PGlite is single-process: a second process opening the same directory would corrupt it. */
export class DataDirectoryInUseError extends InternalError {
  readonly kind = 'data_directory_in_use';

  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the data directory ${dataDir} is in use by process ${pid}; stop it first (PGlite serves one process)`);
  }
}

/**
 * One database serves one environment: the first node (or CLI run) to open a database records its environment in
 * it, and any later one of the other environment is refused, so a live key can never read sandbox records (or the
 * reverse) through a shared database.
 */
export class EnvironmentMismatchError extends InternalError {
  readonly kind = 'environment_mismatch';

  constructor(
    readonly wanted: GatewayEnvironment,
    readonly recorded: string,
  ) {
    super(
      `this database was initialised for the ${recorded} environment and cannot serve ${wanted}: ` +
        `one database serves one environment, give ${wanted} a database of its own (GATEWAY_ENVIRONMENT=${wanted}, recorded: ${recorded})`,
    );
  }
}

export class SecretUnreadableError extends InternalError {
  readonly kind = 'secret_unreadable';
}

export class NatsNamespaceError extends InternalError {
  readonly kind = 'nats_namespace_invalid';

  constructor(
    readonly namespace: string,
    rule: string,
  ) {
    super(`${rule}, not ${JSON.stringify(namespace)}`);
  }
}

export class NoResponderError extends InternalError {
  readonly kind = 'no_responder';

  constructor(readonly subject: string) {
    super(`no responder on ${subject}`);
  }
}

export class RequestTimeoutError extends InternalError {
  readonly kind = 'request_timeout';

  constructor(readonly subject: string) {
    super(`request on ${subject} timed out`);
  }
}

/** The dependencies a node cannot work without (GET /health names them the same way). */
export type Dependency = 'database' | 'transport';

/** A dependency did not answer (down, restarting, unreachable): nothing of the operation it served was applied by it. */
export class DependencyUnavailableError extends InternalError {
  readonly kind = 'dependency_unavailable';

  constructor(
    readonly dependency: Dependency,
    cause: unknown,
  ) {
    super(`${dependency} unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Outbox entries whose payload their topic's handler does not accept: reported, and left pending (nothing is lost, nothing is run). */
export class UnreadablePayloadError extends InternalError {
  readonly kind = 'unreadable_payload';

  constructor(
    readonly topic: string,
    readonly ids: readonly string[],
  ) {
    super(`outbox entries of ${topic} with a payload of the wrong shape: ${ids.join(', ')}`);
  }
}
