/**
 * The journal half of the persistence port (docs/architecture.md, "The persistence port"): events per key with strictly increasing
 * sequence numbers, snapshots, and the outbox entries an append causes. Every adapter passes one contract suite.
 */

/** A durable side effect recorded in the same write as the state change that causes it. */
export interface OutboxEntry {
  /** Unique; consumers deduplicate on it (dispatch id, event id). */
  readonly id: string;
  /** What the relay does with it, e.g. `webhook.event`, `carrier.dispatch`, `message.create`. */
  readonly topic: string;
  readonly payload: unknown;
  /** Shard of the key that wrote it; the relay of the shard's owner publishes it. */
  readonly shard: number;
}

/** Lease a writer holds; an append under a lease that is no longer current is refused (split-brain fence). */
export interface Fence {
  readonly shard: number;
  readonly owner: string;
  readonly epoch: number;
}

/**
 * Who owns what a record creates (the merchant of a message), for the directory's owner lookup
 * (`Directory.messageOwner`): written with the record, in the same write, so the thing is findable exactly when its
 * creation is durable. An owner already recorded for the id stays.
 */
export interface OwnerEntry {
  readonly id: string;
  readonly owner: string;
}

/**
 * The first record of another key (a message a charge creates), written in the same write as the append that
 * carries it, under that append's fence: both are written or neither. Its outbox entries and owner are written with
 * it, as if it were an append of its own at `at` of the carrier.
 */
export interface CompanionRecord {
  readonly key: string;
  readonly seq: number;
  readonly events: readonly unknown[];
  readonly outbox: readonly OutboxEntry[];
  readonly owner?: OwnerEntry;
}

export interface JournalAppend {
  readonly key: string;
  /** The sequence number this append takes: one more than the last one the writer saw. */
  readonly seq: number;
  readonly events: readonly unknown[];
  readonly outbox: readonly OutboxEntry[];
  /**
   * Ids of outbox entries this key wrote earlier that the append makes moot (a deadline nothing waits for any more):
   * removed with the write if still pending. Only entries of the same key are removed, and none if the append is
   * refused. An adapter that cannot remove them in the same write removes them just after, so a consumer must still
   * take a retired entry that was already on its way as a no-op.
   */
  readonly retire?: readonly string[];
  /** The owner the record establishes, if it creates something owned (see OwnerEntry). */
  readonly owner?: OwnerEntry;
  /**
   * Records of other keys written in the same write (Journal.writesCompanions). A companion whose key already holds
   * a record refuses the whole append as a conflict (`sequence_taken`), so the carrier is never written without it.
   */
  readonly companions?: readonly CompanionRecord[];
  readonly at: number;
  readonly fence?: Fence;
}

export interface JournalRecord {
  readonly key: string;
  readonly seq: number;
  readonly events: readonly unknown[];
  readonly at: number;
}

export interface Snapshot {
  readonly key: string;
  readonly seq: number;
  readonly state: unknown;
  readonly at: number;
}

export interface PendingOutboxEntry extends OutboxEntry {
  readonly key: string;
  readonly seq: number;
  readonly createdAt: number;
}

export interface Journal {
  /** Atomic: the record, its outbox entries and its companions are written together or not at all. */
  append(append: JournalAppend): Promise<void>;
  /**
   * Whether an append may carry companion records (JournalAppend.companions), written atomically with it. An adapter
   * that cannot write several keys in one atomic write says false, and refuses an append that carries any.
   */
  readonly writesCompanions: boolean;
  /** Records of a key with seq > afterSeq, in order. */
  read(key: string, afterSeq: number): Promise<readonly JournalRecord[]>;
  latestSnapshot(key: string): Promise<Snapshot | null>;
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  /**
   * Keys starting with `prefix` whose last record is older than `lastBefore` and that still hold records before their
   * last one (something to prune), oldest last record first, with that last sequence number.
   */
  prunable(query: PrunableQuery): Promise<readonly PrunableKey[]>;
  /**
   * Deletes the key's records with seq < `seq`, and only if its snapshot covers `seq` (a snapshot at `seq` or later):
   * recovery then starts from the snapshot. The record at `seq` stays, so an append under a sequence number the
   * key had already used still conflicts. Returns how many records were deleted.
   */
  pruneBefore(key: string, seq: number): Promise<number>;
}

export interface PrunableQuery {
  readonly prefix: string;
  readonly lastBefore: number;
  readonly limit: number;
}

export interface PrunableKey {
  readonly key: string;
  readonly seq: number;
}

export interface PendingQuery {
  readonly limit: number;
  readonly shards?: readonly number[];
  readonly topics?: readonly string[];
  /** Only entries created before this instant. */
  readonly olderThan?: number;
}

/** Which of several topics have entries pending, each with its own age limit (`pendingTopics`). */
export interface PendingTopicsQuery {
  readonly topics: readonly { readonly topic: string; readonly olderThan?: number }[];
  readonly shards?: readonly number[];
}

/** A record as an append writes it: its own, or a companion's at the time of the append carrying it. */
export interface WrittenRecord extends CompanionRecord {
  readonly at: number;
}

/** Every record an append writes: its own first, then its companions'. */
export function recordsOf(append: JournalAppend): readonly WrittenRecord[] {
  if (!append.companions || append.companions.length === 0) return [append];
  return [append, ...append.companions.map((companion) => ({ ...companion, at: append.at }))];
}

/** The outbox entries an append writes, its companions' included, as the outbox lists them. */
export function outboxEntriesOf(append: JournalAppend): PendingOutboxEntry[] {
  return recordsOf(append).flatMap((record) =>
    record.outbox.map((entry) => ({ ...entry, key: record.key, seq: record.seq, createdAt: record.at })),
  );
}

export interface Outbox {
  /** Entries not yet relayed, oldest first, optionally only of some shards. */
  pending(options: PendingQuery): Promise<readonly PendingOutboxEntry[]>;
  /**
   * Of the topics asked, those with at least one entry pending that was created before the topic's `olderThan`
   * (any age when it has none), in the shards asked (all when none), so a relay with nothing to carry out learns it
   * at once (PostgreSQL: one query for every topic; MongoDB: one probe per topic, sent together).
   */
  pendingTopics(query: PendingTopicsQuery): Promise<ReadonlySet<string>>;
  markDone(ids: readonly string[]): Promise<void>;
  /** How many entries wait, for metrics and health. */
  backlog(): Promise<number>;
  /**
   * Called after appends of this process wrote outbox entries, with those entries, so the relay can carry them out
   * at once without querying for them.
   */
  onAppended(listener: (entries: readonly PendingOutboxEntry[]) => void): () => void;
}
