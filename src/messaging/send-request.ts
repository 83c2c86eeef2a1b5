import Joi from 'joi';
import type { FieldIssue } from '../libraries/errors/app-error.js';
import { validateWith } from '../libraries/validation/validate.js';
import { DATE_PATTERN, TIME_PATTERN } from '../scheduling/local-time.js';
import { expandRecurrence, FREQUENCIES, type RecurrenceRule } from '../scheduling/recurrence.js';
import { resolveScheduledDates, type ScheduledDateEntry } from '../scheduling/scheduled-dates.js';
import { hasWebhookUrlForm, webhookUrlFormMessage } from '../webhooks/url-guard.js';
import { normaliseNumber } from './phone-numbers.js';
import { analyseMessage, countCharacters, type MessageAnalysis } from './segments.js';

export const SEND_LIMITS = {
  maxRecipients: 1000,
  maxMessageCharacters: 1600,
  maxSenderIdLength: 11,
  maxScheduledDates: 20,
  maxCallbackUrlLength: 2048,
  maxRecipientEntryLength: 64,
  maxInterval: 1000,
} as const;

export const SENDING_TYPES = ['immediate', 'scheduled', 'recurring'] as const;
export type SendingType = (typeof SENDING_TYPES)[number];

export const SENDER_ID_PATTERN = /^[A-Za-z0-9 \-_.&]+$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

interface SendBody {
  readonly to: readonly string[];
  readonly message: string;
  readonly sender_id?: string | null;
  readonly sending_type: SendingType;
  readonly scheduled_dates?: readonly ScheduledDateEntry[] | null;
  readonly recurring_schedule?: {
    readonly start_date: string;
    readonly end_date?: string | null;
    readonly frequency: RecurrenceRule['frequency'];
    readonly interval: number;
    readonly times: readonly string[];
  } | null;
  readonly callback_url?: string | null;
}

const messageSchema = Joi.string()
  .min(1)
  .custom((value: string, helpers) => {
    if (LONE_SURROGATE.test(value)) return helpers.error('string.unpairedSurrogate');
    // no carrier takes it, and PostgreSQL's text and jsonb cannot hold it
    if (value.includes('\u0000')) return helpers.error('string.nul');
    if (countCharacters(value) > SEND_LIMITS.maxMessageCharacters) return helpers.error('string.maxCharacters');
    return value;
  })
  .messages({
    'string.unpairedSurrogate': 'contains an unpaired UTF-16 surrogate',
    'string.nul': 'must not contain the character U+0000 (NUL)',
    'string.maxCharacters': `must be at most ${SEND_LIMITS.maxMessageCharacters} characters`,
  });

const localDate = Joi.string().pattern(DATE_PATTERN).messages({ 'string.pattern.base': 'must be a date YYYY-MM-DD' });
const localTime = Joi.string().pattern(TIME_PATTERN).messages({ 'string.pattern.base': 'must be a 24-hour time HH:mm' });

/** Shapes and types; the rules that need the clock, the merchant's zone or the number plan come after. */
export const sendBodySchema = Joi.object<SendBody>({
  to: Joi.array().items(Joi.string().max(SEND_LIMITS.maxRecipientEntryLength)).min(1).max(SEND_LIMITS.maxRecipients).required(),
  message: messageSchema.required(),
  sender_id: Joi.string()
    .max(SEND_LIMITS.maxSenderIdLength)
    .pattern(SENDER_ID_PATTERN)
    .allow(null)
    .messages({ 'string.pattern.base': 'may contain only letters, digits, space and - _ . &' }),
  sending_type: Joi.string()
    .valid(...SENDING_TYPES)
    .default('immediate'),
  scheduled_dates: Joi.array()
    .items(Joi.object({ date: localDate.required(), time: localTime.required() }))
    .min(1)
    .max(SEND_LIMITS.maxScheduledDates)
    .allow(null),
  recurring_schedule: Joi.object({
    start_date: localDate.required(),
    end_date: localDate.allow(null),
    frequency: Joi.string()
      .valid(...FREQUENCIES)
      .required(),
    interval: Joi.number().integer().min(1).max(SEND_LIMITS.maxInterval).required(),
    times: Joi.array().items(localTime).min(1).required(),
  }).allow(null),
  callback_url: Joi.string().max(SEND_LIMITS.maxCallbackUrlLength).allow(null),
})
  .required()
  .messages({ 'object.base': 'must be a JSON object' });

export interface SendValidationContext {
  readonly now: number;
  readonly timezone: string;
  readonly defaultCountry: string;
  readonly horizonDays: number;
  readonly maxScheduledSms: number;
  /** The webhook URL policy's `allowHttpLocalhost`: http://localhost callback URLs are accepted too. */
  readonly allowHttpLocalhostCallbacks: boolean;
}

export interface ValidRecipient {
  /** Position in `to`: the recipient_index. Duplicates are kept as separate recipients. */
  readonly index: number;
  readonly phone: string;
}

export interface ValidSendRequest {
  readonly recipients: readonly ValidRecipient[];
  readonly message: string;
  readonly analysis: MessageAnalysis;
  readonly senderId: string | null;
  readonly sendingType: SendingType;
  /** UTC instants of each occurrence in order; empty for an immediate send. */
  readonly occurrences: readonly number[];
  readonly recurrence: RecurrenceRule | null;
  readonly callbackUrl: string | null;
}

export type SendValidation =
  { readonly ok: true; readonly value: ValidSendRequest } | { readonly ok: false; readonly issues: readonly FieldIssue[] };

const DAY_MS = 86_400_000;

/** Every rule of POST /send, collecting all issues (each `{ field, message, type }`) rather than the first. */
export function validateSendRequest(body: unknown, context: SendValidationContext): SendValidation {
  const shaped = validateWith<SendBody>(sendBodySchema, body);
  const issues: FieldIssue[] = shaped.ok ? [] : [...shaped.issues];
  if (!shaped.ok && !isObject(body)) return { ok: false, issues };
  // A field the schema found no fault in has its declared shape, so the clock rules below still run on it when
  // another field is malformed: every issue is reported at once.
  const malformed = new Set(issues.map((issue) => issue.field.split(/[.[]/)[0]));
  const wellShaped = (field: keyof SendBody) => !malformed.has(field);
  const input = (shaped.ok ? shaped.value : body) as Partial<SendBody>;
  const has = (field: keyof SendBody) => input[field] !== undefined && input[field] !== null;
  const sendingType: SendingType = (SENDING_TYPES as readonly unknown[]).includes(input.sending_type)
    ? (input.sending_type as SendingType)
    : 'immediate';
  const sendingTypeValid = input.sending_type === undefined || (SENDING_TYPES as readonly unknown[]).includes(input.sending_type);

  // rules 1–3: which schedule fields go with which sending_type
  if (sendingTypeValid) {
    if (sendingType !== 'scheduled' && has('scheduled_dates')) {
      issues.push(notAllowed('scheduled_dates', sendingType));
    }
    if (sendingType !== 'recurring' && has('recurring_schedule')) {
      issues.push(notAllowed('recurring_schedule', sendingType));
    }
    if (sendingType === 'scheduled' && !has('scheduled_dates')) issues.push(required('scheduled_dates', sendingType));
    if (sendingType === 'recurring' && !has('recurring_schedule')) issues.push(required('recurring_schedule', sendingType));
  }

  const recipients: ValidRecipient[] = [];
  if (Array.isArray(input.to)) {
    input.to.forEach((entry: unknown, index) => {
      if (typeof entry !== 'string' || entry === '' || entry.length > SEND_LIMITS.maxRecipientEntryLength) return; // reported by the schema
      const result = normaliseNumber(entry, context.defaultCountry);
      if (result.ok) recipients.push({ index, phone: result.e164 });
      else
        issues.push({
          field: `to[${index}]`,
          message: result.message,
          type: result.reason === 'too_short' ? 'string.min' : 'phone.invalid',
        });
    });
  }

  const callbackUrl = typeof input.callback_url === 'string' ? input.callback_url : null;
  // the form half of the webhook URL rule; the send use case applies the whole rule (checkWebhookUrl) once valid
  const urlPolicy = { allowHttpLocalhost: context.allowHttpLocalhostCallbacks };
  if (callbackUrl !== null && callbackUrl.length <= SEND_LIMITS.maxCallbackUrlLength && !hasWebhookUrlForm(callbackUrl, urlPolicy)) {
    issues.push({ field: 'callback_url', message: webhookUrlFormMessage(urlPolicy), type: 'string.uri' });
  }

  const messageText = typeof input.message === 'string' && !issues.some((i) => i.field === 'message') ? input.message : null;
  const analysis = messageText === null ? null : analyseMessage(messageText);

  let occurrences: readonly number[] = [];
  let recurrence: RecurrenceRule | null = null;
  if (sendingType === 'scheduled' && wellShaped('scheduled_dates') && input.scheduled_dates) {
    const resolved = resolveScheduledDates(input.scheduled_dates, context.timezone, context.now);
    if (resolved.ok) occurrences = resolved.instants;
    else issues.push(...resolved.issues);
  }
  if (sendingType === 'recurring' && wellShaped('recurring_schedule') && input.recurring_schedule) {
    const schedule = input.recurring_schedule;
    recurrence = {
      startDate: schedule.start_date,
      endDate: schedule.end_date ?? null,
      frequency: schedule.frequency,
      interval: schedule.interval,
      times: schedule.times,
    };
    // at least one recipient and segment: a malformed `to` must not lift the cap (and expand for ever)
    const perOccurrence = Math.max(1, Array.isArray(input.to) ? input.to.length : 1) * (analysis?.segments ?? 1);
    const limit = Math.floor(context.maxScheduledSms / perOccurrence);
    const expanded = expandRecurrence(recurrence, context.timezone, {
      now: context.now,
      horizonEnd: context.now + context.horizonDays * DAY_MS,
      limit,
    });
    if (!expanded.ok) issues.push(...expanded.issues);
    else if (expanded.reachedLimit) {
      issues.push({
        field: 'recurring_schedule',
        message: `pre-computes more than ${context.maxScheduledSms} SMS (recipients × segments × occurrences)`,
        type: 'schedule.limit',
      });
    } else if (expanded.instants.length === 0) {
      issues.push({ field: 'recurring_schedule', message: 'has no occurrence in the future', type: 'schedule.empty' });
    } else occurrences = expanded.instants;
  }

  if (issues.length > 0 || analysis === null || messageText === null) return { ok: false, issues };
  return {
    ok: true,
    value: {
      recipients,
      message: messageText,
      analysis,
      senderId: input.sender_id ?? null,
      sendingType,
      occurrences,
      recurrence,
      callbackUrl,
    },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function notAllowed(field: string, sendingType: SendingType): FieldIssue {
  return { field, message: `is not allowed when sending_type is "${sendingType}"`, type: 'any.unknown' };
}

function required(field: string, sendingType: SendingType): FieldIssue {
  return { field, message: `is required when sending_type is "${sendingType}"`, type: 'any.required' };
}
