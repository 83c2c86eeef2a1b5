import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { OpenApiDocument } from '../../src/entry-points/http/openapi/openapi-document.js';

/**
 * Validates values against the schemas of the OpenAPI document with ajv (draft 2020-12, the dialect of OpenAPI 3.1).
 *
 * `closed` (the default) adds `unevaluatedProperties: false` to every object schema that lists its properties: the
 * document leaves response objects open so fields can be added within v1, but the code must never send a field the
 * document does not name.
 */
export interface DocumentValidator {
  /** The schema at a JSON pointer into the document, e.g. `/components/schemas/Balance`. */
  at(pointer: string): ValidateFunction;
  /** The JSON body schema of a response: `paths[path][method].responses[status]`, following a response `$ref`. */
  response(path: string, method: string, status: number | string): ValidateFunction;
  /** The schema of a response of `components.responses` (global ones such as RouteNotFound). */
  namedResponse(name: string): ValidateFunction;
  /** The raw response object (headers included), `$ref` followed. */
  responseObject(path: string, method: string, status: number | string): ResponseObject;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Record<string, { required?: boolean; $ref?: string }>;
  readonly content?: Record<string, { schema: unknown }>;
  readonly 'x-error-codes'?: readonly string[];
}

const DOCUMENT_ID = 'urn:sms-gateway:openapi';
const escape = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

export function closeObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(closeObjects);
  if (typeof value !== 'object' || value === null) return value;
  const node = Object.fromEntries(Object.entries(value).map(([key, child]) => [key, closeObjects(child)]));
  const type = node.type;
  const isObjectSchema = type === 'object' || (Array.isArray(type) && type.includes('object'));
  if (isObjectSchema && typeof node.properties === 'object' && node.properties !== null && !('additionalProperties' in node)) {
    node.unevaluatedProperties = false;
  }
  return node;
}

export function documentValidator(document: OpenApiDocument, options: { closed?: boolean } = {}): DocumentValidator {
  const { paths, webhooks, components } = document;
  const parts = { paths, webhooks, components };
  const schema = (options.closed ?? true) ? closeObjects(parts) : structuredClone(parts);
  // strictSchema refuses unknown keywords in every schema compiled; the document's sections that hold the schemas
  // are declared as inert keywords of the root, so `#/components/schemas/…` pointers resolve in place
  const ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, allErrors: true });
  addFormatsModule.default(ajv);
  for (const keyword of Object.keys(parts)) ajv.addKeyword(keyword);
  ajv.addSchema({ ...(schema as object), $id: DOCUMENT_ID });
  const cache = new Map<string, ValidateFunction>();
  const at = (pointer: string): ValidateFunction => {
    let validate = cache.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      cache.set(pointer, validate);
    }
    return validate;
  };

  function responsePointer(path: string, method: string, status: number | string): string {
    const raw = document.paths[path]?.[method]?.responses as Record<string, { $ref?: string }> | undefined;
    const entry = raw?.[String(status)];
    if (!entry) throw new Error(`the document has no response ${String(status)} for ${method.toUpperCase()} ${path}`);
    if (entry.$ref) return entry.$ref.slice(1);
    return `/paths/${escape(path)}/${method}/responses/${String(status)}`;
  }

  function resolve(pointer: string): ResponseObject {
    let node: unknown = document;
    for (const part of pointer.split('/').slice(1)) node = (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    return node as ResponseObject;
  }

  return {
    at,
    response: (path, method, status) => at(`${responsePointer(path, method, status)}/content/application~1json/schema`),
    namedResponse: (name) => at(`/components/responses/${escape(name)}/content/application~1json/schema`),
    responseObject: (path, method, status) => resolve(responsePointer(path, method, status)),
  };
}

/** ajv's errors as one readable line, for assertion messages. */
export function errorsOf(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`).join('; ');
}
