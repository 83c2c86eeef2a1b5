import { loadConfig, type Config, type DeepPartial } from '../../src/libraries/config/config.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { openPostgresPersistence } from '../../src/libraries/persistence/persistence.js';
import { mustParseMoney } from '../../src/pricing/money.js';
import { eventsOf, WEBHOOK_TOPIC, type WebhookOutboxPayload } from '../../src/webhooks/webhook-jobs.js';
import type { WebhookEvent } from '../../src/webhooks/event-envelope.js';

/** The configuration tests run with: test profile, server mode on the given database. */
export function testConfig(overrides: DeepPartial<Config> = {}): Config {
  return loadConfig({ env: { NODE_ENV: 'test' }, overrides: { mode: 'server', ...overrides } });
}

export async function gatewayOnPostgres(
  url: string,
  options: Partial<GatewayOptions> & { config?: DeepPartial<Config> } = {},
): Promise<Gateway> {
  const config = testConfig({ database: { url }, ...options.config });
  const persistence = await openPostgresPersistence({ url, poolSize: 10 });
  const gateway = await createGateway({ ...options, config, persistence });
  const stop = gateway.stop.bind(gateway);
  return Object.assign(gateway, {
    async stop() {
      await stop();
      await persistence.close();
    },
  });
}

export interface SeededMerchant {
  readonly merchantId: string;
  readonly apiKey: string;
  readonly keyId: string;
}

/**
 * A merchant as an operator would set it up: both wallets funded, a few pricing rows (DR Congo networks and a
 * French one), one allowed key.
 */
export async function seedMerchant(
  gateway: Gateway,
  options: { name?: string; prepaid?: string; postpaid?: string; timezone?: string; pricing?: boolean } = {},
): Promise<SeededMerchant> {
  const created = await gateway.useCases.merchants.createMerchant({
    name: options.name ?? 'Test shop',
    ...(options.timezone ? { timezone: options.timezone } : {}),
  });
  if (!created.ok) throw new Error(JSON.stringify(created.issues));
  const merchantId = created.value.id;
  const wallets = gateway.useCases.wallets;
  if (options.prepaid !== undefined) {
    await wallets.openWallet(merchantId, 'prepaid');
    await wallets.topUp(merchantId, 'prepaid', mustParseMoney(options.prepaid), 'seed');
  }
  if (options.postpaid !== undefined) {
    await wallets.openWallet(merchantId, 'postpaid');
    await wallets.topUp(merchantId, 'postpaid', mustParseMoney(options.postpaid), 'seed');
  }
  if (options.pricing !== false) {
    await gateway.useCases.merchants.setPricing(merchantId, [
      { countryCallingCode: '243', networkPrefix: '81', price: mustParseMoney('0.02'), carrier: 'vodacom-cd' },
      { countryCallingCode: '243', networkPrefix: '99', price: mustParseMoney('0.03'), carrier: 'airtel-cd' },
      { countryCallingCode: '33', networkPrefix: '6', price: mustParseMoney('0.05'), carrier: 'orange-fr' },
    ]);
  }
  const key = await gateway.useCases.apiKeys.issueKey(merchantId);
  return { merchantId, apiKey: key.apiKey, keyId: key.keyId };
}

/** Webhook events still in the outbox (a node without transport keeps them: nothing carries them out), for one message. */
export async function outboxEvents(gateway: Gateway, messageId: string): Promise<WebhookEvent[]> {
  const entries = await gateway.persistence.outbox.pending({ limit: 10_000, topics: [WEBHOOK_TOPIC] });
  return entries.flatMap((entry) => eventsOf(entry.payload as WebhookOutboxPayload)).filter((event) => event.message_id === messageId);
}
