import Joi from 'joi';
import { validateWith, type Validated } from '../libraries/validation/validate.js';
import { CALCULATE_MAX, type CalculateRequest } from './calculate.js';

interface CalculateBody {
  readonly mode: CalculateRequest['mode'];
  readonly amount?: number;
  readonly sms_count?: number;
}

export const calculateBodySchema = Joi.object<CalculateBody>({
  mode: Joi.string().valid('amount_to_sms', 'sms_to_amount').required(),
  amount: Joi.number().min(0).max(CALCULATE_MAX).when('mode', { is: 'amount_to_sms', then: Joi.required() }),
  sms_count: Joi.number().integer().min(0).max(CALCULATE_MAX).when('mode', { is: 'sms_to_amount', then: Joi.required() }),
})
  .required()
  .messages({ 'object.base': 'must be a JSON object' });

/** `/calculate` rules: mode, and the field that mode needs (the other mode's field is checked but unused). */
export function validateCalculateRequest(body: unknown): Validated<CalculateRequest> {
  const result = validateWith<CalculateBody>(calculateBodySchema, body);
  if (!result.ok) return result;
  const { mode, amount, sms_count: smsCount } = result.value;
  return mode === 'amount_to_sms'
    ? { ok: true, value: { mode, amount: amount ?? 0 } }
    : { ok: true, value: { mode, smsCount: smsCount ?? 0 } };
}
