import { readFileSync } from 'node:fs';
import Joi from 'joi';
import type { LongMessageMethod } from './smpp-encoding.js';
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
 * One SMPP account, the configuration of one SMPP connector process, from `SMPP_*` environment variables. Every
 * setting names its variable; `describeSmppSettings()` lists them (variable, meaning, default) for the docs.
 */

export type BindMode = 'transceiver' | 'transmitter_receiver';

export interface SmppAccount {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** PEM of the CA that signs the centre's certificate (SMPP_TLS_CA_FILE read), or null for the system's CAs. */
  readonly tlsCa: string | null;
  readonly systemId: string;
  readonly password: string;
  readonly systemType: string;
  readonly bindMode: BindMode;
  /** Sessions: transceivers, or transmitter + receiver pairs. */
  readonly binds: number;
  /** submit_sm sent and not yet answered, per bind. */
  readonly window: number;
  /** submit_sm per second for the whole account, shared by its binds. */
  readonly maxSubmitsPerSecond: number;
  readonly sourceAddress: {
    /** Sender used when a job's sender_id is null; empty: source_addr left empty, the centre's default. */
    readonly defaultSender: string;
    readonly shortCodeTon: number;
    readonly shortCodeNpi: number;
  };
  readonly enquireLinkIntervalMs: number;
  readonly enquireLinkTimeoutMs: number;
  readonly reconnectInitialMs: number;
  readonly reconnectMaxMs: number;
  /** registered_delivery of every submit_sm (1: final receipt, success or failure). */
  readonly registeredDelivery: number;
  readonly longMessageMethod: LongMessageMethod;
  /** A submit_sm without submit_sm_resp after this long is submitted again (on a live bind). */
  readonly submitTimeoutMs: number;
  /** Submissions of one part before giving the job back (`retry`) when responses time out or binds drop. */
  readonly submitAttempts: number;
  /** Submissions of one part answered ESME_RTHROTTLED / ESME_RMSGQFUL before giving the job back. */
  readonly throttleAttempts: number;
  /** Delay a `retry` outcome asks for. */
  readonly retryDelayMs: number;
  /** stop(): how long to wait for outstanding responses before unbinding. */
  readonly stopTimeoutMs: number;
}

function setting<T extends Joi.Schema>(schema: T, env: string, description: string): T {
  return schema.description(description).meta({ env }) as T;
}

const positiveInt = () => Joi.number().integer().min(1);
const octet = () => Joi.number().integer().min(0).max(255);

const smppSchema = Joi.object({
  host: setting(Joi.string().hostname().required(), 'SMPP_HOST', 'Host name or address of the message centre (SMSC).'),
  port: setting(Joi.number().port().default(2775), 'SMPP_PORT', 'TCP port of the message centre.'),
  tls: setting(Joi.boolean().default(false), 'SMPP_TLS', 'Connect over TLS (true/false).'),
  tlsCaFile: setting(
    Joi.string().allow('').default(''),
    'SMPP_TLS_CA_FILE',
    'With SMPP_TLS: PEM file of the CA that signs the centre\u2019s certificate (empty: the system\u2019s CAs).',
  ),
  systemId: setting(Joi.string().min(1).max(15).required(), 'SMPP_SYSTEM_ID', 'system_id of the bind (at most 15 characters).'),
  password: setting(Joi.string().max(8).allow('').required(), 'SMPP_PASSWORD', 'Password of the bind (at most 8 characters).'),
  systemType: setting(
    Joi.string().max(12).allow('').default(''),
    'SMPP_SYSTEM_TYPE',
    'system_type of the bind (at most 12 characters; often empty).',
  ),
  bindMode: setting(
    Joi.string().valid('transceiver', 'transmitter_receiver').default('transceiver'),
    'SMPP_BIND_MODE',
    'transceiver: one session per bind; transmitter_receiver: a transmitter and a receiver session per bind.',
  ),
  binds: setting(positiveInt().max(64).default(1), 'SMPP_BINDS', 'Binds opened by the connector.'),
  window: setting(positiveInt().max(1000).default(10), 'SMPP_WINDOW', 'submit_sm sent and not yet answered per bind.'),
  maxSubmitsPerSecond: setting(
    positiveInt().default(50),
    'SMPP_MAX_SUBMITS_PER_SECOND',
    'submit_sm per second for the account, shared by its binds.',
  ),
  defaultSender: setting(
    Joi.string().max(20).allow('').default(''),
    'SMPP_DEFAULT_SENDER',
    'Sender for jobs without sender_id (empty: source_addr left empty, the centre\u2019s default).',
  ),
  shortCodeTon: setting(octet().default(3), 'SMPP_SHORT_CODE_TON', 'source_addr_ton of a short-code sender (3 to 8 digits).'),
  shortCodeNpi: setting(octet().default(0), 'SMPP_SHORT_CODE_NPI', 'source_addr_npi of a short-code sender.'),
  enquireLinkIntervalMs: setting(
    positiveInt().default(30_000),
    'SMPP_ENQUIRE_LINK_INTERVAL_MS',
    'Interval of enquire_link on each session.',
  ),
  enquireLinkTimeoutMs: setting(
    positiveInt().default(10_000),
    'SMPP_ENQUIRE_LINK_TIMEOUT_MS',
    'A session whose enquire_link is not answered within this is closed and reconnected.',
  ),
  reconnectInitialMs: setting(
    positiveInt().default(1_000),
    'SMPP_RECONNECT_INITIAL_MS',
    'First delay before reconnecting a lost session (doubles each failure).',
  ),
  reconnectMaxMs: setting(positiveInt().default(60_000), 'SMPP_RECONNECT_MAX_MS', 'Longest delay between reconnection attempts.'),
  registeredDelivery: setting(
    octet().default(1),
    'SMPP_REGISTERED_DELIVERY',
    'registered_delivery of submit_sm (1: a final receipt, success or failure).',
  ),
  longMessageMethod: setting(
    Joi.string().valid('udh', 'sar', 'payload').default('udh'),
    'SMPP_LONG_MESSAGE_METHOD',
    'Concatenation of long messages: udh (header with an 8-bit reference), sar (SAR TLVs) or payload (whole text in message_payload).',
  ),
  submitTimeoutMs: setting(
    positiveInt().default(10_000),
    'SMPP_SUBMIT_TIMEOUT_MS',
    'A submit_sm without answer after this long is submitted again.',
  ),
  submitAttempts: setting(
    positiveInt().max(10).default(2),
    'SMPP_SUBMIT_ATTEMPTS',
    'Submissions of a part (timeouts, binds lost) before the job is given back to the stream.',
  ),
  throttleAttempts: setting(
    positiveInt().max(50).default(5),
    'SMPP_THROTTLE_ATTEMPTS',
    'Submissions of a part answered ESME_RTHROTTLED/ESME_RMSGQFUL before the job is given back.',
  ),
  retryDelayMs: setting(
    positiveInt().default(5_000),
    'SMPP_RETRY_DELAY_MS',
    'Delay before a job given back (no bind, throttled, no answer) is delivered again.',
  ),
  stopTimeoutMs: setting(
    positiveInt().default(5_000),
    'SMPP_STOP_TIMEOUT_MS',
    'On stop: longest wait for outstanding submit_sm_resp before unbinding.',
  ),
}).custom((value: { reconnectInitialMs: number; reconnectMaxMs: number }, helpers) => {
  if (value.reconnectMaxMs < value.reconnectInitialMs)
    return crossSettingProblem(helpers, 'SMPP_RECONNECT_MAX_MS must not be below SMPP_RECONNECT_INITIAL_MS', 'SMPP_RECONNECT_MAX_MS');
  return value;
});

export class SmppAccountError extends InternalError {
  readonly kind = 'smpp_settings_invalid';

  constructor(
    message: string,
    /** The environment variable at fault. */
    readonly variable: string,
  ) {
    super(message);
  }
}

export type SmppSettingDescription = FlatSettingDescription;

export function describeSmppSettings(): SmppSettingDescription[] {
  return describeFlatSettings(smppSchema);
}

/**
 * Validates settings given by key (tests, or the env reader below). `readFile` reads SMPP_TLS_CA_FILE.
 * Throws SmppAccountError naming the variable.
 */
export function parseSmppAccount(
  settings: RawSettings,
  readFile: (file: string) => string = (file) => readFileSync(file, 'utf8'),
): SmppAccount {
  const result = validateFlatSettings(smppSchema, settings, 'SMPP_');
  if (!result.ok) throw new SmppAccountError(`Invalid SMPP account: ${result.problem.message}`, result.problem.variable);
  const value = result.value as {
    host: string;
    port: number;
    tls: boolean;
    tlsCaFile: string;
    systemId: string;
    password: string;
    systemType: string;
    bindMode: BindMode;
    binds: number;
    window: number;
    maxSubmitsPerSecond: number;
    defaultSender: string;
    shortCodeTon: number;
    shortCodeNpi: number;
    enquireLinkIntervalMs: number;
    enquireLinkTimeoutMs: number;
    reconnectInitialMs: number;
    reconnectMaxMs: number;
    registeredDelivery: number;
    longMessageMethod: LongMessageMethod;
    submitTimeoutMs: number;
    submitAttempts: number;
    throttleAttempts: number;
    retryDelayMs: number;
    stopTimeoutMs: number;
  };
  let tlsCa: string | null = null;
  if (value.tls && value.tlsCaFile !== '') {
    try {
      tlsCa = readFile(value.tlsCaFile);
    } catch (error) {
      throw new SmppAccountError(`Cannot read SMPP_TLS_CA_FILE ${value.tlsCaFile}: ${(error as Error).message}`, 'SMPP_TLS_CA_FILE');
    }
  }
  const { tlsCaFile: _file, defaultSender, shortCodeTon, shortCodeNpi, ...rest } = value;
  return Object.freeze({ ...rest, tlsCa, sourceAddress: Object.freeze({ defaultSender, shortCodeTon, shortCodeNpi }) });
}

/** The account from `SMPP_*` environment variables (unset variables take their defaults). */
export function loadSmppAccount(
  env: Readonly<Record<string, string | undefined>> = process.env,
  readFile?: (file: string) => string,
): SmppAccount {
  return parseSmppAccount(readFlatSettings(smppSchema, env), readFile);
}

// ---------------------------------------------------------------------------------------------------------------
// source address rules

export interface SourceAddress {
  readonly addr: string;
  readonly ton: number;
  readonly npi: number;
}

/**
 * TON/NPI of a sender: `+` and digits → international (TON 1, NPI 1, sent without the `+`); 3 to 8 digits → short
 * code (SMPP_SHORT_CODE_TON/NPI, default 3/0); anything else (letters) → alphanumeric (TON 5, NPI 0); longer digit
 * strings without `+` → unknown TON, ISDN NPI (0/1). A null sender takes SMPP_DEFAULT_SENDER by the same rules;
 * when that is empty, source_addr is empty with TON 0 NPI 0 and the centre fills its default.
 */
export function sourceAddressFor(senderId: string | null, rules: SmppAccount['sourceAddress']): SourceAddress {
  const sender = (senderId ?? rules.defaultSender).trim();
  if (sender === '') return { addr: '', ton: 0, npi: 0 };
  if (/^\+\d{1,20}$/.test(sender)) return { addr: sender.slice(1), ton: 1, npi: 1 };
  if (/^\d{3,8}$/.test(sender)) return { addr: sender, ton: rules.shortCodeTon, npi: rules.shortCodeNpi };
  if (/^\d+$/.test(sender)) return { addr: sender, ton: 0, npi: 1 };
  return { addr: sender, ton: 5, npi: 0 };
}

/** Destination: E.164 `+digits` → digits, TON 1 NPI 1. */
export function destinationAddressFor(to: string): SourceAddress {
  return { addr: to.startsWith('+') ? to.slice(1) : to, ton: 1, npi: 1 };
}
