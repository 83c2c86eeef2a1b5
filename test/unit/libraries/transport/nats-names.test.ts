import { expect } from 'chai';
import { readConnectorEnvironment, ConnectorEnvironmentError } from '../../../../src/carriers/connector/connector-main.js';
import { loadConfig } from '../../../../src/libraries/config/config.js';
import {
  NO_NAMESPACE,
  PRESENCE_BUCKET,
  RECEIPTS_DURABLE,
  WEBHOOKS_DURABLE,
  connectorDurable,
  dispatchBucket,
  dispatchSubject,
  natsNames,
  receiptSubject,
  referenceBucket,
  shardSubject,
  webhookSubject,
  type NatsNames,
} from '../../../../src/libraries/transport/nats-names.js';
import { subjectMatches } from '../../../../src/libraries/transport/subjects.js';
import { STREAMS } from '../../../../src/libraries/transport/transport-port.js';
import { ConfigError, NatsNamespaceError } from '../../../../src/libraries/errors/internal-errors.js';

/** Every name a deployment uses on the server, for one carrier, one merchant and one shard. */
function everyName(names: NatsNames) {
  return {
    streams: Object.values(STREAMS).map((stream) => names.stream(stream.name)),
    streamSubjects: Object.values(STREAMS).map((stream) => names.subject(stream.subjects)),
    subjects: [dispatchSubject('simulator'), receiptSubject('simulator'), webhookSubject('mer_1'), shardSubject(7)].map((s) =>
      names.subject(s),
    ),
    consumers: [RECEIPTS_DURABLE, WEBHOOKS_DURABLE, connectorDurable('simulator')].map((d) => names.consumer(d)),
    buckets: [PRESENCE_BUCKET, dispatchBucket('simulator'), referenceBucket('simulator')].map((b) => names.bucket(b)),
  };
}

/** NATS's rules: a stream or consumer name has no `.`, `*`, `>`, whitespace or path separator; a bucket is [-_A-Za-z0-9]. */
const LEGAL_STREAM_OR_CONSUMER = /^[^.*>\s/\\]+$/;
const LEGAL_BUCKET = /^[-\w]+$/;
/** A subject: non-empty tokens without whitespace; `*` and `>` only as whole tokens, `>` only last. */
function legalSubject(subject: string): boolean {
  const tokens = subject.split('.');
  return tokens.every(
    (token, i) => token !== '' && !/\s/.test(token) && (!/[*>]/.test(token) || token === '*' || (token === '>' && i === tokens.length - 1)),
  );
}

describe('NATS names and NATS_NAMESPACE', () => {
  it('when the namespace is empty, then every name is exactly what deployments have always used', () => {
    expect(everyName(NO_NAMESPACE)).to.deep.equal(everyName(natsNames('')));
    expect(everyName(NO_NAMESPACE)).to.deep.equal({
      streams: ['SMS_DISPATCH', 'SMS_RECEIPTS', 'WEBHOOK_JOBS'],
      streamSubjects: ['sms.dispatch.>', 'sms.receipts.>', 'webhook.jobs.>'],
      subjects: ['sms.dispatch.simulator', 'sms.receipts.simulator', 'webhook.jobs.mer_1', 'gw.shard.7'],
      consumers: ['gateway-receipts', 'webhook-delivery', 'connector-simulator'],
      buckets: ['gateway-connectors', 'carrier-dispatches-simulator', 'carrier-references-simulator'],
    });
    expect(NO_NAMESPACE.localSubject('sms.receipts.simulator')).to.equal('sms.receipts.simulator');
  });

  it('when a namespace is set, then every stream, subject, consumer and bucket carries it', () => {
    expect(everyName(natsNames('a'))).to.deep.equal({
      streams: ['a_SMS_DISPATCH', 'a_SMS_RECEIPTS', 'a_WEBHOOK_JOBS'],
      streamSubjects: ['a.sms.dispatch.>', 'a.sms.receipts.>', 'a.webhook.jobs.>'],
      subjects: ['a.sms.dispatch.simulator', 'a.sms.receipts.simulator', 'a.webhook.jobs.mer_1', 'a.gw.shard.7'],
      consumers: ['a_gateway-receipts', 'a_webhook-delivery', 'a_connector-simulator'],
      buckets: ['a_gateway-connectors', 'a_carrier-dispatches-simulator', 'a_carrier-references-simulator'],
    });
  });

  it('when a namespace uses every allowed character, up to 32 of them, then its names are legal NATS names', () => {
    for (const namespace of ['a', 'Blue-2_x', '-_', 'x'.repeat(32), 'sms', 'SMS']) {
      const names = everyName(natsNames(namespace));
      for (const name of [...names.streams, ...names.consumers]) expect(name, `${namespace}: ${name}`).to.match(LEGAL_STREAM_OR_CONSUMER);
      for (const name of names.buckets) expect(name, `${namespace}: ${name}`).to.match(LEGAL_BUCKET);
      for (const subject of [...names.streamSubjects, ...names.subjects])
        expect(legalSubject(subject), `${namespace}: ${subject}`).to.equal(true);
    }
  });

  it('when a subject comes back from the server, then the application gets it without the namespace', () => {
    const names = natsNames('tenant-a');
    expect(names.localSubject(names.subject('sms.receipts.orange'))).to.equal('sms.receipts.orange');
    expect(names.localSubject(names.subject(webhookSubject('mer_1')))).to.equal('webhook.jobs.mer_1');
  });

  it('when two deployments share a server, then no subject of one falls in a stream of the other, with or without a namespace', () => {
    // namespaces named like the application's own tokens are the ones that could have collided; case counts
    const namespaces = ['', 'a', 'A', 'b', 'sms', 'webhook', 'gw', 'dispatch', 'receipts', 'jobs', 'shard'];
    const subjectsOf = (names: NatsNames) =>
      [dispatchSubject('simulator'), receiptSubject('sms'), webhookSubject('dispatch'), shardSubject(1)].map((s) => names.subject(s));
    for (const mine of namespaces) {
      for (const theirs of namespaces) {
        if (mine === theirs) continue;
        const filters = Object.values(STREAMS).map((stream) => natsNames(theirs).subject(stream.subjects));
        for (const subject of subjectsOf(natsNames(mine))) {
          for (const filter of filters)
            expect(subjectMatches(filter, subject), `${subject} (${mine}) in ${filter} (${theirs})`).to.equal(false);
        }
        const streams = Object.values(STREAMS).map((stream) => natsNames(theirs).stream(stream.name));
        for (const stream of Object.values(STREAMS).map((s) => natsNames(mine).stream(s.name))) expect(streams).not.to.include(stream);
      }
    }
  });

  it('when the namespace is not 1 to 32 letters, digits, - or _, then it is refused naming NATS_NAMESPACE', () => {
    for (const bad of ['a.b', 'a b', 'a*', 'a>', 'x'.repeat(33), 'tenant/a', 'é']) {
      expect(() => natsNames(bad), bad).to.throw(NatsNamespaceError, /^NATS_NAMESPACE must be 1 to 32 letters, digits, - or _/);
    }
  });

  it('when the gateway reads NATS_NAMESPACE, then it is the configuration nats.namespace, empty by default, refused naming the variable when invalid', () => {
    expect(loadConfig({ env: {} }).nats.namespace).to.equal('');
    expect(loadConfig({ env: { NATS_NAMESPACE: 'tenant-a' } }).nats.namespace).to.equal('tenant-a');
    expect(() => loadConfig({ env: { NATS_NAMESPACE: 'tenant.a' } }))
      .to.throw(ConfigError, /"nats\.namespace" must be 1 to 32 letters, digits, - or _.*\(environment variable NATS_NAMESPACE\)/)
      .with.property('key', 'nats.namespace');
    expect(() => loadConfig({ env: { NATS_NAMESPACE: 'x'.repeat(33) } })).to.throw(ConfigError, /NATS_NAMESPACE/);
  });

  it('when a connector reads NATS_NAMESPACE, then it is the same rule: read when valid, empty when unset, refused naming the variable', () => {
    const base = { NATS_URL: 'nats://127.0.0.1:4222', CONNECTOR_CARRIER: 'orange' };
    expect(readConnectorEnvironment(base, 'smpp').natsNamespace).to.equal('');
    expect(readConnectorEnvironment({ ...base, NATS_NAMESPACE: '' }, 'smpp').natsNamespace).to.equal('');
    expect(readConnectorEnvironment({ ...base, NATS_NAMESPACE: 'tenant_b' }, 'smpp').natsNamespace).to.equal('tenant_b');
    let problems: readonly string[] = [];
    try {
      readConnectorEnvironment({ ...base, NATS_NAMESPACE: 'tenant b' }, 'smpp');
    } catch (error) {
      if (error instanceof ConnectorEnvironmentError) problems = error.problems;
    }
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(/^NATS_NAMESPACE must be 1 to 32 letters, digits, - or _/);
  });
});
