import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import semver from 'semver';

interface LockedPackage {
  readonly version?: string;
  readonly engines?: Record<string, string> | readonly string[];
  readonly dev?: boolean;
}

const root = new URL('../../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as { packages: Record<string, LockedPackage> };
const readme = readFileSync(new URL('README.md', root), 'utf8');

describe('the Node.js version the project promises', () => {
  const promised = semver.minVersion(manifest.engines.node);

  it('is the version the README names', () => {
    expect(promised, 'package.json engines.node').to.not.equal(null);
    const { major, minor } = promised ?? { major: 0, minor: 0 };
    expect(readme).to.include(`Node.js ${major}.${minor} or later`);
  });

  it('is accepted by every installed package that states an engine (npm install warns of none)', () => {
    const refusing: string[] = [];
    for (const [path, pkg] of Object.entries(lock.packages)) {
      const engines = pkg.engines;
      if (!path || !engines || Array.isArray(engines)) continue;
      const node = (engines as Record<string, string>).node;
      if (node === undefined) continue;
      // npm warns when the running Node.js is refused; the lowest promised version must be accepted too
      for (const version of [promised?.version ?? '0.0.0', process.version]) {
        if (!semver.satisfies(version, node)) refusing.push(`${path}@${pkg.version ?? '?'} wants node ${node}, refuses ${version}`);
      }
    }
    expect(refusing).to.deep.equal([]);
  });
});
