import { NatsNamespaceError } from '../errors/internal-errors.js';
/**
 * Every name the gateway, its connectors and its CLI use on NATS, and the namespace that sets one deployment's names
 * apart from another's on a shared server (`NATS_NAMESPACE`, README "Sharing a NATS server").
 *
 * The application names things without a namespace (the subjects and durables below, the streams of `STREAMS`, the
 * key-value buckets); the database bus of embedded mode uses those names as they are. On NATS, `NatsNames` turns
 * each into the name on the server:
 *
 * | kind | without a namespace | namespace `a` |
 * |---|---|---|
 * | stream | `SMS_DISPATCH` | `a_SMS_DISPATCH` |
 * | subject or filter | `sms.dispatch.>` | `a.sms.dispatch.>` |
 * | durable consumer | `gateway-receipts` | `a_gateway-receipts` |
 * | key-value bucket | `gateway-connectors` | `a_gateway-connectors` (its stream: `KV_a_gateway-connectors`) |
 *
 * The namespace is one more leading subject token, so no subject of one deployment matches a filter of another: two
 * namespaces differ in the first token, and a namespaced subject differs from one without a namespace in the
 * second (`sms`, `webhook` or `gw` there, `dispatch`, `receipts`, `jobs` or `shard` here). Stream, consumer and
 * bucket names take the namespace with `_`, which NATS allows in all three. It is case-sensitive: `a` and `A` are
 * two deployments.
 */

// ---- the names, as the application uses them (no namespace)

/** Dispatch jobs for one carrier's connector (stream `dispatch`). */
export const dispatchSubject = (carrier: string): string => `sms.dispatch.${carrier}`;
/** Receipts from one carrier's connector (stream `receipts`). */
export const receiptSubject = (carrier: string): string => `sms.receipts.${carrier}`;
/** Webhook delivery jobs of one merchant (stream `webhooks`). */
export const webhookSubject = (merchantId: string): string => `webhook.jobs.${merchantId}`;
/** Requests for the actors of one shard, served by its owner only (request/reply, no stream). */
export const shardSubject = (shard: number): string => `gw.shard.${shard}`;
/**
 * Requests for the actors of one shard addressed to one node, the owner the lease table names: no other member of
 * the shard's queue group (a frozen former owner still subscribed) can be handed them. The node id is written as one
 * subject token: every character but letters, digits and `-` as `_<code in hex>_` (`_` itself too), so two ids never
 * share a subject.
 */
export const ownerShardSubject = (shard: number, nodeId: string): string =>
  `gw.shard.${shard}.${nodeId.replace(/[^A-Za-z0-9-]/g, (c) => `_${c.charCodeAt(0).toString(16)}_`)}`;

/**
 * Notices of shards a node has just acquired, to every node (no stream, no reply): their routing hints change at
 * once rather than at their next lease round.
 */
export const SHARD_OWNERS_SUBJECT = 'gw.owners';

/** The gateway nodes' durable on the receipts stream. */
export const RECEIPTS_DURABLE = 'gateway-receipts';
/** The gateway nodes' durable on the webhook jobs stream. */
export const WEBHOOKS_DURABLE = 'webhook-delivery';
/** The durable shared by every connector process of one carrier, on the dispatch stream. */
export const connectorDurable = (carrier: string): string => `connector-${carrier}`;

/** Connector presence: key `<carrier>.<connector id>` (docs/carriers.md, "Routing and health"). */
export const PRESENCE_BUCKET = 'gateway-connectors';
/** A connector's dispatch records: key = the dispatch id, encoded. */
export const dispatchBucket = (carrier: string): string => `carrier-dispatches-${carrier}`;
/** A connector's correlations, and the reports that came before them: key = a carrier reference, encoded. */
export const referenceBucket = (carrier: string): string => `carrier-references-${carrier}`;
/**
 * Where connectors before 2026-11-26 kept the reports that came before their correlation; a connector starting takes
 * what it finds there and deletes the bucket.
 */
export const legacyEarlyReportBucket = (carrier: string): string => `carrier-orphans-${carrier}`;

// ---- the namespace

export const NATS_NAMESPACE_VARIABLE = 'NATS_NAMESPACE';
/** A namespace: letters, digits, `-` and `_`, 1 to 32 of them (legal in subjects, streams, consumers and buckets). */
export const NATS_NAMESPACE_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;
export const NATS_NAMESPACE_RULE = `${NATS_NAMESPACE_VARIABLE} must be 1 to 32 letters, digits, - or _ (empty: no namespace)`;

/** One deployment's names on the NATS server. */
export interface NatsNames {
  /** Empty: no namespace, every name exactly as the application has it. */
  readonly namespace: string;
  /** A JetStream stream, by its name in `STREAMS`. */
  stream(name: string): string;
  /** A subject, or a subject filter. */
  subject(subject: string): string;
  /** A subject received from the server, as the application names it (the namespace's token removed). */
  localSubject(subject: string): string;
  /** A durable consumer. */
  consumer(durable: string): string;
  /** A key-value bucket. */
  bucket(bucket: string): string;
}

/** The names of the deployment in `namespace` (empty: none); throws `NatsNamespaceError` on an invalid one. */
export function natsNames(namespace: string): NatsNames {
  if (namespace === '') {
    const same = (name: string): string => name;
    return { namespace, stream: same, subject: same, localSubject: same, consumer: same, bucket: same };
  }
  if (!NATS_NAMESPACE_PATTERN.test(namespace)) throw new NatsNamespaceError(namespace, NATS_NAMESPACE_RULE);
  const named = (name: string): string => `${namespace}_${name}`;
  const token = `${namespace}.`;
  return {
    namespace,
    stream: named,
    subject: (subject) => `${token}${subject}`,
    localSubject: (subject) => (subject.startsWith(token) ? subject.slice(token.length) : subject),
    consumer: named,
    bucket: named,
  };
}

/** A deployment without a namespace: today's names, as every deployment had before namespaces existed. */
export const NO_NAMESPACE: NatsNames = natsNames('');
