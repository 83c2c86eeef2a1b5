import { expect } from 'chai';
import { kannelConf, type KannelConfOptions } from '../../helpers/kannel.js';

const base: KannelConfOptions = {
  dir: '/tmp/kannel-x',
  adminPort: 13000,
  smsboxPort: 13001,
  sendsmsPort: 13013,
  smsc: { host: '127.0.0.1', port: 2775, systemId: 'smsc', password: 'secret' },
  smscId: 'bench',
  username: 'gateway',
  password: 'sendsms-secret',
  httpRequestRetry: 5,
  httpQueueDelaySeconds: 1,
  logLevel: 2,
  accessLogs: false,
  maxPendingSubmits: 20,
};

/** The `key = value` lines of the group whose first line is `group = <name>`. */
function group(conf: string, name: string): Map<string, string> {
  const block = conf.split('\n\n').find((b) => b.startsWith(`group = ${name}\n`)) ?? '';
  return new Map(
    block
      .split('\n')
      .filter((l) => l.includes(' = '))
      .map((l) => [l.slice(0, l.indexOf(' = ')), l.slice(l.indexOf(' = ') + 3)]),
  );
}

describe('kannel.conf for the tests and bench:kannel', () => {
  it('has an smpp smsc towards the centre, with the submits in flight asked for', () => {
    const smsc = group(kannelConf(base), 'smsc');
    expect(smsc.get('smsc')).to.equal('smpp');
    expect(smsc.get('host')).to.equal('"127.0.0.1"');
    expect(smsc.get('port')).to.equal('2775');
    expect(smsc.get('smsc-username')).to.equal('"smsc"');
    expect(smsc.get('smsc-password')).to.equal('"secret"');
    expect(smsc.get('transceiver-mode')).to.equal('true');
    expect(smsc.get('max-pending-submits')).to.equal('20');
  });

  it('has the sendsms user and the smsbox ports', () => {
    const conf = kannelConf(base);
    expect(group(conf, 'sendsms-user').get('username')).to.equal('"gateway"');
    expect(group(conf, 'sendsms-user').get('password')).to.equal('"sendsms-secret"');
    expect(group(conf, 'smsbox').get('sendsms-port')).to.equal('13013');
    expect(group(conf, 'smsbox').get('bearerbox-port')).to.equal('13001');
    expect(group(conf, 'core').get('smsbox-port')).to.equal('13001');
    expect(group(conf, 'core').get('dlr-storage')).to.equal('internal');
  });

  it('logs at the level asked for, with access logs only when asked', () => {
    const quiet = kannelConf(base);
    expect(group(quiet, 'core').get('log-level')).to.equal('2');
    expect(group(quiet, 'smsbox').get('log-level')).to.equal('2');
    expect(quiet).to.not.include('access-log');
    const loud = kannelConf({ ...base, logLevel: 0, accessLogs: true });
    expect(group(loud, 'core').get('access-log')).to.equal('"/tmp/kannel-x/access.log"');
    expect(group(loud, 'smsbox').get('access-log')).to.equal('"/tmp/kannel-x/smsbox-access.log"');
    expect(group(loud, 'core').get('log-level')).to.equal('0');
  });

  it('drops quotes and backslashes from quoted values', () => {
    expect(group(kannelConf({ ...base, password: 'a"b\\c' }), 'sendsms-user').get('password')).to.equal('"abc"');
  });
});
