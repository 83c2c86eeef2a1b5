import type Joi from 'joi';
import { InternalError } from '../../libraries/errors/internal-errors.js';

/** A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) as a plain JSON value. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

/**
 * joi → JSON Schema (2020-12) for the subset of joi the request bodies use, read from joi's public `describe()`
 * output. Anything outside the subset throws, so a new rule in a schema cannot silently vanish from the OpenAPI
 * document; the one exception is `custom()` (arbitrary code, nothing to translate): its rule must be documented
 * next to the converted schema by hand.
 *
 * The validation options of `validateWith` are assumed: `convert: false` (no coercion, so joi accepts exactly the
 * JSON types) and unknown keys forbidden unless an object says `.unknown()`.
 *
 * Subset: any; string (min, max, length, pattern, email, uri, guid/uuid, isoDate, hostname, and joi's refusal of
 * `''` unless allowed); number (integer, min, max, greater, less, multiple, positive, negative); boolean; array
 * (items, min, max, length, unique); object (keys, required, forbidden, unknown, min, max, and `when` on a
 * sibling key); alternatives (try, match); on every type valid/allow (null included), invalid, default,
 * description, examples.
 *
 * Why our own joi converter: the maintained converter on npm (joi-to-json 5, joi 17/18, `open-api-3.1` output) was
 * compared on the two request bodies, and its document says less than joi checks. It drops joi's refusal of `''`
 * (no `minLength: 1` on `to[]`, `sender_id`, `callback_url`, the dates and times), so the document would accept
 * an empty sender id that the API refuses with 1110. On a key with `when()` on a sibling (`amount`, `sms_count` of
 * /calculate) it loses the type (`number` becomes any JSON type) and the conditional requirement (`amount` required
 * in `amount_to_sms` mode). It also passes an unknown joi rule over in silence, where this converter throws. The
 * property tests of test/unit/entry-points/openapi.test.ts hold this converter to agree with joi value by value.
 */
export function joiToJsonSchema(schema: Joi.Schema): JsonSchema {
  return convert(schema.describe() as Description, '');
}

interface Rule {
  readonly name: string;
  readonly args?: Readonly<Record<string, unknown>>;
}

interface When {
  readonly ref?: { readonly path?: readonly (string | number)[]; readonly ancestor?: unknown; readonly type?: unknown };
  readonly is?: Description;
  readonly then?: Description;
  readonly otherwise?: Description;
  readonly switch?: unknown;
}

interface Description {
  readonly type: string;
  readonly flags?: {
    readonly presence?: 'optional' | 'required' | 'forbidden';
    readonly only?: boolean;
    readonly default?: unknown;
    readonly description?: string;
    readonly unknown?: boolean;
    readonly match?: 'any' | 'one' | 'all';
    readonly [flag: string]: unknown;
  };
  readonly rules?: readonly Rule[];
  readonly allow?: readonly unknown[];
  readonly invalid?: readonly unknown[];
  readonly keys?: Readonly<Record<string, Description>>;
  readonly items?: readonly Description[];
  readonly matches?: readonly { readonly schema?: Description; readonly ref?: unknown }[];
  readonly whens?: readonly When[];
  readonly examples?: readonly unknown[];
  readonly [other: string]: unknown;
}

/** Flags that change nothing in JSON (messages, labels, error overrides) or that describe() reports for defaults. */
const IGNORED_FLAGS = new Set(['presence', 'only', 'default', 'description', 'unknown', 'match', 'label', 'error', 'sparse']);
/** Description keys handled below or without effect on what JSON is accepted. */
const HANDLED_KEYS = new Set([
  'type',
  'flags',
  'rules',
  'allow',
  'invalid',
  'keys',
  'items',
  'matches',
  'whens',
  'examples',
  'preferences',
  'metas',
  'notes',
]);

class UnsupportedJoiError extends InternalError {
  readonly kind = 'unsupported_schema';

  constructor(where: string, what: string) {
    super(`joi → JSON Schema: ${what} at ${where || '(root)'} is not supported; extend src/entry-points/http/joi-json-schema.ts`);
  }
}

/** Joi marks a `valid()` list that replaced an earlier one with `{ override: true }`; it is not a value. */
const isOverrideMarker = (value: unknown) => typeof value === 'object' && value !== null && 'override' in value;

function convert(d: Description, where: string): JsonSchema {
  if (d.flags?.presence === 'forbidden') return false;
  for (const key of Object.keys(d)) if (!HANDLED_KEYS.has(key)) throw new UnsupportedJoiError(where, `"${key}"`);
  for (const flag of Object.keys(d.flags ?? {})) if (!IGNORED_FLAGS.has(flag)) throw new UnsupportedJoiError(where, `flag "${flag}"`);
  // only messages may be preferred: a preference such as `convert` would change what is accepted
  for (const preference of Object.keys((d.preferences as object | undefined) ?? {})) {
    if (preference !== 'messages' && preference !== 'errors') throw new UnsupportedJoiError(where, `preference "${preference}"`);
  }
  // objectSchema() lifts a key's when() to its object; anywhere else it has no JSON Schema reading here
  if (d.whens !== undefined) throw new UnsupportedJoiError(where, 'a when() that is not on an object key');

  const out: Record<string, unknown> = {};
  const description = d.flags?.description;
  if (description !== undefined) out.description = description;
  Object.assign(out, typeSpecific(d, where));

  const allowed = (d.allow ?? []).filter((v) => !isOverrideMarker(v));
  const allowsNull = allowed.includes(null);
  const literals = allowed.filter((v) => v !== null && !(d.type === 'string' && v === ''));
  if (d.flags?.only) {
    // valid(): exactly the listed values (the type keyword stays: it documents the field)
    const values = allowsNull ? [...literals, null] : literals;
    if (values.length === 1) out.const = values[0];
    else out.enum = values;
  }
  if (allowsNull && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (d.invalid && d.invalid.length > 0) out.not = { enum: [...d.invalid] };
  if (d.flags && 'default' in d.flags) {
    const value = d.flags.default;
    if (typeof value === 'function' || (typeof value === 'object' && value !== null && 'special' in value)) {
      throw new UnsupportedJoiError(where, 'a computed default');
    }
    out.default = value;
  }
  if (d.examples && d.examples.length > 0) out.examples = [...d.examples];

  // allow() of other literal values widens the type: either the typed schema or one of those values
  if (!d.flags?.only && literals.length > 0) {
    const { description: text, ...rest } = out;
    return { ...(text === undefined ? {} : { description: text }), anyOf: [rest, { enum: literals }] };
  }
  return out;
}

function typeSpecific(d: Description, where: string): Record<string, unknown> {
  switch (d.type) {
    case 'any':
      return {};
    case 'string':
      return stringSchema(d, where);
    case 'number':
      return numberSchema(d, where);
    case 'boolean':
      noRules(d, where);
      return { type: 'boolean' };
    case 'array':
      return arraySchema(d, where);
    case 'object':
      return objectSchema(d, where);
    case 'alternatives':
      return alternativesSchema(d, where);
    default:
      throw new UnsupportedJoiError(where, `type "${d.type}"`);
  }
}

function noRules(d: Description, where: string): void {
  const rule = d.rules?.[0];
  if (rule) throw new UnsupportedJoiError(where, `rule "${d.type}.${rule.name}"`);
}

const limitOf = (rule: Rule, where: string): number => {
  const limit = rule.args?.limit;
  if (typeof limit !== 'number') throw new UnsupportedJoiError(where, `rule "${rule.name}" with a reference as its limit`);
  return limit;
};

const STRING_FORMATS: Readonly<Record<string, string>> = {
  email: 'email',
  uri: 'uri',
  guid: 'uuid',
  isoDate: 'date-time',
  hostname: 'hostname',
};

function stringSchema(d: Description, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = { type: 'string' };
  const patterns: string[] = [];
  const inverted: string[] = [];
  for (const rule of d.rules ?? []) {
    switch (rule.name) {
      case 'min':
        out.minLength = limitOf(rule, where);
        break;
      case 'max':
        out.maxLength = limitOf(rule, where);
        break;
      case 'length':
        out.minLength = out.maxLength = limitOf(rule, where);
        break;
      case 'pattern': {
        const source = regexSource(rule.args?.regex, where);
        const options = rule.args?.options as { invert?: boolean } | undefined;
        (options?.invert ? inverted : patterns).push(source);
        break;
      }
      case 'custom':
        // arbitrary code: documented by hand next to the converted schema
        break;
      default: {
        const format = STRING_FORMATS[rule.name];
        if (format === undefined) throw new UnsupportedJoiError(where, `rule "string.${rule.name}"`);
        out.format = format;
      }
    }
  }
  // joi refuses the empty string unless it is allowed explicitly (a valid() list says it all by itself)
  if (!d.flags?.only && !(d.allow ?? []).includes('')) out.minLength = Math.max(typeof out.minLength === 'number' ? out.minLength : 0, 1);
  const [first, ...others] = patterns;
  if (first !== undefined) out.pattern = first;
  const extra = [...others.map((pattern) => ({ pattern })), ...inverted.map((pattern) => ({ not: { pattern } }))];
  if (extra.length > 0) out.allOf = extra;
  return out;
}

/** describe() renders a RegExp as `/source/flags`; only flag-less patterns mean the same in JSON Schema. */
function regexSource(regex: unknown, where: string): string {
  const match = typeof regex === 'string' ? /^\/(.*)\/([a-z]*)$/s.exec(regex) : null;
  if (!match) throw new UnsupportedJoiError(where, 'a pattern that is not a regular expression');
  const [, source = '', flags = ''] = match;
  if (flags.replace('u', '') !== '') throw new UnsupportedJoiError(where, `a pattern with flags "${flags}"`);
  return source;
}

function numberSchema(d: Description, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = { type: 'number' };
  for (const rule of d.rules ?? []) {
    switch (rule.name) {
      case 'integer':
        out.type = 'integer';
        break;
      case 'min':
        out.minimum = limitOf(rule, where);
        break;
      case 'max':
        out.maximum = limitOf(rule, where);
        break;
      case 'greater':
        out.exclusiveMinimum = limitOf(rule, where);
        break;
      case 'less':
        out.exclusiveMaximum = limitOf(rule, where);
        break;
      case 'multiple': {
        const base = rule.args?.base;
        if (typeof base !== 'number') throw new UnsupportedJoiError(where, 'rule "number.multiple" with a reference');
        out.multipleOf = base;
        break;
      }
      case 'sign':
        if (rule.args?.sign === 'positive') out.exclusiveMinimum = 0;
        else out.exclusiveMaximum = 0;
        break;
      default:
        throw new UnsupportedJoiError(where, `rule "number.${rule.name}"`);
    }
  }
  return out;
}

function arraySchema(d: Description, where: string): Record<string, unknown> {
  if ((d.items ?? []).some((item) => item.flags?.presence === 'required')) throw new UnsupportedJoiError(where, 'a required array item');
  const out: Record<string, unknown> = { type: 'array' };
  const items = (d.items ?? []).map((item, i) => convert(item, `${where}[${i}]`));
  const [only] = items;
  if (items.length === 1 && only !== undefined) out.items = only;
  else if (items.length > 1) out.items = { anyOf: items };
  for (const rule of d.rules ?? []) {
    switch (rule.name) {
      case 'min':
        out.minItems = limitOf(rule, where);
        break;
      case 'max':
        out.maxItems = limitOf(rule, where);
        break;
      case 'length':
        out.minItems = out.maxItems = limitOf(rule, where);
        break;
      case 'unique':
        if (rule.args && Object.values(rule.args).some((v) => v !== undefined))
          throw new UnsupportedJoiError(where, 'array.unique with a comparator');
        out.uniqueItems = true;
        break;
      default:
        throw new UnsupportedJoiError(where, `rule "array.${rule.name}"`);
    }
  }
  return out;
}

function objectSchema(d: Description, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = { type: 'object' };
  for (const rule of d.rules ?? []) {
    if (rule.name === 'min') out.minProperties = limitOf(rule, where);
    else if (rule.name === 'max') out.maxProperties = limitOf(rule, where);
    else throw new UnsupportedJoiError(where, `rule "object.${rule.name}"`);
  }
  if (d.keys === undefined) return out; // Joi.object() without keys: any keys
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const conditions: Record<string, unknown>[] = [];
  for (const [key, child] of Object.entries(d.keys)) {
    const path = where ? `${where}.${key}` : key;
    const { whens, ...plain } = child;
    properties[key] = convert(plain, path);
    if (child.flags?.presence === 'required') required.push(key);
    for (const when of whens ?? []) conditions.push(siblingCondition(key, when, path));
  }
  if (required.length > 0) out.required = required;
  out.properties = properties;
  if (d.flags?.unknown !== true) out.additionalProperties = false;
  if (conditions.length > 0) out.allOf = conditions;
  return out;
}

/** `key: X.when('sibling', { is, then, otherwise })` → `if` on the sibling at the object level. */
function siblingCondition(key: string, when: When, where: string): Record<string, unknown> {
  const { ref, is } = when;
  const sibling = ref?.path;
  // a context reference (`$x`, type "global") or another object's key (`...x`, ancestor 2+) is not a sibling
  const isSibling = ref !== undefined && ref.type === undefined && (ref.ancestor ?? 1) === 1;
  if (!isSibling || when.switch !== undefined || !is || !sibling || sibling.length !== 1 || typeof sibling[0] !== 'string') {
    throw new UnsupportedJoiError(where, 'a when() that does not test a sibling key');
  }
  const name = sibling[0];
  const test = convert(is, `${where} (is)`);
  const condition: Record<string, unknown> = {
    if: { properties: { [name]: test }, ...(is.flags?.presence === 'required' ? { required: [name] } : {}) },
  };
  if (when.then) condition.then = branch(key, when.then, `${where} (then)`);
  if (when.otherwise) condition.else = branch(key, when.otherwise, `${where} (otherwise)`);
  return condition;
}

/** What a then/otherwise adds to the key: presence, and constraints when it is more than a presence change. */
function branch(key: string, d: Description, where: string): Record<string, unknown> {
  if (d.flags?.presence === 'forbidden') return { properties: { [key]: false } };
  const schema = convert(d, where);
  const constrains = typeof schema !== 'object' || Object.keys(schema).length > 0;
  return {
    ...(d.flags?.presence === 'required' ? { required: [key] } : {}),
    ...(constrains ? { properties: { [key]: schema } } : {}),
  };
}

function alternativesSchema(d: Description, where: string): Record<string, unknown> {
  const options = (d.matches ?? []).map((match, i) => {
    if (!match.schema || match.ref !== undefined) throw new UnsupportedJoiError(where, 'a conditional alternatives()');
    return convert(match.schema, `${where} (option ${i})`);
  });
  if (d.flags?.match === 'all') return { allOf: options };
  return d.flags?.match === 'one' ? { oneOf: options } : { anyOf: options };
}
