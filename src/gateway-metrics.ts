import { Gauge } from 'prom-client';
import type { CarrierGaugeSample } from './carriers/carrier-health.js';
import { METRIC_PREFIX, type Metrics } from './libraries/observability/metrics.js';
import type { DeadLetters } from './libraries/persistence/dead-letters-port.js';
import { recordsOf, type Journal, type JournalAppend } from './libraries/persistence/journal-port.js';
import type { MessageEvent } from './messaging/message-behaviour.js';
import { add } from './pricing/money.js';
import type { WalletEvent } from './wallets/wallet-behaviour.js';

/**
 * Composition-root wiring of the business numbers that no single component sees whole: they are read from what
 * the journal durably recorded. Counting at the journal (after a successful append) counts each fact once, on the
 * node that wrote it: a replayed Idempotency-Key, a duplicate refund or a repeated create writes no event, and a
 * fenced or conflicting append counts nothing. Recipient transitions need the message's state before the record as
 * well: the message host counts them (DomainHostOptions.onRecipientTransition), just as durably.
 */

function countRecord(
  append: Pick<JournalAppend, 'key' | 'events'>,
  metrics: Metrics,
  currencyOf: (merchantId: string) => Promise<string>,
  onError: (error: unknown) => void,
): void {
  const separator = append.key.indexOf(':');
  const kind = append.key.slice(0, separator);
  const id = append.key.slice(separator + 1);
  if (kind === 'message') {
    for (const event of append.events as readonly MessageEvent[]) {
      if (event.type === 'message_created') metrics.messageCreated(event.spec.sendingType);
      // journaled only when it fails the recipient: a recipient already final records nothing
      else if (event.type === 'recipient_signal' && event.signal.type === 'receipt_timeout') metrics.receiptTimedOut();
    }
  } else if (kind === 'wallet') {
    const movements = (append.events as readonly WalletEvent[]).filter((event) => event.type === 'charged' || event.type === 'refunded');
    if (movements.length === 0) return;
    currencyOf(id).then((currency) => {
      for (const event of movements) {
        // Money is already an integer of 1/10 000 of the currency: counted as it is, never through a decimal
        const amount = add(event.prepaid, event.postpaid);
        if (event.type === 'charged') metrics.charged(currency, amount);
        else metrics.refunded(currency, amount);
      }
    }, onError);
  }
}

/** The journal, with each append timed and, once durable, counted; `currencyOf` names a merchant's wallet currency. */
export function meteredJournal(
  journal: Journal,
  metrics: Metrics,
  currencyOf: (merchantId: string) => Promise<string>,
  onError: (error: unknown) => void,
): Journal {
  return {
    async append(append) {
      const started = process.hrtime.bigint();
      try {
        await journal.append(append);
      } finally {
        metrics.journalAppend(Number(process.hrtime.bigint() - started) / 1e9);
      }
      // a companion (the message a charge creates) is a record of its own key, written in the same append
      for (const record of recordsOf(append)) countRecord(record, metrics, currencyOf, onError);
    },
    read: (key, afterSeq) => journal.read(key, afterSeq),
    latestSnapshot: (key) => journal.latestSnapshot(key),
    saveSnapshot: (snapshot) => journal.saveSnapshot(snapshot),
    prunable: (query) => journal.prunable(query),
    pruneBefore: (key, seq) => journal.pruneBefore(key, seq),
    writesCompanions: journal.writesCompanions,
  };
}

/** Dead letters, counted by reason as they are recorded (the worker's drops). */
export function meteredDeadLetters(deadLetters: DeadLetters, metrics: Metrics): DeadLetters {
  return {
    async record(letter) {
      await deadLetters.record(letter);
      metrics.webhookDropped(letter.reason);
    },
    list: (options) => deadLetters.list(options),
    take: (id) => deadLetters.take(id),
  };
}

/**
 * Per carrier: `carrier_connectors_live` (connectors announcing themselves live) and `carrier_dispatch_backlog`
 * (jobs waiting in SMS_DISPATCH for the carrier; absent while unknown, and in embedded mode). Both read the carrier
 * monitor's memory when Prometheus scrapes (it refreshes the backlog on its own timer). Returns the unregistration.
 */
export function registerCarrierGauges(metrics: Metrics, samples: () => readonly CarrierGaugeSample[]): () => void {
  const registers = [metrics.registry];
  const names = { live: `${METRIC_PREFIX}carrier_connectors_live`, backlog: `${METRIC_PREFIX}carrier_dispatch_backlog` };
  new Gauge({
    name: names.live,
    help: 'Live connectors of each routed carrier (and of any carrier whose connector announces itself).',
    labelNames: ['carrier'] as const,
    registers,
    collect() {
      this.reset();
      for (const sample of samples()) this.set({ carrier: sample.carrier }, sample.connectorsLive);
    },
  });
  new Gauge({
    name: names.backlog,
    help: 'Dispatch jobs waiting in SMS_DISPATCH for each carrier: not yet delivered to a connector, or delivered and not yet settled.',
    labelNames: ['carrier'] as const,
    registers,
    collect() {
      this.reset();
      for (const sample of samples()) if (sample.dispatchBacklog !== null) this.set({ carrier: sample.carrier }, sample.dispatchBacklog);
    },
  });
  return () => {
    metrics.registry.removeSingleMetric(names.live);
    metrics.registry.removeSingleMetric(names.backlog);
  };
}
