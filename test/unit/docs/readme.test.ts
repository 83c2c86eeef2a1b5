import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { configurationTable } from '../../../src/libraries/config/config-table.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

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
});
