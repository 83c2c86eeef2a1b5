// Writes docs/openapi.json, the OpenAPI 3.1 document of the merchant API (npm run docs:openapi).
// test/unit/entry-points/openapi.test.ts fails when the file differs from what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument, serialiseOpenApiDocument } from '../../src/entry-points/http/openapi/build-document.js';
import { loadConfig } from '../../src/libraries/config/config.js';

/** The version a node started with the default configuration reports (config/default.json). */
export const DOCUMENTED_VERSION = (): string => loadConfig({ env: {} }).version;

export const OPENAPI_FILE = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OPENAPI_FILE, serialiseOpenApiDocument(buildOpenApiDocument({ version: DOCUMENTED_VERSION() })));
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
