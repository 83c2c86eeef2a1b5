import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { configurationTable } from '../../../src/libraries/config/config-table.js';
import { describeSettings } from '../../../src/libraries/config/config.js';
import { CONNECTOR_SETTINGS } from '../../../src/carriers/connector/connector-main.js';
import { describeKannelSettings } from '../../../src/carriers/kannel/kannel-settings.js';
import { describeSmppSettings } from '../../../src/carriers/smpp/smpp-account.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const PACKAGE = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };

/** Environment variables the README may name besides the settings: Node's, the MongoDB suite's switch, the fuzzing's depth, the chaos suite's choices. */
const OTHER_VARIABLES = ['NODE_ENV', 'TEST_MONGO_URL', 'FUZZ_SCALE', 'CHAOS_PROFILE', 'CHAOS_FAULTS'];

/** The benchmarks' own variables (`BENCH_…`): those the scripts of scripts/bench name. */
const BENCH_DIR = new URL('../../../scripts/bench/', import.meta.url);
const BENCH_VARIABLES = new Set(
  readdirSync(BENCH_DIR)
    .filter((file) => file.endsWith('.ts'))
    .flatMap((file) =>
      [...readFileSync(new URL(file, BENCH_DIR), 'utf8').matchAll(/\b(BENCH_[A-Z0-9_]+)\b/g)].map((match) => String(match[1])),
    ),
);

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

describe('README', () => {
  it('has the configuration table generated from the schema and config/default.json', () => {
    const start = README.indexOf('<!-- config-table:start -->\n') + '<!-- config-table:start -->\n'.length;
    const end = README.indexOf('\n<!-- config-table:end -->');
    expect(README.slice(start, end)).to.equal(configurationTable());
  });

  it('lists every error code of the catalogue with its name and HTTP status', () => {
    for (const [name, entry] of Object.entries(ERROR_CATALOGUE)) {
      const row = README.split('\n').find((line) => line.startsWith(`| ${entry.code} | ${name} |`));
      expect(row, `${entry.code} ${name}`).to.be.a('string');
      expect(row).to.contain(entry.httpStatus === null ? 'event only' : String(entry.httpStatus));
    }
  });

  it('links only to headings it has', () => {
    const anchors = new Set(
      README.split('\n')
        .filter((line) => /^#{1,6} /.test(line))
        .map((line) => anchorOf(line.replace(/^#+ /, ''))),
    );
    const links = [...README.matchAll(/\]\(#([^)]+)\)/g)].map((match) => match[1]);
    expect(links).not.to.be.empty;
    for (const link of links) expect(anchors, `#${String(link)}`).to.include(link);
  });

  it('names only npm scripts package.json has', () => {
    const scripts = [...README.matchAll(/npm run ([a-z][\w:-]*)/g)].map((match) => match[1]);
    expect(scripts).not.to.be.empty;
    for (const script of scripts) expect(PACKAGE.scripts, `npm run ${String(script)}`).to.have.property(String(script));
  });

  it('names only environment variables the configuration reads', () => {
    // the gateway's settings, the carrier connectors' (their own processes), and the few others
    const known = new Set([
      ...describeSettings().map((setting) => setting.env),
      ...CONNECTOR_SETTINGS.map((setting) => setting.name),
      ...describeSmppSettings().map((setting) => setting.env),
      ...describeKannelSettings().map((setting) => setting.env),
      ...OTHER_VARIABLES,
      ...BENCH_VARIABLES,
      // read by the npm scripts themselves (`${TEST_JOBS:-2}`)
      ...Object.values(PACKAGE.scripts).flatMap((script) =>
        [...script.matchAll(/\$\{?([A-Z][A-Z0-9]*_[A-Z0-9_]+)/g)].map((match) => String(match[1])),
      ),
    ]);
    const inline = [...README.matchAll(/`[^`\n]*`/g)]
      .flatMap((match) => match[0].match(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/g) ?? [])
      // SMPP command status names (ESME_RTHROTTLED, …) and Node's HTTP parser codes (HPE_HEADER_OVERFLOW, …) look
      // like variables and are not
      .filter((name) => !name.startsWith('ESME_') && !name.startsWith('HPE_'));
    // assignments in the shell blocks (`export GATEWAY_MODE=server DATABASE_URL=…`, `NODE_ID=node-1 … npm start`)
    const shellBlocks = [...README.matchAll(/^```sh[^\n]*\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
    const assigned = shellBlocks.flatMap((block) =>
      [...block.matchAll(/\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)=/g)].map((match) => String(match[1])),
    );
    expect(assigned).not.to.be.empty;
    const named = [...inline, ...assigned];
    expect(named).not.to.be.empty;
    for (const variable of named) expect(known, variable).to.include(variable);
  });
});
