import type { DeadLetter, DeadLetters } from '../dead-letters-port.js';
import type { Collections, DeadLetterDoc } from './mongo-collections.js';
import { isDuplicateKey } from './mongo-errors.js';

export function createMongoDeadLetters(c: Collections): DeadLetters {
  const toLetter = ({ _id, ...rest }: DeadLetterDoc): DeadLetter => ({ id: _id, ...rest });
  return {
    async record(letter) {
      const { id, ...rest } = letter;
      // JSON round trip: the stored event reads back exactly as from PostgreSQL jsonb
      const fields: Omit<DeadLetterDoc, '_id'> = { ...rest, event: JSON.parse(JSON.stringify(rest.event)) as unknown };
      await c.deadLetters.updateOne({ _id: id }, { $setOnInsert: fields }, { upsert: true }).catch((error: unknown) => {
        if (!isDuplicateKey(error)) throw error;
      });
    },
    async list({ merchantId, limit }) {
      const docs = await c.deadLetters
        .find(merchantId === undefined ? {} : { merchantId })
        .sort({ droppedAt: 1, _id: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toLetter);
    },
    async take(id) {
      const doc = await c.deadLetters.findOneAndDelete({ _id: id });
      return doc ? toLetter(doc) : null;
    },
  };
}
