import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isRecord } from '../libraries/validation/guards.js';
import type { CarrierStatus } from './carrier-outcomes.js';

/**
 * The versioned contract between the gateway and carrier connectors (docs/carrier-protocol.md). The JSON Schemas
 * in docs/schemas/ are the source of truth; the gateway and the simulator validate with them.
 */

export const PROTOCOL_VERSION = 1;

export const CARRIER_SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export interface DispatchJob {
  readonly version: 1;
  readonly dispatch_id: string;
  readonly message_id: string;
  readonly occurrence_index: number;
  readonly recipient_index: number;
  readonly to: string;
  readonly sender_id: string | null;
  readonly text: string;
  readonly encoding: 'GSM-7' | 'UCS-2';
  readonly segments: number;
  readonly submitted_at: string;
}

export interface Receipt {
  readonly version: 1;
  readonly receipt_id: string;
  readonly dispatch_id: string;
  readonly status: CarrierStatus;
  readonly error_code?: string | null;
  readonly error_message?: string | null;
  readonly occurred_at: string;
  readonly carrier_reference?: string | null;
  /** The carrier's own words for the outcome (`smpp:UNDELIV err:001`), kept as the recipient's `carrier_status`. */
  readonly carrier_status?: string | null;
}

/** Several receipts in one NATS message (docs/carrier-protocol.md section 5, "Batches"). */
export interface ReceiptBatch {
  readonly version: 1;
  readonly batch_id: string;
  readonly receipts: readonly Receipt[];
}

export const RECEIPT_BATCH_MAX = 500;

/** The fields of a version 1 job; the type checks that the list is complete and exact. */
const DISPATCH_FIELDS: Readonly<Record<keyof DispatchJob, true>> = {
  version: true,
  dispatch_id: true,
  message_id: true,
  occurrence_index: true,
  recipient_index: true,
  to: true,
  sender_id: true,
  text: true,
  encoding: true,
  segments: true,
  submitted_at: true,
};

/**
 * Tolerant reader for connectors (docs/carrier-protocol.md "Versioning"): a field added to version 1 later is left
 * out before validation, not a reason to drop the job, so the gateway can add one before every connector knows it.
 */
export function knownDispatchFields(payload: unknown): unknown {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return payload;
  return Object.fromEntries(Object.entries(payload).filter(([key]) => Object.hasOwn(DISPATCH_FIELDS, key)));
}

export function dispatchId(messageId: string, occurrence: number, recipient: number): string {
  return `${messageId}:${occurrence}:${recipient}`;
}

export function parseDispatchId(id: string): { messageId: string; occurrence: number; recipient: number } | null {
  const match = /^([A-Za-z0-9_-]{1,64}):([0-9]{1,6}):([0-9]{1,6})$/.exec(id);
  if (!match) return null;
  return { messageId: match[1] ?? '', occurrence: Number(match[2]), recipient: Number(match[3]) };
}

const SCHEMA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/schemas');

function loadSchema(file: string): object {
  return JSON.parse(readFileSync(path.join(SCHEMA_DIR, file), 'utf8')) as object;
}

const ajv = new Ajv({ allErrors: true, strict: true });
// ajv-formats is CommonJS: under NodeNext its plugin is the `default` of the module object
addFormatsModule.default(ajv, ['date-time']);

const validators: {
  dispatch: ValidateFunction<DispatchJob>;
  receipt: ValidateFunction<Receipt>;
  receiptBatch: ValidateFunction<ReceiptBatch>;
} = {
  dispatch: ajv.compile<DispatchJob>(loadSchema('dispatch-job.v1.json')),
  receipt: ajv.compile<Receipt>(loadSchema('receipt.v1.json')),
  // compiled after receipt.v1.json, which its items refer to by $id
  receiptBatch: ajv.compile<ReceiptBatch>(loadSchema('receipt-batch.v1.json')),
};

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: readonly string[] };

type SchemaErrors = NonNullable<ValidateFunction['errors']>;

const describeErrors = (errors: SchemaErrors): string[] => errors.map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);

function check<T>(validate: ValidateFunction<T>, value: unknown): Checked<T> {
  if (validate(value)) return { ok: true, value };
  return { ok: false, errors: describeErrors(validate.errors ?? []) };
}

export const checkDispatchJob = (value: unknown): Checked<DispatchJob> => check(validators.dispatch, value);
export const checkReceipt = (value: unknown): Checked<Receipt> => check(validators.receipt, value);
export const checkReceiptBatch = (value: unknown): Checked<ReceiptBatch> => check(validators.receiptBatch, value);

/** What a message on `sms.receipts.<carrier>` carries: the valid receipts, and why anything else was refused. */
export interface ReceivedReceipts {
  readonly receipts: readonly Receipt[];
  readonly rejected: readonly string[];
}

/** Errors that all lie inside the batch's receipts: the batch itself (version, id, list) is well formed. */
const onlyInReceipts = (errors: SchemaErrors): boolean =>
  errors.length > 0 && errors.every((e) => /^\/receipts\/\d+(\/|$)/.test(e.instancePath));

/**
 * One receipt or a batch of them. An invalid receipt inside a well-formed batch is refused on its own; the others
 * still count, so one bad report never costs the rest of the batch.
 */
export function readReceipts(payload: unknown): ReceivedReceipts {
  const isObject = typeof payload === 'object' && payload !== null && !Array.isArray(payload);
  if (!isObject || !Object.hasOwn(payload, 'receipts')) {
    const single = checkReceipt(payload);
    return single.ok
      ? { receipts: [single.value], rejected: [] }
      : { receipts: [], rejected: [`invalid receipt: ${single.errors.join('; ')}`] };
  }
  const validateBatch = validators.receiptBatch;
  if (validateBatch(payload)) return { receipts: payload.receipts, rejected: [] };
  const errors = validateBatch.errors ?? [];
  if (!onlyInReceipts(errors)) return { receipts: [], rejected: [`invalid receipt batch: ${describeErrors(errors).join('; ')}`] };
  // the schema passed everything but some receipts: the envelope is as it says
  const batchId = isRecord(payload) && typeof payload.batch_id === 'string' ? payload.batch_id : '';
  const items: readonly unknown[] = isRecord(payload) && Array.isArray(payload.receipts) ? payload.receipts : [];
  const receipts: Receipt[] = [];
  const rejected: string[] = [];
  items.forEach((item, index) => {
    const checked = checkReceipt(item);
    if (checked.ok) receipts.push(checked.value);
    else rejected.push(`invalid receipt ${index} of batch ${batchId}: ${checked.errors.join('; ')}`);
  });
  return { receipts, rejected };
}
