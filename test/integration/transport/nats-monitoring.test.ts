import { expect } from 'chai';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';

interface Varz {
  readonly in_msgs: number;
  readonly out_msgs: number;
  readonly in_bytes: number;
}

async function varz(server: TestNats): Promise<Varz> {
  if (server.monitorUrl === null) throw new Error('no monitoring endpoint');
  const response = await fetch(`${server.monitorUrl}/varz`);
  expect(response.status).to.equal(200);
  return (await response.json()) as Varz;
}

describe('test nats-server: the monitoring endpoint (bench:cluster reads its totals)', function () {
  this.timeout(30_000);

  it('when started with monitoring, then /varz counts what clients publish, and still answers after a restart', async () => {
    const server = await startTestNats({ monitoring: true });
    let connection: NatsConnection | null = null;
    try {
      expect(server.monitorUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      const before = await varz(server);
      connection = await connectNats({ servers: server.url, name: 'monitoring-test' });
      for (let i = 0; i < 5; i++) connection.publish('monitoring.test', 'x'.repeat(100));
      await connection.flush();
      const after = await varz(server);
      expect(after.in_msgs - before.in_msgs).to.be.at.least(5);
      expect(after.in_bytes - before.in_bytes).to.be.at.least(500);
      await connection.close();
      connection = null;

      await server.restart();
      const restarted = await varz(server);
      expect(restarted.in_msgs).to.be.a('number');
    } finally {
      await connection?.close();
      await server.stop();
    }
  });

  it('when started without it, then there is no monitoring endpoint', async () => {
    const server = await startTestNats();
    try {
      expect(server.monitorUrl).to.equal(null);
    } finally {
      await server.stop();
    }
  });
});
