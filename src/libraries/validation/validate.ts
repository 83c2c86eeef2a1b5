import type Joi from 'joi';
import type { FieldIssue } from '../errors/app-error.js';

export type Validated<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly issues: readonly FieldIssue[] };

/** `['scheduled_dates', 2, 'time']` → `scheduled_dates[2].time`; the whole body is `body`. */
export function fieldPath(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'body';
  return path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${part}` : part), '');
}

const JOI_OPTIONS: Joi.ValidationOptions = {
  abortEarly: false,
  convert: false,
  allowUnknown: false,
  errors: { wrap: { label: false } },
};

/** Runs a joi schema and turns its errors into the contract's `details[]`: `{ field, message, type }`. */
export function validateWith<T>(schema: Joi.Schema, input: unknown): Validated<T> {
  const result = schema.validate(input, JOI_OPTIONS) as Joi.ValidationResult<T>;
  const error = result.error;
  if (!error) return { ok: true, value: result.value };
  return {
    ok: false,
    issues: error.details.map((d) => {
      const field = fieldPath(d.path);
      // joi prefixes the message with the label; the field already says which one
      const message = d.message.startsWith(`${field} `) ? d.message.slice(field.length + 1) : d.message;
      return { field, message, type: d.type };
    }),
  };
}
