import { KEY_STATUSES, type KeyStatus } from '../../api-keys/api-key.js';
import type { KeyView } from '../../api-keys/api-key-behaviour.js';
import { checkWebhookUrl, webhookUrlPolicyOf } from '../../webhooks/url-guard.js';
import { done, rejected, type CliGateway, type CommandArgs, type CommandOutcome, type CommandSpec } from './command.js';
import { humanTime, isoTime, table } from './format.js';
import { SecretUnreadableError } from '../../libraries/errors/internal-errors.js';

const SHOWN_ONCE = 'Store it now: it is not shown again.';
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

const isKeyStatus = (value: string): value is KeyStatus => (KEY_STATUSES as readonly string[]).includes(value);
const unknownKey = (keyId: string) => rejected(`unknown or deleted key ${keyId}`);

function parseInstant(text: string): number | null {
  if (!ISO_INSTANT.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

function keyJson(key: KeyView) {
  return {
    key_id: key.keyId,
    merchant_id: key.merchantId,
    environment: key.environment,
    key: key.display,
    status: key.status,
    deleted: key.deleted,
    expires_at: isoTime(key.expiresAt),
    created_at: isoTime(key.createdAt),
    last_used_at: isoTime(key.lastUsedAt),
    suspended_until: isoTime(key.suspendedUntil),
    webhook_url: key.webhookUrl,
    webhook_basic_auth_username: key.webhookBasicAuthUsername,
    webhook_basic_auth_password_set: key.webhookBasicAuthPasswordSet,
    signing: key.signing,
  };
}

export interface CreateKeyOptions {
  readonly merchantId: string;
  readonly status?: string | undefined;
  /** ISO 8601 instant with an offset, e.g. 2030-01-01T00:00:00Z. */
  readonly expiresAt?: string | undefined;
}

export async function createKey(gateway: CliGateway, options: CreateKeyOptions): Promise<CommandOutcome> {
  const status = options.status ?? 'allowed';
  if (!isKeyStatus(status)) return rejected(`unknown status "${status}"`, [`one of: ${KEY_STATUSES.join(', ')}`]);
  const expiresAt = options.expiresAt === undefined ? null : parseInstant(options.expiresAt);
  if (options.expiresAt !== undefined && expiresAt === null) {
    return rejected(`--expires-at "${options.expiresAt}" must be an ISO 8601 instant such as 2030-01-01T00:00:00Z`);
  }
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const issued = await gateway.useCases.apiKeys.issueKey(merchant.id, { status, expiresAt });
  const text = `Key ${issued.keyId} created for ${merchant.id} (status ${status}, ${gateway.config.environment}).\nAPI key: ${issued.apiKey}`;
  const json = {
    key_id: issued.keyId,
    merchant_id: merchant.id,
    api_key: issued.apiKey,
    key: issued.display,
    status,
    expires_at: isoTime(expiresAt),
  };
  return done(text, json, [SHOWN_ONCE]);
}

/** Prefix and last 4 only; whether a webhook password is set, never the password. */
export async function listKeys(gateway: CliGateway, options: { readonly merchantId: string }): Promise<CommandOutcome> {
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const keys = await gateway.useCases.apiKeys.listKeys(merchant.id);
  const basicAuth = (k: KeyView) => {
    const password = k.webhookBasicAuthPasswordSet ? 'password set' : null;
    if (k.webhookBasicAuthUsername === null) return password ?? '-';
    return password === null ? k.webhookBasicAuthUsername : `${k.webhookBasicAuthUsername} (${password})`;
  };
  const text = table(
    ['KEY ID', 'KEY', 'STATUS', 'EXPIRES', 'LAST USED', 'WEBHOOK URL', 'BASIC AUTH', 'SIGNING'],
    keys.map((k) => [
      k.keyId,
      k.display,
      k.deleted ? 'deleted' : k.status,
      humanTime(k.expiresAt),
      humanTime(k.lastUsedAt),
      k.webhookUrl ?? '-',
      basicAuth(k),
      k.signing ? 'on' : 'off',
    ]),
    'No keys.',
  );
  return done(text, keys.map(keyJson));
}

export async function setKeyStatus(
  gateway: CliGateway,
  options: { readonly keyId: string; readonly status: string },
): Promise<CommandOutcome> {
  if (!isKeyStatus(options.status)) return rejected(`unknown status "${options.status}"`, [`one of: ${KEY_STATUSES.join(', ')}`]);
  const changed = await gateway.useCases.apiKeys.setStatus(options.keyId, options.status);
  if (changed !== true) return unknownKey(options.keyId);
  return done(`Key ${options.keyId} is now ${options.status}.`, { key_id: options.keyId, status: options.status });
}

/** A new secret at once; the old key stops authenticating in the same step. */
export async function rotateKey(gateway: CliGateway, options: { readonly keyId: string }): Promise<CommandOutcome> {
  const issued = await gateway.useCases.apiKeys.rotateKey(options.keyId);
  if (issued === null) return unknownKey(options.keyId);
  const text = `Key ${issued.keyId} rotated; the previous key no longer works.\nAPI key: ${issued.apiKey}`;
  return done(text, { key_id: issued.keyId, api_key: issued.apiKey, key: issued.display }, [SHOWN_ONCE]);
}

export async function deleteKey(gateway: CliGateway, options: { readonly keyId: string }): Promise<CommandOutcome> {
  const deleted = await gateway.useCases.apiKeys.deleteKey(options.keyId);
  if (deleted !== true) return unknownKey(options.keyId);
  return done(`Key ${options.keyId} deleted.`, { key_id: options.keyId, deleted: true });
}

export type SetWebhookOptions =
  | { readonly keyId: string; readonly clear: true }
  | {
      readonly keyId: string;
      readonly clear?: false;
      readonly url: string;
      readonly username?: string | undefined;
      readonly password?: string | undefined;
    };

/** Replaces the key's webhook settings as a whole: credentials not given are removed. */
export async function setWebhook(gateway: CliGateway, options: SetWebhookOptions): Promise<CommandOutcome> {
  if (options.clear === true) {
    const cleared = await gateway.useCases.apiKeys.setWebhook(options.keyId, null);
    if (cleared !== true) return unknownKey(options.keyId);
    return done(`Webhook of key ${options.keyId} removed.`, { key_id: options.keyId, webhook_url: null });
  }
  // the rule and settings of a send's callback_url on POST /send; delivery checks every connection's address again
  const verdict = await checkWebhookUrl(options.url, webhookUrlPolicyOf(gateway.config));
  if (!verdict.accepted) {
    const why = verdict.refusal === 'form' ? 'without credentials' : 'no loopback, private, link-local or other special-purpose address';
    return rejected(`--url "${options.url}" ${verdict.message} (${why})`);
  }
  if (options.password !== undefined && options.username === undefined) return rejected('--password needs --username');
  // Basic auth joins them with ":"
  if (options.username !== undefined && (options.username === '' || options.username.includes(':'))) {
    return rejected('--username must be non-empty and contain no ":"');
  }
  const webhook = { url: options.url, username: options.username ?? null, password: options.password ?? null };
  const set = await gateway.useCases.apiKeys.setWebhook(options.keyId, webhook);
  if (set !== true) return unknownKey(options.keyId);
  const auth =
    webhook.username === null ? 'no basic auth' : `basic auth as ${webhook.username}${webhook.password === null ? '' : ' with a password'}`;
  const json = {
    key_id: options.keyId,
    webhook_url: webhook.url,
    webhook_basic_auth_username: webhook.username,
    webhook_basic_auth_password_set: webhook.password !== null,
  };
  return done(`Webhook of key ${options.keyId}: ${webhook.url} (${auth}).`, json);
}

/** Opt-in HMAC signing of webhook bodies; turning it on issues a new secret, shown once. */
export async function setSigning(
  gateway: CliGateway,
  options: { readonly keyId: string; readonly enabled: boolean },
): Promise<CommandOutcome> {
  const result = await gateway.useCases.apiKeys.setSigning(options.keyId, options.enabled);
  if (result === null) return unknownKey(options.keyId);
  if (result.secret === null) return done(`Webhook signing of key ${options.keyId} is off.`, { key_id: options.keyId, signing: false });
  const text = `Webhook signing of key ${options.keyId} is on.\nSigning secret: ${result.secret}`;
  return done(text, { key_id: options.keyId, signing: true, secret: result.secret }, [SHOWN_ONCE]);
}

/**
 * After SECRETS_KEY changed (the old key moved to SECRETS_PREVIOUS_KEYS), or over secrets journaled in clear before
 * sealing: journals every key's webhook password and signing secret again, sealed with the current key. Once done,
 * the previous keys can be removed from the configuration.
 */
export async function resealSecrets(gateway: CliGateway): Promise<CommandOutcome> {
  try {
    const { keys, resealed } = await gateway.useCases.apiKeys.resealSecrets();
    return done(`${String(resealed)} secret(s) of ${String(keys)} key(s) sealed again with the current key.`, { keys, resealed });
  } catch (error) {
    if (!(error instanceof SecretUnreadableError)) throw error;
    return rejected(`${error.message}: add the key that sealed it to SECRETS_PREVIOUS_KEYS and run this again`);
  }
}

type KeyCommand = (gateway: CliGateway, options: { readonly keyId: string }) => Promise<CommandOutcome>;
const byKeyId = (run: KeyCommand) => (args: CommandArgs) => (gateway: CliGateway) => run(gateway, { keyId: args.arg('keyId') });

export const KEY_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['keys', 'create'],
    args: ['merchantId'],
    usage: '[--status allowed] [--expires-at <ISO 8601>]',
    summary: 'issue an API key; prints the key once',
    options: { status: { type: 'string' }, 'expires-at': { type: 'string' } },
    prepare: (args) => (gateway) =>
      createKey(gateway, { merchantId: args.arg('merchantId'), status: args.option('status'), expiresAt: args.option('expires-at') }),
  },
  {
    words: ['keys', 'list'],
    args: ['merchantId'],
    summary: "a merchant's keys: prefix and last 4, status, last use, webhook (never its password)",
    prepare: (args) => (gateway) => listKeys(gateway, { merchantId: args.arg('merchantId') }),
  },
  {
    words: ['keys', 'set-status'],
    args: ['keyId', 'status'],
    summary: `set a key's status: ${KEY_STATUSES.join(', ')}`,
    prepare: (args) => (gateway) => setKeyStatus(gateway, { keyId: args.arg('keyId'), status: args.arg('status') }),
  },
  {
    words: ['keys', 'rotate'],
    args: ['keyId'],
    summary: 'replace a key; prints the new key once, the old one stops working at once',
    prepare: byKeyId(rotateKey),
  },
  { words: ['keys', 'delete'], args: ['keyId'], summary: 'delete a key (it answers 401 from then on)', prepare: byKeyId(deleteKey) },
  {
    words: ['keys', 'set-webhook'],
    args: ['keyId'],
    usage: '--url https://... [--username <u> --password <p>] | --clear',
    summary: "set or remove a key's webhook URL and Basic credentials",
    options: { url: { type: 'string' }, username: { type: 'string' }, password: { type: 'string' }, clear: { type: 'boolean' } },
    prepare(args) {
      const keyId = args.arg('keyId');
      const url = args.option('url');
      if (args.flag('clear')) {
        const others = [url, args.option('username'), args.option('password')];
        if (others.some((value) => value !== undefined)) return { usageError: '--clear takes no other option' };
        return (gateway) => setWebhook(gateway, { keyId, clear: true });
      }
      if (url === undefined) return { usageError: 'give --url, or --clear' };
      return (gateway) => setWebhook(gateway, { keyId, url, username: args.option('username'), password: args.option('password') });
    },
  },
  {
    words: ['keys', 'signing'],
    args: ['keyId', 'on|off'],
    summary: 'turn HMAC webhook signing on (prints the secret once) or off',
    prepare(args) {
      const value = args.arg('on|off');
      if (value !== 'on' && value !== 'off') return { usageError: `signing must be on or off, not "${value}"` };
      return (gateway) => setSigning(gateway, { keyId: args.arg('keyId'), enabled: value === 'on' });
    },
  },
  {
    words: ['secrets', 'reseal'],
    args: [],
    summary: 'seal every webhook password and signing secret again with SECRETS_KEY (after a key rotation)',
    prepare: () => (gateway) => resealSecrets(gateway),
  },
];
