import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The npm scripts that run a long-lived process, stopped by a signal that may reach its whole process group. */
const LONG_RUNNING = ['start', 'connector:simulator', 'connector:smpp', 'connector:kannel'];

describe('npm scripts of the long-running processes', () => {
  for (const name of LONG_RUNNING) {
    it(`${name}: node with tsx as its loader, no tsx launcher in front (it SIGKILLs a node slow to acknowledge a relayed signal)`, () => {
      expect(scripts[name]).to.match(/^node --import tsx src\/\S+\.ts$/);
    });
  }
});
