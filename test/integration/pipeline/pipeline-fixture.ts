import { expect } from 'chai';
import type { Config, DeepPartial } from '../../../src/libraries/config/config.js';
import type { Logger } from '../../../src/libraries/logger/logger.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import type { Gateway } from '../../../src/gateway.js';
import { client, dataOf, type ApiClient, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import type { WebhookEnvelope } from '../../helpers/webhook-receiver.js';

/**
 * The whole message pipeline for the end-to-end tests: a private nats-server, a fresh PostgreSQL database, a NATS
 * transport and a gateway node (HTTP on a free port) running the sandbox simulator in process.
 */
export interface Pipeline {
  readonly nats: TestNats;
  readonly databaseUrl: string;
  /** The running node's own NATS connection (replaced by `restartNode`). */
  readonly transport: Transport;
  /** The node currently running (replaced by `restartNode`). */
  readonly api: ApiFixture;
  readonly client: ApiClient;
  /**
   * Stops the node gracefully (and closes its NATS connection), then starts a new one, with a connection of its
   * own, on the same database and NATS server. Resolves with the stopped node once the new one serves.
   */
  restartNode(): Promise<ApiFixture>;
  stop(): Promise<void>;
}

interface RunningNode {
  readonly api: ApiFixture;
  readonly transport: Transport;
}

/** The tests poll GET /status and send in bursts: the contract's per-key limits are not what they measure. */
const GENEROUS_RATE_LIMITS = { send: 10_000, status: 100_000 } as const;

export interface PipelineOptions {
  /** false: no simulator; the test publishes receipts itself. */
  readonly inProcessSimulator?: boolean;
  readonly logger?: Logger;
}

export async function startPipeline(overrides: DeepPartial<Config> = {}, options: PipelineOptions = {}): Promise<Pipeline> {
  const config: DeepPartial<Config> = { ...overrides, rateLimits: { ...GENEROUS_RATE_LIMITS, ...overrides.rateLimits } };
  const nats = await startTestNats();
  const databaseUrl = await (await testPostgres()).createDatabase('pipeline');
  async function open(): Promise<RunningNode> {
    const transport = await connectNatsTransport({ servers: nats.url, name: 'pipeline-test' });
    try {
      const node = { transport, inProcessSimulator: options.inProcessSimulator ?? true, config };
      return { transport, api: await startApi(databaseUrl, options.logger ? { ...node, logger: options.logger } : node) };
    } catch (error) {
      await transport.close();
      throw error;
    }
  }
  async function close(node: RunningNode): Promise<void> {
    await node.api.stop();
    await node.transport.close();
  }
  let current = await open();
  let stopped = false;
  return {
    nats,
    databaseUrl,
    get transport() {
      return current.transport;
    },
    get api() {
      return current.api;
    },
    client: client(() => current.api.api),
    async restartNode() {
      const old = current;
      await close(old);
      current = await open();
      return old.api;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await close(current).catch(() => undefined);
      await nats.stop();
    },
  };
}

export interface WebhookMerchant extends SeededMerchant {
  readonly username: string;
  readonly password: string;
}

/** A funded merchant whose key sends its events to `url` with Basic credentials. */
export async function merchantWithWebhook(gateway: Gateway, url: string, name = 'Pipeline shop'): Promise<WebhookMerchant> {
  const merchant = await seedMerchant(gateway, { name, prepaid: '1000' });
  const username = `user-${merchant.keyId}`;
  const password = `p4ss:${merchant.keyId}`;
  expect(await gateway.useCases.apiKeys.setWebhook(merchant.keyId, { url, username, password })).to.equal(true);
  return { ...merchant, username, password };
}

/** POST /send (immediate); the 201 data (status `pending`). */
export async function send(api: ApiClient, key: string, to: readonly string[], extra: Record<string, unknown> = {}): Promise<SendData> {
  const data = dataOf<SendData>(await api.send(key, { to, message: 'pipeline test', ...extra }), 201);
  expect(data.status).to.equal('pending');
  return data;
}

/** A number of the sandbox whose last two digits choose the simulator's outcome. */
export const numberEnding = (ending: string, prefix = '+2438123456'): string => `${prefix}${ending}`;

export interface RecipientStatusView {
  readonly recipient_index: number;
  readonly phone: string;
  readonly status: string;
  readonly carrier_status: string | null;
  readonly carrier: string;
  readonly segments: number;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly updated_at: string | null;
  readonly sent_at: string | null;
  readonly delivered_at: string | null;
  readonly failed_at: string | null;
}

export interface MessageStatus {
  readonly message_id: string;
  readonly status: string;
  readonly total_recipients: number;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  readonly recipients: readonly RecipientStatusView[];
}

export async function statusOf(api: ApiClient, key: string, messageId: string): Promise<MessageStatus> {
  return dataOf<MessageStatus>(await api.status(key, messageId));
}

// ---------------------------------------------------------------------------------------------------------------
// The contract's events

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

const RECIPIENT_BASE = ['carrier', 'recipient_index', 'recipient_phone'];
/** `data` keys of each event type: v1's, plus the additive `recipient_index` on recipient events. */
export const DATA_KEYS: Readonly<Record<string, readonly string[]>> = {
  'sms.queued': ['currency', 'scheduled_at', 'total_cost', 'total_messages', 'total_recipients'],
  'sms.processing': [...RECIPIENT_BASE].sort(),
  'sms.sent': [...RECIPIENT_BASE, 'sent_at'].sort(),
  'sms.delivered': [...RECIPIENT_BASE, 'delivered_at', 'segments'].sort(),
  'sms.failed': [...RECIPIENT_BASE, 'error_code', 'error_message', 'failed_at', 'retryable'].sort(),
};

/** The lifecycle order of recipient events (HTTP delivery order is not guaranteed, so lists are compared in it). */
export const LIFECYCLE: readonly string[] = ['sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed'];

/** The envelope is exactly the contract's five fields, and `data` exactly the keys of its type. */
export function expectEnvelope(event: WebhookEnvelope): void {
  expect(Object.keys(event).sort(), JSON.stringify(event)).to.deep.equal(['data', 'event_id', 'event_type', 'message_id', 'timestamp']);
  expect(event.event_id).to.match(UUID_V4);
  expect(event.timestamp).to.match(ISO_UTC);
  expect(event.message_id).to.match(/^msg_[A-Za-z0-9]+$/);
  const keys = DATA_KEYS[event.event_type];
  expect(keys, `event_type ${event.event_type}`).to.not.equal(undefined);
  expect(Object.keys(event.data).sort(), event.event_type).to.deep.equal(keys);
}

/** One delivery per event id (bodies of repeated deliveries are identical). */
export function uniqueEvents(events: readonly WebhookEnvelope[]): WebhookEnvelope[] {
  const byId = new Map<string, WebhookEnvelope>();
  for (const event of events) {
    const first = byId.get(event.event_id);
    if (first) expect(event, `redelivery of ${event.event_id}`).to.deep.equal(first);
    else byId.set(event.event_id, event);
  }
  return [...byId.values()];
}

/** A recipient's event types, in lifecycle order. */
export function recipientEventTypes(events: readonly WebhookEnvelope[], messageId: string, recipientIndex: number): string[] {
  return events
    .filter((e) => e.message_id === messageId && e.event_type !== 'sms.queued' && e.data.recipient_index === recipientIndex)
    .map((e) => e.event_type)
    .sort((a, b) => LIFECYCLE.indexOf(a) - LIFECYCLE.indexOf(b));
}

/** Event types a recipient ends with, by the simulator's outcome for its number (docs/carrier-protocol.md §11). */
export function expectedEventTypes(ending: string): string[] {
  switch (ending) {
    case '91':
    case '95':
    case '96':
      return ['sms.processing', 'sms.failed'];
    case '90':
    case '92':
    case '93':
    case '94':
      return ['sms.processing', 'sms.sent', 'sms.failed'];
    case '97':
      return ['sms.processing', 'sms.sent'];
    default:
      return ['sms.processing', 'sms.sent', 'sms.delivered'];
  }
}

/** Final recipient status by ending (97 never gets a final receipt: it stays `sent`). */
export function expectedFinalStatus(ending: string): 'delivered' | 'failed' | 'sent' {
  const last = expectedEventTypes(ending).at(-1);
  return last === 'sms.delivered' ? 'delivered' : last === 'sms.failed' ? 'failed' : 'sent';
}

/** Recipients that ended (delivered or failed), or the 97s that stay `sent` once accepted. */
export function isSettled(recipient: RecipientStatusView): boolean {
  const ending = recipient.phone.slice(-2);
  const expected = expectedFinalStatus(ending);
  return expected === 'sent' ? recipient.status === 'sent' && recipient.carrier_status === 'accepted' : recipient.status === expected;
}

/** `<message_id>/<recipient_index>/<event_type>` (`<message_id>/-/sms.queued` for the message's own event). */
export function eventKey(event: WebhookEnvelope): string {
  const recipient = event.data.recipient_index;
  const index =
    event.event_type === 'sms.queued' ? '-' : typeof recipient === 'number' ? String(recipient) : `invalid:${JSON.stringify(recipient)}`;
  return `${event.message_id}/${index}/${event.event_type}`;
}

/** The keys of every event an immediate send to these numbers must emit (by the simulator's outcome table). */
export function expectedEventKeys(messageId: string, numbers: readonly string[]): string[] {
  return [
    `${messageId}/-/sms.queued`,
    ...numbers.flatMap((n, i) => expectedEventTypes(n.slice(-2)).map((type) => `${messageId}/${i}/${type}`)),
  ];
}

/**
 * Event key → the event ids delivered for it. Every expected event arrived exactly when the keys are the expected
 * ones and each has exactly one event id (redeliveries of that id allowed).
 */
export function eventIdsByKey(events: readonly WebhookEnvelope[]): Map<string, Set<string>> {
  const byKey = new Map<string, Set<string>>();
  for (const event of events) {
    const ids = byKey.get(eventKey(event)) ?? new Set<string>();
    ids.add(event.event_id);
    byKey.set(eventKey(event), ids);
  }
  return byKey;
}
