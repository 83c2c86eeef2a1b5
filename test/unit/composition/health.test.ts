import { expect } from 'chai';
import { createHealthCheck } from '../../../src/composition/health.js';

describe('the health check', () => {
  const up = { ping: () => Promise.resolve() };
  const down = { ping: () => Promise.reject(new Error('connection refused')) };
  const carriers = () => ({ simulator: { status: 'ok' as const, connectors: 1 } });

  it('when the database and the transport answer, then the node is healthy and no node check is reported', async () => {
    const { health } = createHealthCheck({ database: up, transport: up, carriers, timeoutMs: 1_000, stopping: () => false });
    const report = await health();
    expect(report).to.deep.equal({ healthy: true, checks: { database: 'ok', transport: 'ok', carriers: carriers() } });
  });

  it('when a dependency is down, then the node is unhealthy, naming it', async () => {
    const { health } = createHealthCheck({ database: up, transport: down, carriers, timeoutMs: 1_000 });
    const report = await health();
    expect(report.healthy).to.equal(false);
    expect(report.checks.transport).to.equal('down');
    expect(report.checks.node).to.equal(undefined);
  });

  it('when the node has begun to stop, then it is unhealthy with node "stopping", its dependencies still reported', async () => {
    let stopping = false;
    const { health } = createHealthCheck({ database: up, transport: up, carriers, timeoutMs: 1_000, stopping: () => stopping });
    expect((await health()).healthy).to.equal(true);
    stopping = true;
    const report = await health();
    expect(report).to.deep.equal({
      healthy: false,
      checks: { database: 'ok', transport: 'ok', carriers: carriers(), node: 'stopping' },
    });
  });
});
