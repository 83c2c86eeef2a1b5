import type { JsonSchema } from '../joi-json-schema.js';
import type { JsonObject } from './openapi-document.js';
import type { SchemaName } from './schema-names.js';

// The small builders the schemas, responses and operations of the document are written with.

export const ref = (name: SchemaName): JsonObject => ({ $ref: `#/components/schemas/${name}` });
export const nullable = (schema: JsonObject): JsonObject => ({ anyOf: [schema, { type: 'null' }] });
export const text = (description: string, extra: JsonObject = {}): JsonObject => ({ type: 'string', description, ...extra });
export const nullableText = (description: string, extra: JsonObject = {}): JsonObject => ({
  type: ['string', 'null'],
  description,
  ...extra,
});
export const integer = (description: string, extra: JsonObject = {}): JsonObject => ({
  type: 'integer',
  minimum: 0,
  description,
  ...extra,
});
export const decimal = (description: string): JsonObject => ({ type: 'number', minimum: 0, description });
export const timestamp = (description: string): JsonObject => ({ type: 'string', format: 'date-time', description });
export const nullableTimestamp = (description: string): JsonObject => ({ type: ['string', 'null'], format: 'date-time', description });
export const oneOfValues = (values: readonly string[], description: string): JsonObject => ({
  type: 'string',
  enum: [...values],
  description,
});

type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

/**
 * An object schema whose properties are exactly the keys of `T` (the compiler refuses a missing or an extra one);
 * every key is required but those listed in `optional`, which must be optional in `T`.
 */
export function objectOf<T>(
  description: string,
  properties: { readonly [K in keyof T]-?: JsonSchema },
  optional: readonly OptionalKeys<T>[] = [],
): JsonObject {
  const keys = Object.keys(properties);
  return { type: 'object', description, required: keys.filter((key) => !(optional as readonly string[]).includes(key)), properties };
}

/** Adds documentation to the schema at `path` (`a.b`, `[]` for array items) of a converted joi schema. */
export function annotate(schema: JsonSchema, notes: Readonly<Record<string, JsonObject>>): JsonSchema {
  const copy = structuredClone(schema) as Record<string, unknown>;
  for (const [path, extra] of Object.entries(notes)) {
    let node: Record<string, unknown> = copy;
    for (const part of path === '' ? [] : path.split('.')) {
      const next = part === '[]' ? node.items : (node.properties as Record<string, unknown> | undefined)?.[part];
      if (typeof next !== 'object' || next === null) throw new Error(`OpenAPI: the request schema has no "${path}"`);
      node = next as Record<string, unknown>;
    }
    Object.assign(node, extra);
  }
  return copy;
}

export const json = (schema: JsonObject): JsonObject => ({ 'application/json': { schema } });
