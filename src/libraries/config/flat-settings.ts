import type Joi from 'joi';

/**
 * A process's settings as one flat joi object whose keys each carry their environment variable (`.meta({ env })`)
 * and description: the carrier connectors' SMPP_* and KANNEL_* settings. Described for docs, read from the
 * environment, validated with the variable at fault named.
 */
export interface FlatSettingDescription {
  readonly key: string;
  readonly env: string;
  readonly description: string;
  readonly default: unknown;
  readonly required: boolean;
}

interface DescribedKey {
  flags?: { description?: string; default?: unknown; presence?: string };
  metas?: { env?: string }[];
}

export function describeFlatSettings(schema: Joi.ObjectSchema): FlatSettingDescription[] {
  const described = schema.describe() as { keys: Record<string, DescribedKey> };
  return Object.entries(described.keys).map(([key, node]) => ({
    key,
    env: node.metas?.find((m) => m.env !== undefined)?.env ?? '',
    description: node.flags?.description ?? '',
    default: node.flags?.default,
    required: node.flags?.presence === 'required',
  }));
}

export type RawSettings = Partial<Record<string, unknown>>;

/** The settings by key from the environment (unset variables are left out: they take their defaults). */
export function readFlatSettings(schema: Joi.ObjectSchema, env: Readonly<Record<string, string | undefined>>): RawSettings {
  const settings: RawSettings = {};
  for (const setting of describeFlatSettings(schema)) {
    const raw = env[setting.env];
    if (raw !== undefined) settings[setting.key] = raw;
  }
  return settings;
}

/** The first problem of invalid settings, with the environment variable it is about. */
export interface FlatSettingsProblem {
  readonly message: string;
  readonly variable: string;
}

/**
 * A rule across several settings failed: `message` explains it, `variable` is the one to change (reported as the
 * variable at fault). For a joi `custom()` rule of the whole object.
 */
export function crossSettingProblem(helpers: Joi.CustomHelpers, message: string, variable: string): Joi.ErrorReport {
  return helpers.message({ custom: message }, { variable });
}

/**
 * Validates settings given by key: the validated value, or the first problem naming its variable (a setting's own,
 * a cross-setting rule's (`crossSettingProblem`), or `<prefix>*` when neither names one, e.g. `SMPP_*`).
 */
export function validateFlatSettings(
  schema: Joi.ObjectSchema,
  settings: RawSettings,
  prefix: string,
): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: FlatSettingsProblem } {
  const result = schema.validate(settings, { abortEarly: true, convert: true, allowUnknown: false });
  if (!result.error) return { ok: true, value: result.value as unknown };
  const env = new Map(describeFlatSettings(schema).map((s) => [s.key, s.env]));
  const detail = result.error.details[0];
  const key = detail?.path.join('.') ?? '';
  const named: unknown = detail?.context?.variable;
  const variable = env.get(key) ?? (typeof named === 'string' ? named : `${prefix}*`);
  return { ok: false, problem: { message: `${detail?.message ?? result.error.message} (environment variable ${variable})`, variable } };
}
