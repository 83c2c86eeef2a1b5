import Joi from 'joi';
import {
  crossSettingProblem,
  describeFlatSettings,
  readFlatSettings,
  validateFlatSettings,
  type FlatSettingDescription,
  type RawSettings,
} from '../../libraries/config/flat-settings.js';
import { InternalError } from '../../libraries/errors/internal-errors.js';

/**
 * The configuration of one Kannel connector process, from `KANNEL_*` environment variables: where Kannel's smsbox
 * takes `sendsms` requests, the sendsms user, the delivery reports asked for, and the connector's own HTTP listener
 * that Kannel calls back with them. Every setting names its variable; `describeKannelSettings()` lists them.
 */

/** The report types of Kannel's `dlr-mask` (bits). */
export const DLR_TYPE = {
  delivered: 1,
  failed: 2,
  buffered: 4,
  smscSubmit: 8,
  smscReject: 16,
} as const;

export interface KannelSettings {
  /** smsbox's sendsms interface. */
  readonly sendsms: {
    readonly host: string;
    readonly port: number;
    readonly path: string;
    readonly username: string;
    readonly password: string;
  };
  /** Kannel `smsc` id the submissions are forced to (null: Kannel routes). */
  readonly smsc: string | null;
  /** Sender used when a job's sender_id is null (null: Kannel's default sender of the sendsms user). */
  readonly defaultSender: string | null;
  /** `dlr-mask` of every submission (bits of DLR_TYPE). */
  readonly dlrMask: number;
  /** The link's delivery-report listener. */
  readonly dlrListener: {
    readonly host: string;
    readonly port: number;
    /** Base URL through which Kannel reaches the listener (no trailing slash). */
    readonly publicUrl: string;
  };
  readonly requestTimeoutMs: number;
  /** HTTP connections to smsbox, i.e. sendsms requests in flight at once. */
  readonly maxConcurrentRequests: number;
  readonly maxSubmitsPerSecond: number;
  /** Delay a `retry` outcome asks for. */
  readonly retryDelayMs: number;
  /** stop(): longest wait for sendsms requests in flight. */
  readonly stopTimeoutMs: number;
}

function setting<T extends Joi.Schema>(schema: T, env: string, description: string): T {
  return schema.description(description).meta({ env }) as T;
}

const positiveInt = () => Joi.number().integer().min(1);

const kannelSchema = Joi.object({
  sendsmsHost: setting(
    Joi.string().hostname().required(),
    'KANNEL_SENDSMS_HOST',
    'Host name or address of Kannel\u2019s smsbox (sendsms interface).',
  ),
  sendsmsPort: setting(Joi.number().port().default(13013), 'KANNEL_SENDSMS_PORT', 'sendsms-port of the smsbox.'),
  sendsmsPath: setting(
    Joi.string()
      .pattern(/^\/[^\s?#]*$/)
      .default('/cgi-bin/sendsms'),
    'KANNEL_SENDSMS_PATH',
    'Path of the sendsms interface.',
  ),
  username: setting(Joi.string().min(1).required(), 'KANNEL_USERNAME', 'username of a sendsms-user group.'),
  password: setting(Joi.string().allow('').required(), 'KANNEL_PASSWORD', 'password of that sendsms-user.'),
  smsc: setting(
    Joi.string()
      .pattern(/^[A-Za-z0-9_.-]{1,64}$/)
      .allow('')
      .default(''),
    'KANNEL_SMSC',
    'smsc-id every submission is forced to (empty: Kannel\u2019s routing chooses).',
  ),
  defaultSender: setting(
    Joi.string().max(20).allow('').default(''),
    'KANNEL_DEFAULT_SENDER',
    'Sender for jobs without sender_id (empty: the sendsms-user\u2019s default, Kannel\u2019s global-sender).',
  ),
  dlrMask: setting(
    Joi.number()
      .integer()
      .min(1)
      .max(31)
      .default(DLR_TYPE.delivered | DLR_TYPE.failed | DLR_TYPE.buffered | DLR_TYPE.smscSubmit | DLR_TYPE.smscReject),
    'KANNEL_DLR_MASK',
    'dlr-mask of every submission: 1 delivered, 2 failed, 4 buffered, 8 smsc submit, 16 smsc reject (bits; default 31: every report). Must include 1 and 2.',
  ),
  dlrHost: setting(Joi.string().hostname().default('0.0.0.0'), 'KANNEL_DLR_HOST', 'Address the delivery-report listener binds.'),
  dlrPort: setting(Joi.number().port().default(13080), 'KANNEL_DLR_PORT', 'Port of the delivery-report listener (0: any free port).'),
  dlrPublicUrl: setting(
    Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .allow('')
      .default(''),
    'KANNEL_DLR_PUBLIC_URL',
    'Base URL through which smsbox reaches the listener, e.g. http://connector-1:13080 (empty: http://<KANNEL_DLR_HOST>:<port>, with 127.0.0.1 for 0.0.0.0).',
  ),
  requestTimeoutMs: setting(
    positiveInt().default(10_000),
    'KANNEL_REQUEST_TIMEOUT_MS',
    'A sendsms request not answered within this is given back (retry, uncertain).',
  ),
  maxConcurrentRequests: setting(
    positiveInt().max(8).default(2),
    'KANNEL_MAX_CONCURRENT_REQUESTS',
    'HTTP connections to smsbox, i.e. sendsms requests at once (smsbox listens with a backlog of 10: keep few).',
  ),
  maxSubmitsPerSecond: setting(positiveInt().default(50), 'KANNEL_MAX_SUBMITS_PER_SECOND', 'sendsms requests per second.'),
  retryDelayMs: setting(
    positiveInt().default(5_000),
    'KANNEL_RETRY_DELAY_MS',
    'Delay before a job given back (smsbox down, 5xx, timeout) is delivered again.',
  ),
  stopTimeoutMs: setting(positiveInt().default(5_000), 'KANNEL_STOP_TIMEOUT_MS', 'On stop: longest wait for sendsms requests in flight.'),
}).custom((value: { dlrMask: number }, helpers) => {
  const finals = DLR_TYPE.delivered | DLR_TYPE.failed;
  if ((value.dlrMask & finals) !== finals)
    return crossSettingProblem(helpers, 'KANNEL_DLR_MASK must include 1 (delivered) and 2 (failed)', 'KANNEL_DLR_MASK');
  return value;
});

export class KannelSettingsError extends InternalError {
  readonly kind = 'kannel_settings_invalid';

  constructor(
    message: string,
    /** The environment variable at fault. */
    readonly variable: string,
  ) {
    super(message);
  }
}

export type KannelSettingDescription = FlatSettingDescription;

export function describeKannelSettings(): KannelSettingDescription[] {
  return describeFlatSettings(kannelSchema);
}

/** Validates settings given by key (tests, or the env reader below). Throws KannelSettingsError naming the variable. */
export function parseKannelSettings(settings: RawSettings): KannelSettings {
  const result = validateFlatSettings(kannelSchema, settings, 'KANNEL_');
  if (!result.ok) throw new KannelSettingsError(`Invalid Kannel settings: ${result.problem.message}`, result.problem.variable);
  const v = result.value as {
    sendsmsHost: string;
    sendsmsPort: number;
    sendsmsPath: string;
    username: string;
    password: string;
    smsc: string;
    defaultSender: string;
    dlrMask: number;
    dlrHost: string;
    dlrPort: number;
    dlrPublicUrl: string;
    requestTimeoutMs: number;
    maxConcurrentRequests: number;
    maxSubmitsPerSecond: number;
    retryDelayMs: number;
    stopTimeoutMs: number;
  };
  const listenerHost = v.dlrHost === '0.0.0.0' || v.dlrHost === '::' ? '127.0.0.1' : v.dlrHost;
  return Object.freeze({
    sendsms: Object.freeze({ host: v.sendsmsHost, port: v.sendsmsPort, path: v.sendsmsPath, username: v.username, password: v.password }),
    smsc: v.smsc === '' ? null : v.smsc,
    defaultSender: v.defaultSender === '' ? null : v.defaultSender,
    dlrMask: v.dlrMask,
    dlrListener: Object.freeze({
      host: v.dlrHost,
      port: v.dlrPort,
      // with port 0 the listener's real port replaces it when it starts (see the link)
      publicUrl: (v.dlrPublicUrl === '' ? `http://${listenerHost}:${v.dlrPort}` : v.dlrPublicUrl).replace(/\/+$/, ''),
    }),
    requestTimeoutMs: v.requestTimeoutMs,
    maxConcurrentRequests: v.maxConcurrentRequests,
    maxSubmitsPerSecond: v.maxSubmitsPerSecond,
    retryDelayMs: v.retryDelayMs,
    stopTimeoutMs: v.stopTimeoutMs,
  });
}

/** The settings from `KANNEL_*` environment variables (unset variables take their defaults). */
export function loadKannelSettings(env: Readonly<Record<string, string | undefined>> = process.env): KannelSettings {
  return parseKannelSettings(readFlatSettings(kannelSchema, env));
}
