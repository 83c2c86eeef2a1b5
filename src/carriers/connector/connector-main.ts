import Joi from 'joi';
import { createProcessTerminator, stopOnSignals } from '../../libraries/lifecycle/process-terminator.js';
import { createLogger, type Logger } from '../../libraries/logger/logger.js';
import {
  NATS_NAMESPACE_PATTERN,
  NATS_NAMESPACE_RULE,
  dispatchSubject,
  natsNames,
  receiptSubject,
} from '../../libraries/transport/nats-names.js';
import { CARRIER_SLUG, RECEIPT_BATCH_MAX } from '../carrier-protocol.js';
import type { CarrierLink } from './carrier-link.js';
import {
  CONNECTOR_ACK_WAIT_MS,
  DEFAULT_RECEIPT_BATCH_MAX,
  DEFAULT_RECORD_TTL_MS,
  createConnectorRuntime,
  type ConnectorRuntime,
} from './connector-runtime.js';
import { InternalError } from '../../libraries/errors/internal-errors.js';

/**
 * The process entry of a carrier connector (`smpp`, `kannel`, …): common settings from the environment, a NATS
 * connection, the kind's link, the connector runtime, logs, and a graceful stop on SIGTERM or SIGINT (the process
 * terminator of the gateway node: copies of one signal are one stop, a later signal force-quits).
 */

export interface ConnectorSettingRow {
  readonly name: string;
  readonly required: boolean;
  readonly default: string;
  readonly meaning: string;
}

/** The environment every connector process reads (the link reads its own variables besides). */
export const CONNECTOR_SETTINGS: readonly ConnectorSettingRow[] = [
  { name: 'NATS_URL', required: true, default: '', meaning: 'NATS server URL(s), comma-separated.' },
  {
    name: 'NATS_NAMESPACE',
    required: false,
    default: '',
    meaning:
      "The deployment's namespace on NATS (the gateway's NATS_NAMESPACE): prefix of its streams, subjects, consumers and buckets; 1 to 32 of A-Z a-z 0-9 - _.",
  },
  {
    name: 'CONNECTOR_CARRIER',
    required: true,
    default: '',
    meaning: 'Carrier slug: consumes sms.dispatch.<slug>, publishes sms.receipts.<slug>.',
  },
  {
    name: 'CONNECTOR_NAME',
    required: false,
    default: '<kind>-<carrier>',
    meaning: 'Name of this connector in presence and logs (letters, digits, _ and -).',
  },
  {
    name: 'CONNECTOR_PRIORITY',
    required: false,
    default: '1',
    meaning: 'Failover order: the live connectors with the lowest number take the jobs.',
  },
  {
    name: 'CONNECTOR_WEIGHT',
    required: false,
    default: '1',
    meaning: 'Share among live connectors of the same priority: jobs held at once = window size × weight.',
  },
  { name: 'CONNECTOR_CONCURRENCY', required: false, default: 'window size × weight', meaning: 'Jobs handled at once by this instance.' },
  {
    name: 'CONNECTOR_RECORD_TTL_MS',
    required: false,
    default: String(DEFAULT_RECORD_TTL_MS),
    meaning: 'How long dispatch records, correlations and early reports are kept.',
  },
  {
    name: 'CONNECTOR_UNCERTAIN_SUBMISSION',
    required: false,
    default: 'resend',
    meaning:
      'A submission whose outcome is unknown (its instance died mid-submit, or the carrier left it unanswered): resend (at-least-once, a duplicate SMS is possible) or hold (at-most-once: acknowledge, never send twice; the receipt timeout ends the recipient if no report comes).',
  },
  {
    name: 'CONNECTOR_RECEIPT_BATCH_MAX',
    required: false,
    default: '100',
    meaning: 'Most receipts in one NATS message: receipts ready together leave as one receipt batch; 1 publishes each on its own.',
  },
  { name: 'LOG_LEVEL', required: false, default: 'info', meaning: 'pino log level.' },
];

export interface ConnectorEnvironment {
  readonly natsUrl: string;
  /** Empty: no namespace. */
  readonly natsNamespace: string;
  readonly carrier: string;
  readonly name: string;
  readonly priority: number;
  readonly weight: number;
  readonly concurrency: number | undefined;
  readonly recordTtlMs: number;
  readonly uncertainSubmission: 'hold' | 'resend';
  readonly receiptBatchMax: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

const environmentSchema = Joi.object({
  NATS_URL: Joi.string()
    .trim()
    .required()
    .messages({ 'any.required': 'NATS_URL is required (nats://host:port, comma-separated for several servers)' }),
  NATS_NAMESPACE: Joi.string().pattern(NATS_NAMESPACE_PATTERN).default('').messages({ '*': NATS_NAMESPACE_RULE }),
  CONNECTOR_CARRIER: Joi.string().pattern(CARRIER_SLUG).required().messages({
    'any.required': 'CONNECTOR_CARRIER is required: the carrier slug the gateway routes to',
    'string.pattern.base': 'CONNECTOR_CARRIER must be a carrier slug: 1 to 64 of a-z 0-9 _ -, starting with a letter or digit',
  }),
  CONNECTOR_NAME: Joi.string()
    .pattern(/^[A-Za-z0-9_-]{1,64}$/)
    .messages({ 'string.pattern.base': 'CONNECTOR_NAME must be 1 to 64 of A-Z a-z 0-9 _ -' }),
  CONNECTOR_PRIORITY: Joi.number()
    .integer()
    .min(0)
    .max(1_000)
    .default(1)
    .messages({ '*': 'CONNECTOR_PRIORITY must be an integer from 0 to 1000' }),
  CONNECTOR_WEIGHT: Joi.number().positive().max(1_000).default(1).messages({ '*': 'CONNECTOR_WEIGHT must be a positive number' }),
  CONNECTOR_CONCURRENCY: Joi.number()
    .integer()
    .min(1)
    .max(10_000)
    .messages({ '*': 'CONNECTOR_CONCURRENCY must be an integer from 1 to 10000' }),
  CONNECTOR_RECORD_TTL_MS: Joi.number()
    .integer()
    .min(25 * 3_600_000)
    .default(DEFAULT_RECORD_TTL_MS)
    .messages({ '*': 'CONNECTOR_RECORD_TTL_MS must be an integer of at least 90000000 (25 h: longer than the 24-hour rule)' }),
  CONNECTOR_UNCERTAIN_SUBMISSION: Joi.string()
    .valid('hold', 'resend')
    .default('resend')
    .messages({ '*': 'CONNECTOR_UNCERTAIN_SUBMISSION must be hold or resend' }),
  CONNECTOR_RECEIPT_BATCH_MAX: Joi.number()
    .integer()
    .min(1)
    .max(RECEIPT_BATCH_MAX)
    .default(DEFAULT_RECEIPT_BATCH_MAX)
    .messages({ '*': `CONNECTOR_RECEIPT_BATCH_MAX must be an integer from 1 to ${RECEIPT_BATCH_MAX}` }),
  LOG_LEVEL: Joi.string()
    .valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent')
    .default('info')
    .messages({ '*': 'LOG_LEVEL must be a pino level' }),
}).unknown(true);

export class ConnectorEnvironmentError extends InternalError {
  readonly kind = 'connector_settings_invalid';

  constructor(readonly problems: readonly string[]) {
    super(`invalid connector settings: ${problems.join('; ')}`);
  }
}

interface ValidatedEnvironment {
  NATS_URL: string;
  NATS_NAMESPACE: string;
  CONNECTOR_CARRIER: string;
  CONNECTOR_NAME?: string;
  CONNECTOR_PRIORITY: number;
  CONNECTOR_WEIGHT: number;
  CONNECTOR_CONCURRENCY?: number;
  CONNECTOR_RECORD_TTL_MS: number;
  CONNECTOR_UNCERTAIN_SUBMISSION: 'hold' | 'resend';
  CONNECTOR_RECEIPT_BATCH_MAX: number;
  LOG_LEVEL: ConnectorEnvironment['logLevel'];
}

/** Reads and checks the common settings; throws `ConnectorEnvironmentError` naming every bad variable. */
export function readConnectorEnvironment(env: NodeJS.ProcessEnv, kind: string): ConnectorEnvironment {
  const blankless = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result: Joi.ValidationResult<ValidatedEnvironment> = environmentSchema.validate(blankless, { abortEarly: false, convert: true });
  if (result.error) throw new ConnectorEnvironmentError(result.error.details.map((detail) => detail.message));
  const valid = result.value;
  return {
    natsUrl: valid.NATS_URL,
    natsNamespace: valid.NATS_NAMESPACE,
    carrier: valid.CONNECTOR_CARRIER,
    name: valid.CONNECTOR_NAME ?? `${kind}-${valid.CONNECTOR_CARRIER}`,
    priority: valid.CONNECTOR_PRIORITY,
    weight: valid.CONNECTOR_WEIGHT,
    concurrency: valid.CONNECTOR_CONCURRENCY,
    recordTtlMs: valid.CONNECTOR_RECORD_TTL_MS,
    uncertainSubmission: valid.CONNECTOR_UNCERTAIN_SUBMISSION,
    receiptBatchMax: valid.CONNECTOR_RECEIPT_BATCH_MAX,
    logLevel: valid.LOG_LEVEL,
  };
}

export interface ConnectorProcessOptions {
  /** `smpp`, `kannel`, …: the link's kind, in logs and the default name. */
  readonly kind: string;
  /** Builds the link from the environment (its own variables); may throw `ConnectorEnvironmentError`. */
  readonly createLink: (env: NodeJS.ProcessEnv, logger: Logger) => CarrierLink | Promise<CarrierLink>;
  readonly env?: NodeJS.ProcessEnv;
}

/** Runs a connector until SIGTERM or SIGINT; exits 1 on bad settings, naming the variables. */
export async function runConnectorProcess(options: ConnectorProcessOptions): Promise<void> {
  const env = options.env ?? process.env;
  let settings: ConnectorEnvironment;
  try {
    settings = readConnectorEnvironment(env, options.kind);
  } catch (error) {
    if (error instanceof ConnectorEnvironmentError) {
      for (const problem of error.problems) process.stderr.write(`${problem}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger({ level: settings.logLevel, base: { service: `connector-${options.kind}`, carrier: settings.carrier } });

  let link: CarrierLink;
  try {
    link = await options.createLink(env, logger);
  } catch (error) {
    if (error instanceof ConnectorEnvironmentError) {
      for (const problem of error.problems) process.stderr.write(`${problem}\n`);
      process.exit(1);
    }
    throw error;
  }

  const { connectNatsTransport } = await import('../../libraries/transport/nats-transport.js');
  const { connectNats } = await import('../../libraries/transport/nats-connect.js');
  const servers = settings.natsUrl.split(',').map((s) => s.trim());
  const onNatsError = (error: unknown, context: string): void => {
    logger.warn({ err: error, context }, 'nats');
  };
  const names = natsNames(settings.natsNamespace);
  const transport = await connectNatsTransport({
    servers: settings.natsUrl,
    name: `connector-${options.kind}-${settings.carrier}`,
    names,
    onError: onNatsError,
  });
  const nc = await connectNats({
    servers,
    name: `connector-${options.kind}-${settings.carrier}-kv`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    noAsyncTraces: true,
  });
  const runtime: ConnectorRuntime = createConnectorRuntime({
    carrier: settings.carrier,
    name: settings.name,
    priority: settings.priority,
    weight: settings.weight,
    link,
    nats: nc,
    names,
    transport,
    logger,
    settings: {
      ...(settings.concurrency === undefined ? {} : { concurrency: settings.concurrency }),
      recordTtlMs: settings.recordTtlMs,
      ackWaitMs: CONNECTOR_ACK_WAIT_MS,
      uncertainSubmission: settings.uncertainSubmission,
      receiptBatchMax: settings.receiptBatchMax,
    },
  });

  const closeNats = async (): Promise<void> => {
    await transport.close().catch(() => undefined);
    if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
  };

  // copies of a signal (a terminal sending SIGINT to the group, an orchestrator repeating SIGTERM) are one stop;
  // a signal more than FORCE_QUIT_AFTER_MS into it force-quits
  const terminate = createProcessTerminator({
    logger,
    stop: async () => {
      logger.info('stopping: no new jobs, finishing the submissions in hand');
      await runtime.stop();
      logger.info({ stats: runtime.stats() }, 'connector stats');
      await closeNats();
    },
    exit: (code) => process.exit(code),
  });
  stopOnSignals(terminate);
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled rejection');
  });

  try {
    await runtime.start();
  } catch (error) {
    await closeNats();
    throw error;
  }
  logger.info(
    {
      connector_id: runtime.connectorId,
      kind: options.kind,
      name: settings.name,
      priority: settings.priority,
      weight: settings.weight,
      namespace: names.namespace,
    },
    `connector ready: consuming ${names.subject(dispatchSubject(settings.carrier))}, publishing ${names.subject(receiptSubject(settings.carrier))}`,
  );
  const statsTimer = setInterval(() => {
    logger.info({ stats: runtime.stats() }, 'connector stats');
  }, 60_000);
  statsTimer.unref();
}
