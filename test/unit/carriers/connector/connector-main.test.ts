import { expect } from 'chai';
import {
  CONNECTOR_SETTINGS,
  ConnectorEnvironmentError,
  readConnectorEnvironment,
} from '../../../../src/carriers/connector/connector-main.js';

const problemsOf = (env: NodeJS.ProcessEnv): readonly string[] => {
  try {
    readConnectorEnvironment(env, 'smpp');
  } catch (error) {
    if (error instanceof ConnectorEnvironmentError) return error.problems;
    throw error;
  }
  return [];
};

describe('connector process settings', () => {
  it('reads the common settings with their defaults', () => {
    expect(readConnectorEnvironment({ NATS_URL: 'nats://127.0.0.1:4222', CONNECTOR_CARRIER: 'vodacom-cd' }, 'smpp')).to.deep.equal({
      natsUrl: 'nats://127.0.0.1:4222',
      natsNamespace: '',
      carrier: 'vodacom-cd',
      name: 'smpp-vodacom-cd',
      priority: 1,
      weight: 1,
      concurrency: undefined,
      recordTtlMs: 3 * 24 * 3_600_000,
      uncertainSubmission: 'resend',
      receiptBatchMax: 100,
      logLevel: 'info',
    });
  });

  it('takes the name, priority, weight and the rest from the environment', () => {
    const settings = readConnectorEnvironment(
      {
        NATS_URL: 'nats://a:4222,nats://b:4222',
        CONNECTOR_CARRIER: 'airtel',
        CONNECTOR_NAME: 'smpp-backup',
        CONNECTOR_PRIORITY: '2',
        CONNECTOR_WEIGHT: '0.5',
        CONNECTOR_CONCURRENCY: '16',
        CONNECTOR_UNCERTAIN_SUBMISSION: 'hold',
        LOG_LEVEL: 'warn',
      },
      'smpp',
    );
    expect(settings).to.include({
      name: 'smpp-backup',
      priority: 2,
      weight: 0.5,
      concurrency: 16,
      uncertainSubmission: 'hold',
      logLevel: 'warn',
    });
  });

  it('names every missing or invalid variable', () => {
    expect(problemsOf({})).to.have.members([
      'NATS_URL is required (nats://host:port, comma-separated for several servers)',
      'CONNECTOR_CARRIER is required: the carrier slug the gateway routes to',
    ]);
    const problems = problemsOf({
      NATS_URL: 'nats://x',
      CONNECTOR_CARRIER: 'Bad.Slug',
      CONNECTOR_PRIORITY: 'first',
      CONNECTOR_WEIGHT: '0',
      CONNECTOR_NAME: 'a b',
      CONNECTOR_UNCERTAIN_SUBMISSION: 'maybe',
    });
    expect(problems).to.have.length(5);
    for (const variable of [
      'CONNECTOR_CARRIER',
      'CONNECTOR_PRIORITY',
      'CONNECTOR_WEIGHT',
      'CONNECTOR_NAME',
      'CONNECTOR_UNCERTAIN_SUBMISSION',
    ]) {
      expect(
        problems.some((p) => p.startsWith(variable)),
        variable,
      ).to.equal(true);
    }
  });

  it('treats an empty variable as unset', () => {
    expect(problemsOf({ NATS_URL: '', CONNECTOR_CARRIER: 'x' })).to.deep.equal([
      'NATS_URL is required (nats://host:port, comma-separated for several servers)',
    ]);
  });

  it('lists every variable it reads in its settings table', () => {
    expect(CONNECTOR_SETTINGS.map((row) => row.name)).to.include.members([
      'NATS_URL',
      'CONNECTOR_CARRIER',
      'CONNECTOR_NAME',
      'CONNECTOR_PRIORITY',
      'CONNECTOR_WEIGHT',
    ]);
  });
});
