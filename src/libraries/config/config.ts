import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Joi from 'joi';
import { ConfigError } from '../errors/internal-errors.js';
import { checkSettingsRules, type ConfigReader } from './config-rules.js';
import { configSchema, type SettingValue } from './config-schema.js';

/**
 * The validated configuration. Computed from the schema (config-schema.ts), its one description: a setting added,
 * removed or retyped there is the same here, and code reading a setting the schema lacks does not compile.
 */
export type Config = SettingValue<typeof configSchema>;

export type GatewayEnvironment = Config['environment'];
export type GatewayMode = Config['mode'];

/** One leaf of the schema: its dotted path, environment variable, description and joi type. */
export interface SettingDescription {
  readonly key: string;
  readonly env: string;
  readonly description: string;
  readonly type: string;
}

type JsonObject = { [key: string]: unknown };

interface DescribedSchema {
  type: string;
  flags?: { description?: string };
  metas?: { env?: string }[];
  keys?: Record<string, DescribedSchema>;
}

export function describeSettings(schema: Joi.ObjectSchema = configSchema): SettingDescription[] {
  const out: SettingDescription[] = [];
  const walk = (node: DescribedSchema, prefix: string): void => {
    if (node.type === 'object' && node.keys) {
      for (const [name, child] of Object.entries(node.keys)) walk(child, prefix ? `${prefix}.${name}` : name);
      return;
    }
    const env = node.metas?.find((m) => m.env !== undefined)?.env;
    if (env === undefined) throw new Error(`setting ${prefix} has no environment variable`);
    out.push({ key: prefix, env, description: node.flags?.description ?? '', type: node.type });
  };
  walk(schema.describe() as DescribedSchema, '');
  return out;
}

const DEFAULT_CONFIG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config');

export interface LoadConfigOptions {
  /** Environment variables; `process.env` in production. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly configDir?: string;
  /** Final overrides, used by tests and the composition root (deep-merged last). */
  readonly overrides?: DeepPartial<Config>;
  /** The process reading it: its rules across settings are checked too (config-rules.ts); none without one. */
  readonly reader?: ConfigReader;
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends readonly unknown[] ? T[K] : T[K] extends object ? DeepPartial<T[K]> : T[K] };

/**
 * default.json, then <NODE_ENV>.json, then environment variables, then overrides; validated once; frozen; then the
 * reader's rules across settings. Throws ConfigError naming the offending key (and its environment variable) before
 * anything connects or opens.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const configDir = options.configDir ?? DEFAULT_CONFIG_DIR;
  let merged = readJson(path.join(configDir, 'default.json'));
  const profile = env.NODE_ENV;
  if (profile && profile !== 'default') {
    const profileFile = path.join(configDir, `${profile}.json`);
    if (existsSync(profileFile)) merged = deepMerge(merged, readJson(profileFile));
  }
  const settings = describeSettings();
  for (const setting of settings) {
    const raw = env[setting.env];
    if (raw === undefined) continue;
    const value =
      setting.type === 'array'
        ? raw
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '')
        : raw;
    merged = deepMerge(merged, nest(setting.key, value));
  }
  if (options.overrides) merged = deepMerge(merged, options.overrides);

  const result = configSchema.validate(merged, { abortEarly: true, convert: true, allowUnknown: false });
  const error = result.error;
  if (error) {
    const detail = error.details[0];
    const key = detail ? detail.path.join('.') : 'config';
    const envName = settings.find((s) => s.key === key)?.env;
    const hint = envName ? ` (environment variable ${envName})` : '';
    throw new ConfigError(`Invalid configuration: ${error.message}${hint}`, key);
  }
  const config = deepFreeze(result.value);
  if (options.reader) checkSettingsRules(config, options.reader);
  return config;
}

function readJson(file: string): JsonObject {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as JsonObject;
  } catch (cause) {
    throw new ConfigError(`Cannot read configuration file ${path.basename(file)}: ${(cause as Error).message}`, path.basename(file));
  }
}

function nest(dotted: string, value: unknown): JsonObject {
  return dotted
    .split('.')
    .reverse()
    .reduce<unknown>((inner, part) => ({ [part]: inner }), value) as JsonObject;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(base: JsonObject, extra: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
