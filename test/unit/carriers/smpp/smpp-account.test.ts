import { expect } from 'chai';
import { describeSmppSettings, loadSmppAccount, SmppAccountError, sourceAddressFor } from '../../../../src/carriers/smpp/smpp-account.js';

const BASE = { SMPP_HOST: 'smsc.example.net', SMPP_SYSTEM_ID: 'gateway', SMPP_PASSWORD: 'pw' };

describe('SMPP account', () => {
  it('takes defaults for everything but host, system_id and password', () => {
    const account = loadSmppAccount(BASE);
    expect(account).to.deep.include({
      host: 'smsc.example.net',
      port: 2775,
      tls: false,
      tlsCa: null,
      bindMode: 'transceiver',
      binds: 1,
      window: 10,
      registeredDelivery: 1,
      longMessageMethod: 'udh',
    });
    expect(account.sourceAddress).to.deep.equal({ defaultSender: '', shortCodeTon: 3, shortCodeNpi: 0 });
  });

  it('reads every variable', () => {
    const account = loadSmppAccount(
      {
        ...BASE,
        SMPP_PORT: '2776',
        SMPP_TLS: 'true',
        SMPP_TLS_CA_FILE: '/ca.pem',
        SMPP_BIND_MODE: 'transmitter_receiver',
        SMPP_BINDS: '3',
        SMPP_WINDOW: '20',
        SMPP_MAX_SUBMITS_PER_SECOND: '100',
        SMPP_DEFAULT_SENDER: 'ACME',
        SMPP_SHORT_CODE_TON: '6',
        SMPP_LONG_MESSAGE_METHOD: 'sar',
      },
      (file) => `pem of ${file}`,
    );
    expect(account).to.deep.include({
      port: 2776,
      tls: true,
      tlsCa: 'pem of /ca.pem',
      bindMode: 'transmitter_receiver',
      binds: 3,
      window: 20,
      maxSubmitsPerSecond: 100,
      longMessageMethod: 'sar',
    });
    expect(account.sourceAddress).to.deep.equal({ defaultSender: 'ACME', shortCodeTon: 6, shortCodeNpi: 0 });
  });

  const BAD: [Record<string, string>, string][] = [
    [{ SMPP_HOST: 'h', SMPP_PASSWORD: 'p' }, 'SMPP_SYSTEM_ID'],
    [{ ...BASE, SMPP_PORT: 'x' }, 'SMPP_PORT'],
    [{ ...BASE, SMPP_BIND_MODE: 'receiver' }, 'SMPP_BIND_MODE'],
    [{ ...BASE, SMPP_PASSWORD: 'much-too-long' }, 'SMPP_PASSWORD'],
    [{ ...BASE, SMPP_WINDOW: '0' }, 'SMPP_WINDOW'],
    [{ ...BASE, SMPP_LONG_MESSAGE_METHOD: 'split' }, 'SMPP_LONG_MESSAGE_METHOD'],
    [{ ...BASE, SMPP_RECONNECT_INITIAL_MS: '5000', SMPP_RECONNECT_MAX_MS: '100' }, 'SMPP_RECONNECT_MAX_MS'],
  ];
  for (const [env, variable] of BAD) {
    it(`names ${variable} when it is wrong`, () => {
      expect(() => loadSmppAccount(env))
        .to.throw(SmppAccountError, variable)
        .with.property('variable', variable);
    });
  }

  it('names SMPP_TLS_CA_FILE when it cannot be read', () => {
    expect(() =>
      loadSmppAccount({ ...BASE, SMPP_TLS: 'true', SMPP_TLS_CA_FILE: '/nope' }, () => {
        throw new Error('ENOENT');
      }),
    ).to.throw(SmppAccountError, 'SMPP_TLS_CA_FILE');
  });

  it('documents every setting with its variable', () => {
    const settings = describeSmppSettings();
    expect(settings.length).to.be.greaterThan(20);
    for (const s of settings) {
      expect(s.env).to.match(/^SMPP_[A-Z_]+$/);
      expect(s.description).to.not.equal('');
    }
  });

  it('gives TON/NPI by sender kind', () => {
    const rules = { defaultSender: '', shortCodeTon: 3, shortCodeNpi: 0 };
    expect(sourceAddressFor('ACME', rules)).to.deep.equal({ addr: 'ACME', ton: 5, npi: 0 });
    expect(sourceAddressFor('Shop 24', rules)).to.deep.equal({ addr: 'Shop 24', ton: 5, npi: 0 });
    expect(sourceAddressFor('12345', rules)).to.deep.equal({ addr: '12345', ton: 3, npi: 0 });
    expect(sourceAddressFor('+243810000001', rules)).to.deep.equal({ addr: '243810000001', ton: 1, npi: 1 });
    expect(sourceAddressFor(null, rules)).to.deep.equal({ addr: '', ton: 0, npi: 0 });
    expect(sourceAddressFor(null, { ...rules, defaultSender: '4242' })).to.deep.equal({ addr: '4242', ton: 3, npi: 0 });
    expect(sourceAddressFor('4242', { ...rules, shortCodeTon: 6, shortCodeNpi: 9 })).to.deep.equal({ addr: '4242', ton: 6, npi: 9 });
  });
});
