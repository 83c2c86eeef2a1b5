import Joi from 'joi';
import { NATS_NAMESPACE_PATTERN } from '../transport/nats-names.js';

/**
 * The one description of the configuration: every key, its type, its environment variable, its meaning (`Config`
 * is computed from it). Defaults live in `config/default.json` (data only); `config/<NODE_ENV>.json` overrides them;
 * environment variables override both. The README's configuration table is generated from this schema and
 * default.json.
 *
 * A setting: its schema, environment variable and description. `NoInfer` keeps the schema's own type rather than one
 * guessed from where the setting is used (a bare `Joi.string()` in a group would otherwise be typed `any`).
 */
function setting<T extends Joi.Schema>(schema: T, env: string, description: string): NoInfer<T> {
  return schema.description(description).meta({ env }) as T;
}

/**
 * The value a schema accepts, as joi's types carry it (`Joi.string()` a string, `oneOf('a', 'b')` 'a' | 'b', a group
 * its object): `Config` is computed from the schema with it, so the two cannot drift apart.
 */
export type SettingValue<S> = S extends Joi.AnySchema<infer T> ? T : never;

/** A group of settings: a joi object whose type is the read-only object of its settings' values. */
function group<K extends Record<string, Joi.AnySchema>>(keys: K): Joi.ObjectSchema<{ readonly [N in keyof K]: SettingValue<K[N]> }> {
  return Joi.object<{ readonly [N in keyof K]: SettingValue<K[N]> }>(keys);
}

/** A string that is one of `values`, typed as their union. */
function oneOf<const V extends string>(...values: V[]): Joi.StringSchema<V> {
  return Joi.string<V>().valid(...values);
}

/** A list of `item`s (comma separated in an environment variable), typed as a read-only array of their values. */
function listOf<S extends Joi.AnySchema>(item: S): Joi.ArraySchema<readonly SettingValue<S>[]> {
  return Joi.array<readonly SettingValue<S>[]>().items(item);
}

const positiveInt = () => Joi.number().integer().min(1);
const nonNegativeInt = () => Joi.number().integer().min(0);
/** 32 bytes in base64. */
const SECRET_KEY = /^[A-Za-z0-9+/]{43}=$/;
const SECRET_KEY_FORMAT = '{{#label}} must be 32 random bytes in base64 (openssl rand -base64 32)';

const rateLimitBucket = (env: string, what: string) => setting(positiveInt(), env, `Requests per key per window admitted on ${what}.`);

export const configSchema = group({
  environment: setting(
    oneOf('sandbox', 'production'),
    'GATEWAY_ENVIRONMENT',
    'Which environment this process serves: sandbox accepts only sk_test_ keys, production only sk_live_ keys.',
  ),
  mode: setting(
    oneOf('embedded', 'server'),
    'GATEWAY_MODE',
    'embedded: PGlite in DATA_DIR, in-process transport and simulator. server: PostgreSQL or MongoDB, NATS JetStream.',
  ),
  version: setting(Joi.string(), 'GATEWAY_VERSION', 'Version reported by GET /health.'),
  http: group({
    host: setting(Joi.string(), 'HOST', 'Interface the merchant API listens on.'),
    port: setting(Joi.number().port(), 'PORT', 'Port of the merchant API (0 picks a free port).'),
    bodyLimitBytes: setting(positiveInt(), 'HTTP_BODY_LIMIT_BYTES', 'Largest accepted request body; larger bodies get 413/1110.'),
  }),
  metrics: group({
    port: setting(Joi.number().port(), 'METRICS_PORT', 'Operator port serving /metrics (0 picks a free port).'),
  }),
  log: group({
    level: setting(oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'), 'LOG_LEVEL', 'Minimum level of the JSON logs.'),
  }),
  shutdown: group({
    graceMs: setting(
      positiveInt(),
      'SHUTDOWN_GRACE_MS',
      'On SIGTERM/SIGINT: how long the node may take to finish requests, drain and hand its shards over before it exits 1.',
    ),
    drainMs: setting(
      nonNegativeInt(),
      'SHUTDOWN_DRAIN_MS',
      'On SIGTERM/SIGINT, before it stops accepting requests: how long the node keeps serving while GET /health answers 503 (checks.node: stopping), so a load balancer takes it out first (0: stop accepting at once). Counts within SHUTDOWN_GRACE_MS.',
    ),
  }),
  database: group({
    dataDir: setting(Joi.string(), 'DATA_DIR', 'Embedded mode: directory of the PGlite database.'),
    url: setting(Joi.string().allow(''), 'DATABASE_URL', 'Server mode: PostgreSQL connection string.'),
    mongoUrl: setting(Joi.string().allow(''), 'MONGO_URL', 'Server mode: MongoDB connection string (used when DATABASE_URL is empty).'),
    poolSize: setting(positiveInt(), 'DATABASE_POOL_SIZE', 'Connections in the PostgreSQL pool.'),
  }),
  nats: group({
    url: setting(Joi.string().allow(''), 'NATS_URL', 'Server mode: NATS server(s), comma separated.'),
    namespace: setting(
      Joi.string()
        .allow('')
        .pattern(NATS_NAMESPACE_PATTERN)
        .messages({ 'string.pattern.base': '{{#label}} must be 1 to 32 letters, digits, - or _ (empty: no namespace)' }),
      'NATS_NAMESPACE',
      'Server mode: prefix of every NATS stream, subject, consumer and bucket of this deployment, so that several deployments share one NATS server (1–32 of A-Z a-z 0-9 - _; empty: none, the unprefixed names). The same on every node, connector and CLI of a deployment.',
    ),
  }),
  actors: group({
    askTimeoutMs: setting(
      positiveInt(),
      'ACTOR_ASK_TIMEOUT_MS',
      "A request's deadline (no step starts after it: 503/1402, nothing applied), and each ask's; a command taken by then is waited for this long again.",
    ),
    snapshotEvery: setting(positiveInt(), 'ACTOR_SNAPSHOT_EVERY', 'Persistent actors snapshot their state every N events.'),
    idleShutdownMs: setting(positiveInt(), 'ACTOR_IDLE_SHUTDOWN_MS', 'Idle actors passivate after this long.'),
    settledIdleMs: setting(
      positiveInt(),
      'ACTOR_SETTLED_IDLE_MS',
      'A message whose recipients all have their final status (nothing left to dispatch) passivates after this long idle.',
    ),
  }),
  merchantDefaults: group({
    timezone: setting(Joi.string(), 'MERCHANT_DEFAULT_TIMEZONE', 'IANA time zone of merchants created without one.'),
    country: setting(Joi.string().length(2).uppercase(), 'MERCHANT_DEFAULT_COUNTRY', 'ISO 3166 country for national-format numbers.'),
    currency: setting(Joi.string().length(3).uppercase(), 'MERCHANT_DEFAULT_CURRENCY', 'ISO 4217 wallet currency of new merchants.'),
    locale: setting(Joi.string(), 'MERCHANT_DEFAULT_LOCALE', 'Locale giving the currency_symbol of /calculate.'),
    unitPrice: setting(
      Joi.string().pattern(/^\d+(\.\d{1,4})?$/),
      'DEFAULT_UNIT_PRICE',
      'Per-segment price of destinations without a pricing row, when the merchant sets none.',
    ),
  }),
  rateLimits: group({
    windowMs: setting(positiveInt(), 'RATE_LIMIT_WINDOW_MS', 'Length of the sliding rate-limit window.'),
    send: rateLimitBucket('RATE_LIMIT_SEND', 'POST /send'),
    status: rateLimitBucket('RATE_LIMIT_STATUS', 'GET /status/{message_id}'),
    balance: rateLimitBucket('RATE_LIMIT_BALANCE', 'GET /balance'),
    calculate: rateLimitBucket('RATE_LIMIT_CALCULATE', 'POST /calculate'),
    management: rateLimitBucket('RATE_LIMIT_MANAGEMENT', 'cancel, pause and resume together'),
    suspendAfterRejections: setting(
      positiveInt(),
      'SUSPEND_AFTER_REJECTIONS',
      'Rate-limit rejections within one window that suspend a key (1302).',
    ),
    suspensionMs: setting(positiveInt(), 'SUSPENSION_MS', 'How long a 1302 suspension lasts.'),
  }),
  scheduling: group({
    openEndedHorizonDays: setting(
      positiveInt(),
      'RECURRING_HORIZON_DAYS',
      'Recurring schedules without end_date are pre-computed over this many days.',
    ),
    maxScheduledSms: setting(positiveInt(), 'MAX_SCHEDULED_SMS', 'Cap on total_messages of a recurring schedule.'),
    receiptTimeoutMs: setting(positiveInt(), 'RECEIPT_TIMEOUT_MS', 'A recipient with no final receipt after this long fails with 1503.'),
    processEveryMs: setting(
      positiveInt(),
      'SCHEDULER_PROCESS_EVERY_MS',
      'How often Agenda looks for due occurrences (its latency on PGlite, which has no LISTEN/NOTIFY).',
    ),
  }),
  webhooks: group({
    timeoutMs: setting(positiveInt(), 'WEBHOOK_TIMEOUT_MS', 'A merchant endpoint slower than this counts as failed.'),
    retryDelaysMs: setting(
      listOf(positiveInt()).min(1),
      'WEBHOOK_RETRY_DELAYS_MS',
      'Delays before each retry after a failed delivery (comma separated); the contract: 30 s, 2 min, 10 min, 1 h.',
    ),
    concurrencyPerMerchant: setting(positiveInt(), 'WEBHOOK_CONCURRENCY_PER_MERCHANT', 'Deliveries in flight per merchant.'),
    concurrency: setting(positiveInt(), 'WEBHOOK_CONCURRENCY', 'Deliveries in flight per node.'),
    senderThread: setting(
      Joi.boolean(),
      'WEBHOOK_SENDER_THREAD',
      "Make webhook attempts (the HTTP client's connections, requests and answers) in a worker thread, off the node's main thread.",
    ),
    allowHttpLocalhost: setting(
      Joi.boolean(),
      'WEBHOOK_ALLOW_HTTP_LOCALHOST',
      'Sandbox only: also accept plain http://localhost webhook and callback URLs (always on in embedded mode, never in production).',
    ),
  }),
  cluster: group({
    nodeId: setting(Joi.string().allow(''), 'NODE_ID', 'Name of this node (random when empty).'),
    shards: setting(positiveInt(), 'CLUSTER_SHARDS', 'Number of shards actors are spread over; fixed per deployment.'),
    leaseTtlMs: setting(positiveInt(), 'CLUSTER_LEASE_TTL_MS', 'A shard lease not renewed for this long expires.'),
    stallToleranceMs: setting(
      positiveInt(),
      'CLUSTER_STALL_TOLERANCE_MS',
      "How long a node's busy main thread keeps its leases (renewed by a worker thread, PostgreSQL); silent longer, it is treated as wedged.",
    ),
    forwardRequests: setting(
      Joi.boolean(),
      'CLUSTER_FORWARD_REQUESTS',
      "Forward a merchant's request whole to the node owning its shard (one remote hop) instead of asking each of its actors there (up to three, the behaviour before forwarding; false keeps it).",
    ),
    failoverDeadlineMs: setting(
      positiveInt(),
      'CLUSTER_FAILOVER_DEADLINE_MS',
      'How long a request waits for a shard without owner (a node died) before answering 503/1402; in a cluster, the request deadline when longer than ACTOR_ASK_TIMEOUT_MS.',
    ),
  }),
  carriers: group({
    defaultCarrier: setting(
      Joi.string().pattern(/^[a-z0-9][a-z0-9_-]*$/),
      'DEFAULT_CARRIER',
      'Connector slug for destinations no pricing row names a carrier for (the sandbox always uses the simulator).',
    ),
  }),
  simulator: group({
    stepDelayMs: setting(nonNegativeInt(), 'SIMULATOR_STEP_DELAY_MS', 'Sandbox simulator: delay between two receipts of one dispatch.'),
    slowDelayMs: setting(nonNegativeInt(), 'SIMULATOR_SLOW_DELAY_MS', 'Sandbox simulator: extra delay of the "slow" outcome.'),
    receiptBatchMax: setting(
      positiveInt().max(500),
      'SIMULATOR_RECEIPT_BATCH_MAX',
      'Sandbox simulator: most receipts in one NATS message; receipts falling due together travel together (1: one receipt per message).',
    ),
    receiptLingerMs: setting(
      nonNegativeInt().max(1_000),
      'SIMULATOR_RECEIPT_LINGER_MS',
      'Sandbox simulator: how long a receipt falling due while none is being published waits for others to share its NATS message (0: only those falling due at once; at most 1000).',
    ),
  }),
  outbox: group({
    pollIntervalMs: setting(
      positiveInt(),
      'OUTBOX_POLL_INTERVAL_MS',
      'How often the relay looks for unrelayed outbox entries (backing off to 2 s after 10 s without work, back at once when work comes).',
    ),
  }),
  demo: group({
    seedMerchant: setting(Joi.boolean(), 'SEED_DEMO_MERCHANT', 'Create a funded demo merchant and print its key on first start.'),
  }),
  secrets: group({
    key: setting(
      Joi.string().allow('').pattern(SECRET_KEY).messages({ 'string.pattern.base': SECRET_KEY_FORMAT }),
      'SECRETS_KEY',
      'Key sealing webhook passwords and signing secrets at rest (AES-256-GCM): 32 random bytes in base64. Required by server-mode nodes and the CLI; embedded mode without one makes and keeps DATA_DIR/secrets.key.',
    ),
    previousKeys: setting(
      listOf(Joi.string().pattern(SECRET_KEY).messages({ 'string.pattern.base': SECRET_KEY_FORMAT })),
      'SECRETS_PREVIOUS_KEYS',
      'Keys replaced by SECRETS_KEY (comma separated): they still open what they sealed, until every secret is sealed again (`secrets reseal`).',
    ),
  }),
  auth: group({
    negativeCacheMs: setting(
      nonNegativeInt(),
      'AUTH_NEGATIVE_CACHE_MS',
      'How long a node remembers that a key is unknown, answering 401 again without a database lookup (0: never).',
    ),
    failuresPerAddress: setting(
      positiveInt(),
      'AUTH_FAILURES_PER_ADDRESS',
      '401s one client address may get per window; beyond them its requests get 429/1301 without a lookup, unless this node found their key within the last minute.',
    ),
    failureWindowMs: setting(positiveInt(), 'AUTH_FAILURE_WINDOW_MS', 'Window of AUTH_FAILURES_PER_ADDRESS.'),
  }),
  idempotency: group({
    ttlMs: setting(nonNegativeInt(), 'IDEMPOTENCY_TTL_MS', 'How long an Idempotency-Key is remembered.'),
  }),
  tuning: group({
    messageOwnerCacheSize: setting(
      positiveInt(),
      'MESSAGE_OWNER_CACHE_SIZE',
      'Message owners each node remembers (about 100 bytes each): status reads and receipts ask the database once per message at most, and the lookups of one turn of the event loop share one query. A node remembers the messages it creates and those of the sends it forwards to another node; `sms_gateway_message_owner_lookups_total` counts the misses.',
    ),
    merchantCatalogTtlMs: setting(
      positiveInt(),
      'MERCHANT_CATALOG_TTL_MS',
      "How long a node reuses a merchant's record and pricing before reading them again.",
    ),
    apiKeyLookupCacheMs: setting(
      positiveInt(),
      'API_KEY_LOOKUP_CACHE_MS',
      'How long a node remembers which key an API key hash is (rotation and deletion are still enforced by the key).',
    ),
    outboxBatchSize: setting(positiveInt(), 'OUTBOX_BATCH_SIZE', 'Outbox entries the relay takes in one pass.'),
    outboxDoneFlushMs: setting(
      positiveInt(),
      'OUTBOX_DONE_FLUSH_MS',
      'Outbox entries a request finished itself are marked done together, every this many milliseconds.',
    ),
    outboxFollowUpGraceMs: setting(
      nonNegativeInt(),
      'OUTBOX_FOLLOW_UP_GRACE_MS',
      'How long the relay leaves an interrupted send or a wallet adjustment to the request that wrote it before carrying it out itself.',
    ),
    scheduleRegistrationsInFlight: setting(
      positiveInt(),
      'SCHEDULE_REGISTRATIONS_IN_FLIGHT',
      'Scheduler job saves in flight at once while the relay registers a batch of scheduled sends.',
    ),
    schedulerExtraLockers: setting(
      nonNegativeInt(),
      'SCHEDULER_EXTRA_LOCKERS',
      'PostgreSQL: scheduler instances besides the main one that lock and run due occurrences (a burst due together is picked up faster).',
    ),
    schedulerPoolSize: setting(positiveInt(), 'SCHEDULER_POOL_SIZE', "Connections of each scheduler instance's PostgreSQL pool."),
    receiptConcurrency: setting(positiveInt(), 'RECEIPT_CONCURRENCY', 'Receipt messages a node applies at once.'),
    clusterReceiptBatchMax: setting(
      positiveInt(),
      'CLUSTER_RECEIPT_BATCH_MAX',
      "Cluster: most messages' receipts carried to their shard's owner in one hop.",
    ),
    clusterWebhookTargetBatchMax: setting(
      positiveInt(),
      'CLUSTER_WEBHOOK_TARGET_BATCH_MAX',
      "Cluster: most keys' webhook targets read from their shard's owner in one hop.",
    ),
    healthProbeTimeoutMs: setting(
      positiveInt(),
      'HEALTH_PROBE_TIMEOUT_MS',
      'GET /health: a database or transport ping slower than this reports it down.',
    ),
    httpShareOfGrace: setting(
      Joi.number().greater(0).less(1),
      'SHUTDOWN_HTTP_SHARE_OF_GRACE',
      'Share of SHUTDOWN_GRACE_MS (less SHUTDOWN_DRAIN_MS) the merchant port gets to finish in-flight requests; the rest drains the workers and hands the shards over.',
    ),
  }),
}).options({ presence: 'required' });
