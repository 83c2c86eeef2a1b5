import type { JetStreamManager } from '@nats-io/jetstream';

/**
 * The keys a NATS key-value bucket holds now under `filter` (a subject pattern of keys: `carrier.*`, `>` for all),
 * read from the bucket's stream in one request. A key whose last write deleted it is listed too: its read says so.
 *
 * Not the client's `keys()`: that listing is a consumer that follows the bucket's writes while it is read and ends
 * once it has caught up, or after 5 s without a write. On a bucket written every few hundred milliseconds (connector
 * presence) it could go on for as long as the writes did, and a connector's heartbeat waited on it for good.
 */
export async function bucketKeys(jsm: JetStreamManager, bucket: string, filter = '>'): Promise<string[]> {
  const prefix = `$KV.${bucket}.`;
  const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}${filter}` });
  return Object.keys(info.state.subjects ?? {})
    .filter((subject) => subject.startsWith(prefix))
    .map((subject) => subject.slice(prefix.length));
}
