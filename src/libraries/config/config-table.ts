import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeSettings } from './config.js';

const CONFIG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config');

function valueAt(object: unknown, dotted: string): unknown {
  return dotted
    .split('.')
    .reduce<unknown>(
      (node, key) => (typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[key] : undefined),
      object,
    );
}

function show(value: unknown): string {
  if (value === '' || value === undefined) return '(empty)';
  if (Array.isArray(value)) return value.join(',');
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The README's configuration table, generated from the joi schema and config/default.json (a test keeps them equal). */
export function configurationTable(): string {
  const defaults = JSON.parse(readFileSync(path.join(CONFIG_DIR, 'default.json'), 'utf8')) as unknown;
  const rows = describeSettings().map((s) => `| \`${s.env}\` | \`${s.key}\` | \`${show(valueAt(defaults, s.key))}\` | ${s.description} |`);
  return ['| Environment variable | Key | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}
