import { EVENT_TYPES } from '../../../webhooks/event-envelope.js';
import type { OpenApiDocument } from './openapi-document.js';
import { EVENT_SCHEMA } from './schemas.js';
import { json, ref } from './schema-vocabulary.js';

// The webhooks of the document: one POST per event type, to the merchant's endpoint.

export function webhooks(): OpenApiDocument['webhooks'] {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: EVENT_SCHEMA[type].operationId,
          tags: ['Webhooks'],
          summary: `${type} event`,
          description:
            `${EVENT_SCHEMA[type].when} POSTed to the key's \`webhook_url\` and to the send's \`callback_url\` (each event once per distinct URL), ` +
            'one event per request, `Content-Type: application/json`. See the webhook rules in the description of the API.',
          security: [{}, { 'webhook-basic': [] }],
          parameters: [
            {
              name: 'X-Signature',
              in: 'header',
              required: false,
              description:
                "Only on deliveries to the key's `webhook_url`, for keys with HMAC signing enabled (additive, opt-in); never on `callback_url` " +
                'deliveries: `sha256=<hex>`, the HMAC-SHA256 with the signing secret of `<X-Signature-Timestamp>.<raw body>`.',
              schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
            },
            {
              name: 'X-Signature-Timestamp',
              in: 'header',
              required: false,
              description: 'Only with `X-Signature`: Unix time in seconds of the signing; reject stale ones to prevent replays.',
              schema: { type: 'string', pattern: '^[0-9]+$' },
            },
          ],
          requestBody: { required: true, content: json(ref(EVENT_SCHEMA[type].envelope)) },
          responses: {
            '2XX': { description: 'Acknowledged (200, 201, 204, …); the body is ignored.' },
            '4XX': { description: 'Permanent failure: the event is not retried.' },
            '5XX': {
              description: 'Retried (as are timeouts over 5 s and connection failures) after 30 s, 2 min, 10 min and 1 h, then dropped.',
            },
          },
        },
      },
    ]),
  );
}
