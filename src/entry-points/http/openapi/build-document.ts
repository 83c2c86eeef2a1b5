import { API_ROOT } from '../routes.js';
import { apiDescription, errorCodeEntries } from './api-description.js';
import { HEADERS, PARAMETERS, RESPONSES } from './components.js';
import type { OpenApiDocument, OpenApiOptions } from './openapi-document.js';
import { paths, TAGS } from './operations.js';
import { componentSchemas } from './schemas.js';
import { webhooks } from './webhooks.js';

/**
 * The OpenAPI 3.1 document of the merchant API, generated from the code it describes: request bodies from the joi
 * schemas, paths from ROUTES, error codes from ERROR_CATALOGUE, header patterns from the HTTP app. The response
 * schemas (schemas.ts) are typed against the TypeScript types of the responses (every key, no other), and
 * test/integration/http/openapi-conformance.test.ts validates real responses against them.
 *
 * Response objects are documented open (no `additionalProperties: false`): fields may be added within v1
 * (additions are additive), so clients must ignore unknown fields. The conformance test closes
 * them, so the code never sends a field the document does not name.
 */

export function buildOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'SMS gateway API',
      summary: 'Send SMS, follow their delivery, read the balance, convert amounts; webhooks for status changes.',
      version: options.version,
      description: apiDescription(),
    },
    servers: options.servers ?? [{ url: API_ROOT, description: 'This gateway (sandbox or production, as the host serves).' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths: paths(),
    webhooks: webhooks(),
    components: {
      schemas: componentSchemas(),
      responses: RESPONSES,
      parameters: PARAMETERS,
      headers: HEADERS,
      securitySchemes: {
        'app-key': {
          type: 'apiKey',
          in: 'header',
          name: 'app-key',
          description: 'The merchant key `sk_<test|live>_<32 base62>`, per merchant and environment. Keep it server-side.',
        },
        'webhook-basic': {
          type: 'http',
          scheme: 'basic',
          description:
            'Webhooks only: the gateway sends the Basic credentials configured on the key, when set (not on `callback_url` deliveries).',
        },
      },
    },
    'x-error-codes': errorCodeEntries(),
  };
}

/**
 * The form of docs/openapi.json: 2-space indent, final newline, keys in the order the generator builds them (the
 * conventional OpenAPI order: openapi, info, servers, tags, paths, webhooks, components), which depends on the code
 * alone, so the same code always writes the same bytes.
 */
export function serialiseOpenApiDocument(document: OpenApiDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
