import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import fc from 'fast-check';
import Joi from 'joi';
import { joiToJsonSchema } from '../../../src/entry-points/http/joi-json-schema.js';
import { buildOpenApiDocument, serialiseOpenApiDocument } from '../../../src/entry-points/http/openapi/build-document.js';
import type { OpenApiDocument } from '../../../src/entry-points/http/openapi/openapi-document.js';
import { ROUTES } from '../../../src/entry-points/http/routes.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';
import { validateWith } from '../../../src/libraries/validation/validate.js';
import { sendBodySchema, validateSendRequest } from '../../../src/messaging/send-request.js';
import { calculateBodySchema, validateCalculateRequest } from '../../../src/pricing/calculate-request.js';
import { buildEvent, recipientEventData, type EventType } from '../../../src/webhooks/event-envelope.js';
import { DOCUMENTED_VERSION, OPENAPI_FILE } from '../../../scripts/docs/openapi.js';
import { documentValidator, errorsOf } from '../../helpers/openapi-validation.js';

const document = buildOpenApiDocument({ version: '1.2.3' });
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

type Operation = Record<string, unknown> & { security?: unknown; parameters?: { $ref?: string; name?: string; in?: string }[] };

function operations(doc: OpenApiDocument): { path: string; method: string; operation: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]): { path: string; method: string; operation: Operation } => ({ path, method, operation })),
  );
}

/** `/status/:messageId` and `/status/{message_id}` both become `/status/{}`. */
const shape = (path: string) => path.replace(/:[A-Za-z_]+/g, '{}').replace(/\{[^}]+\}/g, '{}');

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document) as unknown as Record<string, unknown>);
    expect(result.valid, JSON.stringify(result.errors, null, 2)).to.equal(true);
    expect(validator.version).to.equal('3.1');
    expect(document.openapi).to.equal('3.1.0');
    expect(document.info.version).to.equal('1.2.3');
  });

  it('has only valid draft 2020-12 schemas: every schema compiles in strict mode (no unknown keyword)', () => {
    const validator = documentValidator(document, { closed: false });
    for (const name of Object.keys(document.components.schemas)) validator.at(`/components/schemas/${name}`);
    for (const { path, method } of operations(document)) {
      const responses = (document.paths[path]?.[method]?.responses ?? {}) as Record<string, { content?: unknown }>;
      for (const [status, response] of Object.entries(responses))
        if (response.content || '$ref' in response) validator.response(path, method, status);
    }
  });

  it('documents every route of ROUTES with its method, and nothing else (paths relative to the API root)', () => {
    const documented = operations(document)
      .map(({ path, method }) => `${method} ${shape(path)}`)
      .sort();
    const routed = ROUTES.map((route) => `${route.method} ${shape(route.path)}`).sort();
    expect(documented).to.deep.equal(routed);
    expect(document.servers.map((s) => s.url)).to.deep.equal(['/api/v1/messaging/sms-api']);
  });

  it('names paths and path parameters as the contract does, and declares every path parameter', () => {
    expect(Object.keys(document.paths).sort()).to.deep.equal(
      ['/send', '/status/{message_id}', '/balance', '/calculate', '/health', '/cancel/{id}', '/pause/{id}', '/resume/{id}'].sort(),
    );
    for (const { path, operation } of operations(document)) {
      const declared = (operation.parameters ?? [])
        .map((p) => (p.$ref ? (document.components.parameters[p.$ref.split('/').pop()!] as { name: string; in: string }) : p))
        .filter((p) => p.in === 'path')
        .map((p) => p.name);
      expect(declared, path).to.deep.equal([...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]));
    }
  });

  it('requires the app-key on every operation but health', () => {
    expect(document.components.securitySchemes['app-key']).to.deep.include({ type: 'apiKey', in: 'header', name: 'app-key' });
    for (const { path, method, operation } of operations(document)) {
      expect(operation.security, `${method} ${path}`).to.deep.equal(path === '/health' ? [] : [{ 'app-key': [] }]);
    }
  });

  it('lists every code of ERROR_CATALOGUE with its name and HTTP status in x-error-codes and in the description', () => {
    const entries = document['x-error-codes'];
    expect(entries.map((e) => e.code).sort()).to.deep.equal(
      Object.values(ERROR_CATALOGUE)
        .map((e) => e.code)
        .sort(),
    );
    const description = document.info.description as string;
    for (const [name, entry] of Object.entries(ERROR_CATALOGUE)) {
      expect(entries.find((e) => e.code === entry.code)).to.deep.include({ name, http_status: entry.httpStatus });
      expect(description, entry.code).to.match(new RegExp(`\\| ${entry.code} \\| ${name} \\| ${entry.httpStatus ?? 'event only'}`));
    }
  });

  it('documents every service error code on some response, and only catalogue codes', () => {
    const used = new Set<string>();
    const collect = (response: unknown) => {
      for (const code of (response as { 'x-error-codes'?: string[] })['x-error-codes'] ?? []) used.add(code);
    };
    Object.values(document.components.responses).forEach(collect);
    for (const { operation } of operations(document)) Object.values(operation.responses as object).forEach(collect);
    const service = Object.values(ERROR_CATALOGUE)
      .filter((e) => e.envelope === 'service')
      .map((e) => e.code);
    expect([...used].sort()).to.deep.equal(service.sort());
  });

  it('documents the status codes each route can answer, with X-Request-Id on every response and Retry-After on 429', () => {
    const expected: Record<string, string[]> = {
      'get /health': ['200', '503'],
      'post /send': ['201', '400', '401', '402', '403', '409', '413', '415', '429', '500', '503'],
      'get /status/{message_id}': ['200', '401', '403', '404', '429', '500', '503'],
      'get /balance': ['200', '400', '401', '403', '429', '500', '503'],
      'post /calculate': ['200', '400', '401', '403', '413', '415', '429', '500', '503'],
      'delete /cancel/{id}': ['200', '401', '403', '404', '409', '429', '500', '503'],
      'post /pause/{id}': ['200', '401', '403', '404', '409', '429', '500', '503'],
      'post /resume/{id}': ['200', '401', '403', '404', '409', '429', '500', '503'],
    };
    const validator = documentValidator(document);
    for (const { path, method, operation } of operations(document)) {
      const statuses = Object.keys(operation.responses as object);
      expect(statuses, `${method} ${path}`).to.deep.equal(expected[`${method} ${path}`]);
      for (const status of statuses) {
        const response = validator.responseObject(path, method, status);
        expect(response.headers?.['X-Request-Id'], `${method} ${path} ${status}`).to.exist;
        if (status === '429') expect(response.headers?.['Retry-After']?.required).to.equal(true);
      }
    }
    const send = document.paths['/send']!.post!;
    expect(JSON.stringify(send.parameters)).to.contain('IdempotencyKey');
    expect(validator.responseObject('/send', 'post', 201).headers).to.have.property('Idempotent-Replayed');
    expect(document.components.responses.MethodNotAllowed?.headers).to.have.property('Allow');
  });

  it('describes the five webhook events with their envelope, and real events validate against them', () => {
    expect(Object.keys(document.webhooks)).to.deep.equal(['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed']);
    const validator = documentValidator(document);
    const check = (type: EventType, event: unknown) => {
      const validate = validator.at(`/webhooks/${type}/post/requestBody/content/application~1json/schema`);
      expect(validate(event), `${type}: ${errorsOf(validate)}`).to.equal(true);
    };
    const at = Date.UTC(2031, 2, 10, 8, 0, 0);
    check(
      'sms.queued',
      buildEvent(
        'sms.queued',
        'msg1',
        { total_recipients: 2, total_messages: 4, total_cost: 0.06, currency: 'USD', scheduled_at: null },
        randomUUID(),
        at,
      ),
    );
    check(
      'sms.queued',
      buildEvent(
        'sms.queued',
        'msg1',
        { total_recipients: 1, total_messages: 1, total_cost: 0.02, currency: 'USD', scheduled_at: '2031-04-01T08:30:00.000Z' },
        randomUUID(),
        at,
      ),
    );
    for (const type of ['sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed'] as const) {
      for (const occurrence of [null, { index: 2, scheduledAt: at }]) {
        const data = recipientEventData({
          type,
          phone: '+243812345678',
          carrier: 'vodacom-cd',
          recipientIndex: 1,
          occurrence,
          at,
          segments: 2,
          errorCode: type === 'sms.failed' ? '1502' : null,
          errorMessage: null,
        });
        check(type, buildEvent(type, 'msg1', data, randomUUID(), at));
      }
    }
    const wrongType = buildEvent(
      'sms.sent',
      'msg1',
      { recipient_phone: '+1', carrier: 'x', recipient_index: 0, sent_at: new Date(at).toISOString() },
      randomUUID(),
      at,
    );
    const validate = validator.at('/webhooks/sms.delivered/post/requestBody/content/application~1json/schema');
    expect(validate(wrongType)).to.equal(false);
  });

  it('has request examples the gateway accepts', () => {
    const validator = documentValidator(document, { closed: false });
    const context = {
      now: Date.UTC(2030, 0, 1),
      timezone: 'Africa/Kinshasa',
      defaultCountry: 'CD',
      horizonDays: 365,
      maxScheduledSms: 5000,
      allowHttpLocalhostCallbacks: false,
    };
    for (const [path, accepts] of [
      ['/send', (body: unknown) => validateSendRequest(body, context).ok],
      ['/calculate', (body: unknown) => validateCalculateRequest(body).ok],
    ] as const) {
      const media = (
        document.paths[path]!.post!.requestBody as { content: Record<string, { examples: Record<string, { value: unknown }> }> }
      ).content['application/json']!;
      const validate = validator.at(`/paths/${path.replace('/', '~1')}/post/requestBody/content/application~1json/schema`);
      for (const [name, example] of Object.entries(media.examples)) {
        expect(accepts(example.value), `${path} ${name}`).to.equal(true);
        expect(validate(example.value), `${path} ${name}: ${errorsOf(validate)}`).to.equal(true);
      }
    }
  });

  it('is what docs/openapi.json holds (run `npm run docs:openapi` after changing the API)', () => {
    const expected = serialiseOpenApiDocument(buildOpenApiDocument({ version: DOCUMENTED_VERSION() }));
    const actual = readFileSync(OPENAPI_FILE, 'utf8');
    expect(actual === expected, 'docs/openapi.json is out of date: run `npm run docs:openapi` and commit the result').to.equal(true);
  });

  it('is generated the same way every time', () => {
    expect(serialiseOpenApiDocument(buildOpenApiDocument({ version: '1.2.3' }))).to.equal(serialiseOpenApiDocument(document));
  });
});

describe('joi → JSON Schema', () => {
  const ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, allErrors: true });

  it('converts objects with required keys, forbidden unknown keys, nested objects and arrays', () => {
    const schema = Joi.object({
      name: Joi.string().min(2).max(5).required().description('The name'),
      tags: Joi.array().items(Joi.string()).min(1).max(3).unique(),
      nested: Joi.object({ flag: Joi.boolean() }).unknown(),
      gone: Joi.any().forbidden(),
    });
    expect(joiToJsonSchema(schema)).to.deep.equal({
      type: 'object',
      required: ['name'],
      properties: {
        name: { description: 'The name', type: 'string', minLength: 2, maxLength: 5 },
        tags: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 3, uniqueItems: true },
        nested: { type: 'object', properties: { flag: { type: 'boolean' } } },
        gone: false,
      },
      additionalProperties: false,
    });
  });

  it('converts strings: pattern, valid values, null allowed, the empty string only when allowed, defaults', () => {
    expect(
      joiToJsonSchema(
        Joi.string()
          .pattern(/^[a-z]+$/)
          .allow(null),
      ),
    ).to.deep.equal({ type: ['string', 'null'], pattern: '^[a-z]+$', minLength: 1 });
    expect(joiToJsonSchema(Joi.string().valid('a', 'b').default('a'))).to.deep.equal({ type: 'string', enum: ['a', 'b'], default: 'a' });
    expect(joiToJsonSchema(Joi.string().valid('only'))).to.deep.equal({ type: 'string', const: 'only' });
    expect(joiToJsonSchema(Joi.string().valid('a', null))).to.deep.equal({ type: ['string', 'null'], enum: ['a', null] });
    expect(joiToJsonSchema(Joi.string().allow(''))).to.deep.equal({ type: 'string' });
    expect(joiToJsonSchema(Joi.string().pattern(/x/, { invert: true }))).to.deep.equal({
      type: 'string',
      minLength: 1,
      allOf: [{ not: { pattern: 'x' } }],
    });
    expect(joiToJsonSchema(Joi.string().email())).to.deep.equal({ type: 'string', format: 'email', minLength: 1 });
  });

  it('converts numbers and integers with their bounds', () => {
    expect(joiToJsonSchema(Joi.number().min(0).max(10))).to.deep.equal({ type: 'number', minimum: 0, maximum: 10 });
    expect(joiToJsonSchema(Joi.number().integer().greater(1).less(9).multiple(2))).to.deep.equal({
      type: 'integer',
      exclusiveMinimum: 1,
      exclusiveMaximum: 9,
      multipleOf: 2,
    });
    expect(joiToJsonSchema(Joi.number().positive())).to.deep.equal({ type: 'number', exclusiveMinimum: 0 });
  });

  it('converts alternatives and a when() on a sibling key', () => {
    expect(joiToJsonSchema(Joi.alternatives().try(Joi.string(), Joi.number()))).to.deep.equal({
      anyOf: [{ type: 'string', minLength: 1 }, { type: 'number' }],
    });
    const conditional = Joi.object({
      kind: Joi.string().valid('a', 'b').required(),
      value: Joi.number().when('kind', { is: 'a', then: Joi.required(), otherwise: Joi.forbidden() }),
    });
    expect(joiToJsonSchema(conditional)).to.deep.equal({
      type: 'object',
      required: ['kind'],
      properties: { kind: { type: 'string', enum: ['a', 'b'] }, value: { type: 'number' } },
      additionalProperties: false,
      allOf: [
        {
          if: { properties: { kind: { const: 'a' } }, required: ['kind'] },
          then: { required: ['value'] },
          else: { properties: { value: false } },
        },
      ],
    });
  });

  it('refuses what it cannot express instead of dropping it', () => {
    for (const schema of [
      Joi.date(),
      Joi.string().lowercase(),
      Joi.string().pattern(/abc/i),
      Joi.number().precision(2),
      Joi.object().pattern(/x/, Joi.string()),
      Joi.string().prefs({ convert: true }),
      Joi.array().ordered(Joi.string()),
      Joi.object({ a: Joi.string(), b: Joi.string().when('$context', { is: 1, then: Joi.required() }) }),
      Joi.object({ a: Joi.string(), inner: Joi.object({ b: Joi.string().when('...a', { is: 'x', then: Joi.required() }) }) }),
      Joi.array().items(Joi.string().when('$context', { is: 1, then: Joi.required() })),
      Joi.array().items(Joi.string().required()),
    ]) {
      expect(() => joiToJsonSchema(schema), JSON.stringify(schema.describe())).to.throw(/not supported/);
    }
  });

  it('produces schemas that accept exactly what joi accepts (representative schema, random inputs)', () => {
    const schema = Joi.object({
      id: Joi.string()
        .max(4)
        .pattern(/^[a-c]+$/)
        .required(),
      count: Joi.number().integer().min(0).max(5),
      kind: Joi.string().valid('x', 'y').allow(null),
      list: Joi.array().items(Joi.number().min(1)).max(2),
    });
    const validate = ajv.compile(joiToJsonSchema(schema) as object);
    const value = fc.oneof(
      fc.constantFrom('', 'a', 'abc', 'abcd', 'abcde', 'd', 'x', 'y', null, 0, 1, 2.5, 5, 6, -1, true),
      fc.array(fc.constantFrom(0, 1, 2, 'a'), { maxLength: 3 }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('id', 'count', 'kind', 'list', 'other'), value), (input) => {
        expect(validate(input), JSON.stringify(input)).to.equal(validateWith(schema, input).ok);
      }),
      { numRuns: 2000 },
    );
  });

  describe('on the request bodies of the document', () => {
    const validator = documentValidator(document, { closed: false });
    const sendSchema = validator.at('/components/schemas/SendRequest');
    const calculateSchema = validator.at('/components/schemas/CalculateRequest');
    const agree = (validate: typeof sendSchema, joiSchema: Joi.Schema, input: unknown) => {
      const joiOk = validateWith(joiSchema, input).ok;
      expect(
        validate(input),
        `${JSON.stringify(input).slice(0, 200)}: joi ${joiOk ? 'accepts' : 'refuses'}; ${errorsOf(validate)}`,
      ).to.equal(joiOk);
    };

    it('SendRequest accepts and refuses what sendBodySchema does', () => {
      const base = { to: ['+243812345678'], message: 'Hello' };
      const cases: unknown[] = [
        base,
        {},
        null,
        [],
        'text',
        { ...base, to: [] },
        { ...base, to: Array.from({ length: 1001 }, () => '+243812345678') },
        { ...base, to: [''] },
        { ...base, to: ['x'.repeat(65)] },
        { ...base, message: '' },
        { ...base, message: 'a'.repeat(1600) },
        { ...base, message: 'a'.repeat(1601) },
        { ...base, message: '😀'.repeat(1600) },
        { ...base, message: '😀'.repeat(1601) },
        { ...base, sender_id: null },
        { ...base, sender_id: '' },
        { ...base, sender_id: 'Shop & Co.' },
        { ...base, sender_id: 'Shop!' },
        { ...base, sender_id: 'TwelveChars!' },
        { ...base, sending_type: 'scheduled' },
        { ...base, sending_type: 'weekly' },
        { ...base, sending_type: null },
        { ...base, scheduled_dates: [{ date: '2031-04-01', time: '09:30' }] },
        { ...base, scheduled_dates: [{ date: '2031-13-01', time: '09:30' }] },
        { ...base, scheduled_dates: [{ date: '2031-04-01', time: '24:00' }] },
        { ...base, scheduled_dates: [{ date: '2031-04-01' }] },
        { ...base, scheduled_dates: [{ date: '2031-04-01', time: '09:30', zone: 'UTC' }] },
        { ...base, scheduled_dates: [] },
        { ...base, scheduled_dates: Array.from({ length: 21 }, () => ({ date: '2031-04-01', time: '09:30' })) },
        { ...base, recurring_schedule: { start_date: '2031-04-01', frequency: 'weekly', interval: 1, times: ['08:00'] } },
        { ...base, recurring_schedule: { start_date: '2031-04-01', end_date: null, frequency: 'weekly', interval: 1, times: ['08:00'] } },
        { ...base, recurring_schedule: { start_date: '2031-04-01', frequency: 'hourly', interval: 1, times: ['08:00'] } },
        { ...base, recurring_schedule: { start_date: '2031-04-01', frequency: 'daily', interval: 0, times: ['08:00'] } },
        { ...base, recurring_schedule: { start_date: '2031-04-01', frequency: 'daily', interval: 1.5, times: ['08:00'] } },
        { ...base, recurring_schedule: { start_date: '2031-04-01', frequency: 'daily', interval: 1001, times: ['08:00'] } },
        { ...base, recurring_schedule: { start_date: '2031-04-01', frequency: 'daily', interval: 1, times: [] } },
        { ...base, callback_url: 'https://example.com/hook' },
        { ...base, callback_url: 'h'.repeat(2049) },
        { ...base, callback_url: 42 },
        { ...base, extra: true },
      ];
      for (const input of cases) agree(sendSchema, sendBodySchema, input);
    });

    it('SendRequest agrees with sendBodySchema on random bodies', () => {
      const entry = fc.oneof(fc.constantFrom('+243812345678', '', 'x'.repeat(65), 7, null), fc.string({ maxLength: 3 }));
      const field = {
        to: fc.oneof(fc.array(entry, { maxLength: 3 }), fc.constant(null), fc.string()),
        message: fc.oneof(fc.string({ maxLength: 4 }), fc.constant(''), fc.constant('é'.repeat(1601)), fc.integer()),
        sender_id: fc.oneof(fc.constantFrom(null, '', 'Shop', 'Shop!', 'x'.repeat(12)), fc.integer()),
        sending_type: fc.constantFrom('immediate', 'scheduled', 'recurring', 'other', null, 3),
        scheduled_dates: fc.oneof(
          fc.constant(null),
          fc.array(
            fc.record({ date: fc.constantFrom('2031-04-01', '2031-4-1'), time: fc.constantFrom('09:30', '9:30') }, { requiredKeys: [] }),
            { maxLength: 2 },
          ),
        ),
        callback_url: fc.oneof(fc.constantFrom(null, '', 'https://e.com'), fc.boolean()),
        unknown_field: fc.anything({ maxDepth: 1 }),
      };
      fc.assert(
        fc.property(fc.record(field, { requiredKeys: [] }), (input) => {
          agree(sendSchema, sendBodySchema, input);
        }),
        { numRuns: 1000 },
      );
    });

    it('CalculateRequest needs the field of its mode, as calculateBodySchema does', () => {
      const field = {
        mode: fc.constantFrom('amount_to_sms', 'sms_to_amount', 'AMOUNT_TO_SMS', null),
        amount: fc.constantFrom(0, 10.5, -1, 10_000_000, 10_000_001, '5', null),
        sms_count: fc.constantFrom(0, 3, 2.5, -1, 10_000_000, 10_000_001, '5', null),
        other: fc.constant(1),
      };
      fc.assert(
        fc.property(fc.record(field, { requiredKeys: [] }), (input) => {
          agree(calculateSchema, calculateBodySchema, input);
        }),
        { numRuns: 1000 },
      );
    });
  });
});
