import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { errorCatalogueTable } from '../../../src/libraries/errors/error-catalogue-table.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';
import { SEND_LIMITS } from '../../../src/messaging/send-request.js';
import { CALCULATE_MAX } from '../../../src/pricing/calculate.js';
import { EVENT_TYPES } from '../../../src/webhooks/event-envelope.js';

const ROOT = new URL('../../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, ROOT), 'utf8');

const GUIDE = read('docs/api-guide.md');
const ARCHITECTURE = read('docs/architecture.md');

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The OpenAPI document's operations: `GET /status/{message_id}`, … */
function documentedOperations(): { method: string; path: string }[] {
  const document: unknown = JSON.parse(read('docs/openapi.json'));
  const paths = isRecord(document) && isRecord(document.paths) ? document.paths : {};
  return Object.entries(paths).flatMap(([path, item]) =>
    isRecord(item)
      ? Object.keys(item)
          .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
          .map((method) => ({ method: method.toUpperCase(), path }))
      : [],
  );
}

/** A section of config/default.json. */
function defaultsOf(section: string): Record<string, unknown> {
  const defaults: unknown = JSON.parse(read('config/default.json'));
  const found = isRecord(defaults) ? defaults[section] : undefined;
  return isRecord(found) ? found : {};
}

/** A number as the guide writes it: groups of three digits separated by a space (1 000, 10 000 000). */
const written = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');

/** Whole milliseconds as the guide writes a delay: 30 s, 2 min, 1 h. */
const delay = (ms: number): string =>
  ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

const headingsOf = (markdown: string): Set<string> =>
  new Set(
    markdown
      .split('\n')
      .filter((line) => /^#{1,6} /.test(line))
      .map((line) => anchorOf(line.replace(/^#+ /, ''))),
  );

/** Relative links of a document in docs/: `[text](target)` that is not a URL. */
const relativeLinks = (markdown: string): string[] =>
  [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => String(match[1])).filter((target) => !/^[a-z]+:/.test(target));

function checkLinks(markdown: string, name: string): void {
  const links = relativeLinks(markdown);
  expect(links, name).not.to.be.empty;
  for (const link of links) {
    const [file = '', anchor] = link.split('#');
    if (file === '') {
      expect(headingsOf(markdown), `${name}: #${String(anchor)}`).to.include(anchor);
      continue;
    }
    const target = new URL(`docs/${file}`, ROOT);
    expect(existsSync(target), `${name}: ${link}`).to.equal(true);
    if (anchor !== undefined && file.endsWith('.md'))
      expect(headingsOf(readFileSync(target, 'utf8')), `${name}: ${link}`).to.include(anchor);
  }
}

describe('docs/api-guide.md', () => {
  it('holds the error table generated from the catalogue (npm run docs:errors)', () => {
    const start = GUIDE.indexOf('<!-- error-catalogue:start -->\n') + '<!-- error-catalogue:start -->\n'.length;
    const end = GUIDE.indexOf('\n<!-- error-catalogue:end -->');
    expect(end).to.be.greaterThan(start);
    expect(GUIDE.slice(start, end)).to.equal(errorCatalogueTable());
    for (const [name, entry] of Object.entries(ERROR_CATALOGUE)) expect(GUIDE, name).to.contain(`| ${entry.code} | ${name} |`);
  });

  it('names every operation of the OpenAPI document in its table of endpoints', () => {
    const operations = documentedOperations();
    expect(operations).to.have.length.greaterThan(0);
    for (const { method, path } of operations) expect(GUIDE, `${method} ${path}`).to.contain(`| ${method} | \`${path}\` |`);
  });

  it('lists every event type', () => {
    for (const type of EVENT_TYPES) expect(GUIDE, type).to.contain(`| \`${type}\` |`);
  });

  it('gives the default rate limits', () => {
    const limits = defaultsOf('rateLimits');
    const rows: Record<string, string> = {
      send: '| `POST /send` |',
      status: '| `GET /status/{message_id}` |',
      balance: '| `GET /balance` |',
      calculate: '| `POST /calculate` |',
      management: '| `DELETE /cancel`, `POST /pause`, `POST /resume` together |',
    };
    for (const [bucket, row] of Object.entries(rows)) expect(GUIDE, bucket).to.contain(`${row} ${String(limits[bucket])} |`);
  });

  it('gives the limits the code enforces and the configuration sets by default', () => {
    const text = GUIDE.replace(/\s+/g, ' ');
    const scheduling = defaultsOf('scheduling');
    const webhooks = defaultsOf('webhooks');
    const idempotency = defaultsOf('idempotency');
    const expected = [
      `up to ${written(SEND_LIMITS.maxRecipients)} recipients`,
      `| \`to\` | 1–${written(SEND_LIMITS.maxRecipients)} numbers.`,
      `| \`message\` | 1–${written(SEND_LIMITS.maxMessageCharacters)} characters`,
      `| \`sender_id\` | Optional, 1–${SEND_LIMITS.maxSenderIdLength} letters`,
      `For \`scheduled\` only: 1–${SEND_LIMITS.maxScheduledDates} `,
      `at most ${written(SEND_LIMITS.maxCallbackUrlLength)} characters`,
      `\`interval\` is 1–${written(SEND_LIMITS.maxInterval)}`,
      `\`amount\` and \`sms_count\` are 0–${written(CALCULATE_MAX)}`,
      `it may be at most ${written(Number(scheduling.maxScheduledSms))}`,
      `computed over a ${String(scheduling.openEndedHorizonDays)}-day horizon`,
      `no final receipt within ${Number(scheduling.receiptTimeoutMs) / 3_600_000} hours fails it with 1503`,
      `any 2xx within ${Number(webhooks.timeoutMs) / 1000} seconds`,
      `retried after ${(Array.isArray(webhooks.retryDelaysMs) ? webhooks.retryDelaysMs : [])
        .map((ms) => delay(Number(ms)))
        .join(', ')
        .replace(/, ([^,]*)$/, ' and $1')}: five attempts in all`,
      `Within ${Number(idempotency.ttlMs) / 3_600_000} hours, the same key`,
    ];
    for (const phrase of expected) expect(text, phrase).to.contain(phrase);
  });

  it('links only to files and headings that exist', () => {
    checkLinks(GUIDE, 'api-guide.md');
  });
});

describe('docs/architecture.md', () => {
  it('names only files and folders the repository has', () => {
    const paths = [...ARCHITECTURE.matchAll(/`((?:src|test|docs|scripts|deploy|config)\/[^`\s*{}<>]+)`/g)].map((match) => String(match[1]));
    expect(paths).to.have.length.greaterThan(20);
    for (const path of paths) expect(existsSync(new URL(path, ROOT)), path).to.equal(true);
  });

  it('links only to files and headings that exist', () => {
    checkLinks(ARCHITECTURE, 'architecture.md');
  });
});
