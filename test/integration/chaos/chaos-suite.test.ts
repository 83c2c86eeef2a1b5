import { expect } from 'chai';
import { parseFaultList, PROFILES } from '../../../scripts/chaos/chaos-profiles.js';
import { formatReport } from '../../../scripts/chaos/chaos-report.js';
import { runChaos, type ChaosResult } from '../../../scripts/chaos/chaos-run.js';

/**
 * `npm run chaos`'s short profile, as part of the tests: a private PostgreSQL and nats-server, three gateway node
 * processes, the simulator connector process and a webhook receiver; a mixed load while each fault of the profile
 * happens (scripts/chaos/chaos-profiles.ts); then every verification must hold. Only correctness is asserted, never
 * how fast the cluster recovered (the report prints that). CHAOS_FAULTS=nats-kill,... runs only those faults.
 */
describe('chaos suite (short profile)', function () {
  // a guard against a hung run, not a measure: a loaded machine takes longer, which is fine
  this.timeout(20 * 60_000);

  let result: ChaosResult | null = null;

  after(function () {
    // the report explains a failure: which fault, which request, what the journal says
    if (result && this.currentTest?.state !== 'passed')
      console.log(formatReport(result, 'npx mocha test/integration/chaos/chaos-suite.test.ts'));
  });

  it('after node, NATS, PostgreSQL and connector faults under load, every 201 is kept, no 503 applied, ledgers exact, nothing dispatched twice, no webhook missing', async () => {
    const faults = process.env.CHAOS_FAULTS;
    const profile = faults ? { ...PROFILES.short, faults: parseFaultList(faults) } : PROFILES.short;
    result = await runChaos({ profile });
    const failed = result.verifications.filter((v) => !v.ok).map((v) => `${v.name}: ${v.failures.slice(0, 3).join(' | ')}`);
    expect(failed).to.deep.equal([]);
    // the run did what it says: every fault made, the load accepted, webhooks arrived
    expect(result.faults.map((f) => f.name)).to.deep.equal(profile.faults);
    expect(result.evidence.records.filter((r) => r.accepted).length).to.be.greaterThan(0);
    expect(result.webhooks.expected).to.be.greaterThan(0);
    expect(result.verifications.map((v) => v.ok)).to.not.include(false);
  });
});
