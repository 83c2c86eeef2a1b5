import { expect } from 'chai';
import { describeKannelSettings, KannelSettingsError, loadKannelSettings } from '../../../../src/carriers/kannel/kannel-settings.js';

const BASE = { KANNEL_SENDSMS_HOST: 'kannel.internal', KANNEL_USERNAME: 'gateway', KANNEL_PASSWORD: 'pw' };

function failure(env: Record<string, string>): KannelSettingsError {
  try {
    loadKannelSettings(env);
  } catch (error) {
    if (error instanceof KannelSettingsError) return error;
    throw error;
  }
  throw new Error('expected the settings to be refused');
}

describe('Kannel settings', () => {
  it('takes defaults for everything but the smsbox host, username and password', () => {
    const settings = loadKannelSettings(BASE);
    expect(settings.sendsms).to.deep.equal({
      host: 'kannel.internal',
      port: 13013,
      path: '/cgi-bin/sendsms',
      username: 'gateway',
      password: 'pw',
    });
    expect(settings).to.deep.include({
      smsc: null,
      defaultSender: null,
      dlrMask: 31,
      requestTimeoutMs: 10_000,
      maxConcurrentRequests: 2,
      maxSubmitsPerSecond: 50,
    });
    expect(settings.dlrListener).to.deep.equal({ host: '0.0.0.0', port: 13080, publicUrl: 'http://127.0.0.1:13080' });
  });

  it('reads every variable', () => {
    const settings = loadKannelSettings({
      ...BASE,
      KANNEL_SENDSMS_PORT: '14013',
      KANNEL_SENDSMS_PATH: '/sms/send',
      KANNEL_SMSC: 'operator-a',
      KANNEL_DEFAULT_SENDER: 'ACME',
      KANNEL_DLR_MASK: '31',
      KANNEL_DLR_HOST: '10.0.0.5',
      KANNEL_DLR_PORT: '8080',
      KANNEL_DLR_PUBLIC_URL: 'http://connector-1.internal:8080/',
      KANNEL_REQUEST_TIMEOUT_MS: '3000',
      KANNEL_MAX_CONCURRENT_REQUESTS: '4',
      KANNEL_MAX_SUBMITS_PER_SECOND: '20',
      KANNEL_RETRY_DELAY_MS: '1000',
      KANNEL_STOP_TIMEOUT_MS: '2000',
    });
    expect(settings.sendsms).to.deep.include({ port: 14013, path: '/sms/send' });
    expect(settings).to.deep.include({
      smsc: 'operator-a',
      defaultSender: 'ACME',
      dlrMask: 31,
      requestTimeoutMs: 3000,
      maxConcurrentRequests: 4,
      maxSubmitsPerSecond: 20,
      retryDelayMs: 1000,
      stopTimeoutMs: 2000,
    });
    expect(settings.dlrListener).to.deep.equal({ host: '10.0.0.5', port: 8080, publicUrl: 'http://connector-1.internal:8080' });
  });

  it('names the variable at fault', () => {
    expect(failure({ KANNEL_USERNAME: 'u', KANNEL_PASSWORD: 'p' }).variable).to.equal('KANNEL_SENDSMS_HOST');
    expect(failure({ ...BASE, KANNEL_SENDSMS_PORT: '70000' }).variable).to.equal('KANNEL_SENDSMS_PORT');
    expect(failure({ ...BASE, KANNEL_DLR_PUBLIC_URL: 'ftp://x' }).variable).to.equal('KANNEL_DLR_PUBLIC_URL');
    expect(failure({ ...BASE, KANNEL_MAX_CONCURRENT_REQUESTS: '50' }).variable).to.equal('KANNEL_MAX_CONCURRENT_REQUESTS');
    expect(failure({ ...BASE, KANNEL_SENDSMS_PATH: 'cgi-bin/sendsms' }).variable).to.equal('KANNEL_SENDSMS_PATH');
  });

  it('refuses a dlr-mask without the final reports (delivered and failed)', () => {
    const error = failure({ ...BASE, KANNEL_DLR_MASK: '17' });
    expect(error.message).to.match(/must include 1 \(delivered\) and 2 \(failed\)/);
    expect(error.variable).to.equal('KANNEL_DLR_MASK');
  });

  it('describes every setting with its variable', () => {
    const described = describeKannelSettings();
    expect(described.every((s) => s.env.startsWith('KANNEL_') && s.description !== '')).to.equal(true);
    expect(described.filter((s) => s.required).map((s) => s.env)).to.deep.equal([
      'KANNEL_SENDSMS_HOST',
      'KANNEL_USERNAME',
      'KANNEL_PASSWORD',
    ]);
  });
});
