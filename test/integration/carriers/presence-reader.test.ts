import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { expect } from 'chai';
import { readDispatchBacklog } from '../../../src/carriers/carrier-health.js';
import { PRESENCE_TTL_MS, presenceKey } from '../../../src/carriers/connector/connector-presence.js';
import { createPresenceReader, readPresenceOnce, type PresenceReader } from '../../../src/carriers/connector/presence-reader.js';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { NO_NAMESPACE, PRESENCE_BUCKET } from '../../../src/libraries/transport/nats-names.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { deletePresence, presenceEntry, writePresence } from '../../helpers/presence.js';
import { eventually } from '../../helpers/eventually.js';

describe('presence reader and dispatch backlog on a private nats-server', function () {
  this.timeout(60_000);
  let nats: TestNats;
  let client: NatsConnection;
  let reader: PresenceReader | null = null;

  before(async () => {
    nats = await startTestNats();
    client = await connectNats({ servers: nats.url });
  });
  after(async () => {
    await reader?.stop();
    await (client as NatsConnection | undefined)?.close();
    await (nats as TestNats | undefined)?.stop();
  });

  it('creates the bucket when missing (history 1, max age the presence TTL), and follows puts and deletes', async () => {
    reader = createPresenceReader({ nats: client, names: NO_NAMESPACE });
    await reader.start();
    const status = await (await new Kvm(client).open(PRESENCE_BUCKET)).status();
    expect(status.history).to.equal(1);
    expect(status.ttl).to.equal(PRESENCE_TTL_MS);

    const one = presenceEntry('acme', 'one');
    const two = presenceEntry('acme', 'two', { priority: 1, active: false });
    await writePresence(client, two);
    await writePresence(client, one);
    const current = reader;
    await eventually(
      async () => Promise.resolve(current.connectorsByCarrier(Date.now()).get('acme')?.length === 2),
      10_000,
      'both entries',
    );
    expect(
      current
        .connectorsByCarrier(Date.now())
        .get('acme')
        ?.map((e) => e.name),
    ).to.deep.equal(['one', 'two']);
    expect((await readPresenceOnce(client, NO_NAMESPACE)).map((e) => e.name).sort()).to.deep.equal(['one', 'two']);

    await deletePresence(client, one);
    await eventually(
      async () => Promise.resolve(current.connectorsByCarrier(Date.now()).get('acme')?.length === 1),
      10_000,
      'the deleted entry gone',
    );
    expect((await readPresenceOnce(client, NO_NAMESPACE)).map((e) => e.name)).to.deep.equal(['two']);
    // an entry not updated for longer than the TTL is not answered, by the reader's clock
    expect(current.connectorsByCarrier(Date.now() + PRESENCE_TTL_MS + 1).get('acme')).to.equal(undefined);
  });

  it('ignores an entry that is not a presence entry', async () => {
    const kv = await new Kvm(client).open(PRESENCE_BUCKET);
    await kv.put('junk.entry', '{"version":1}');
    const late = presenceEntry('acme', 'late');
    await kv.put(presenceKey(late.carrier, late.connector_id), JSON.stringify(late));
    const current = reader!;
    await eventually(async () => Promise.resolve(current.entries().some((e) => e.name === 'late')), 10_000, 'the entry after the junk');
    expect(current.entries().map((e) => e.carrier)).to.not.include('junk');
  });

  it('keeps following the bucket across a restart of the nats-server', async () => {
    const current = reader!;
    await nats.restart();
    const after = presenceEntry('acme', 'after-restart');
    // the client reconnects on its own; a write may fail until it has
    await eventually(
      async () => {
        await writePresence(client, { ...after, updated_at: new Date().toISOString() });
        return current.entries().some((e) => e.name === 'after-restart');
      },
      30_000,
      'an entry written after the restart seen',
      500,
    );
  });

  it('counts the backlog from the stream before a connector durable exists, and from the durable after', async () => {
    const transport = await connectNatsTransport({ servers: nats.url });
    try {
      for (const n of [1, 2, 3]) await transport.publish('sms.dispatch.acme', { n }, { id: `job-${String(n)}` });
      await transport.publish('sms.dispatch.other', { n: 4 }, { id: 'job-4' });
      const jsm = await jetstreamManager(client);
      expect(await readDispatchBacklog(jsm, NO_NAMESPACE, ['acme', 'quiet'])).to.deep.equal(
        new Map([
          ['acme', 3],
          ['quiet', 0],
          ['other', 1],
        ]),
      );
      // a connector's durable that took one job and has not settled it yet: still waiting, as ack pending
      await jsm.consumers.add('SMS_DISPATCH', {
        durable_name: 'connector-acme',
        filter_subject: 'sms.dispatch.acme',
        ack_policy: AckPolicy.Explicit,
      });
      const consumer = await jetstream(client).consumers.get('SMS_DISPATCH', 'connector-acme');
      const taken = await consumer.next();
      expect(taken).to.not.equal(null);
      const backlog = await readDispatchBacklog(jsm, NO_NAMESPACE, ['acme']);
      expect(backlog.get('acme')).to.equal(3);
      taken?.ack();
      await eventually(async () => (await readDispatchBacklog(jsm, NO_NAMESPACE, ['acme'])).get('acme') === 2, 10_000, 'one settled');
    } finally {
      await transport.close();
    }
  });
});
