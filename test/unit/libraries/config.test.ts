import { expect } from 'chai';
import { describeSettings, loadConfig } from '../../../src/libraries/config/config.js';
import { requireSecretsKey } from '../../../src/libraries/secrets/secret-keys.js';
import { ConfigError } from '../../../src/libraries/errors/internal-errors.js';

const KEY = Buffer.alloc(32, 1).toString('base64');
const OLD_KEY = Buffer.alloc(32, 2).toString('base64');

describe('configuration', () => {
  it('when nothing is set, then the defaults of config/default.json apply', () => {
    const config = loadConfig({ env: {} });
    expect(config.environment).to.equal('sandbox');
    expect(config.mode).to.equal('embedded');
    expect(config.http.port).to.equal(3000);
    expect(config.rateLimits).to.include({ send: 60, status: 120, balance: 30, calculate: 60, management: 60 });
    expect(config.webhooks.retryDelaysMs).to.deep.equal([30_000, 120_000, 600_000, 3_600_000]);
    expect(config.merchantDefaults.timezone).to.equal('Africa/Kinshasa');
  });

  it('when NODE_ENV names a profile, then its file overrides the defaults', () => {
    const config = loadConfig({ env: { NODE_ENV: 'production', SECRETS_KEY: KEY } });
    expect(config.environment).to.equal('production');
    expect(config.mode).to.equal('server');
    expect(config.http.port).to.equal(3000);
  });

  it('when server mode has no SECRETS_KEY, then nodes and the CLI refuse it naming SECRETS_KEY; a malformed key fails loading; embedded mode needs none', () => {
    const production = loadConfig({ env: { NODE_ENV: 'production' } });
    expect(() => {
      requireSecretsKey(production);
    })
      .to.throw(ConfigError, /secrets\.key.*required in server mode.*SECRETS_KEY/)
      .with.property('key', 'secrets.key');
    expect(() => {
      requireSecretsKey(loadConfig({ env: {} }));
    }).to.not.throw();
    expect(() => loadConfig({ env: { GATEWAY_MODE: 'server', SECRETS_KEY: 'c2hvcnQ=' } })).to.throw(
      ConfigError,
      /32 random bytes in base64.*SECRETS_KEY/,
    );
    expect(() => loadConfig({ env: { GATEWAY_MODE: 'server', SECRETS_KEY: KEY, SECRETS_PREVIOUS_KEYS: `${KEY},nope` } })).to.throw(
      ConfigError,
      /secrets\.previousKeys/,
    );
    expect(
      loadConfig({ env: { GATEWAY_MODE: 'server', SECRETS_KEY: KEY, SECRETS_PREVIOUS_KEYS: `${OLD_KEY}, ${KEY}` } }).secrets,
    ).to.deep.equal({ key: KEY, previousKeys: [OLD_KEY, KEY] });
    expect(loadConfig({ env: {} }).secrets.key).to.equal('');
  });

  it('when a node or the CLI reads settings at odds with each other, then loading fails naming the setting, before anything opens', () => {
    const server = { GATEWAY_MODE: 'server', SECRETS_KEY: KEY, DATABASE_URL: 'postgres://db/gateway', NATS_URL: 'nats://nats:4222' };
    expect(loadConfig({ env: server, reader: 'node' }).mode).to.equal('server');
    expect(() => loadConfig({ env: { ...server, NATS_URL: '' }, reader: 'node' }))
      .to.throw(ConfigError, /^Invalid configuration: server mode needs NATS_URL/)
      .with.property('key', 'nats.url');
    expect(() => loadConfig({ env: { ...server, DATABASE_URL: '' }, reader: 'node' }))
      .to.throw(ConfigError, /server mode needs DATABASE_URL \(PostgreSQL\) or MONGO_URL \(MongoDB\)/)
      .with.property('key', 'database.url');
    expect(
      loadConfig({ env: { ...server, DATABASE_URL: '', MONGO_URL: 'mongodb://db/gateway' }, reader: 'node' }).database.mongoUrl,
    ).to.equal('mongodb://db/gateway');
    expect(() => loadConfig({ env: { ...server, SECRETS_KEY: '' }, reader: 'node' }))
      .to.throw(ConfigError, /secrets\.key.*required in server mode.*SECRETS_KEY/)
      .with.property('key', 'secrets.key');
    // the drain before a stop counts within its grace
    expect(
      loadConfig({ env: { ...server, SHUTDOWN_DRAIN_MS: '5000', SHUTDOWN_GRACE_MS: '25000' }, reader: 'node' }).shutdown.drainMs,
    ).to.equal(5_000);
    expect(() => loadConfig({ env: { ...server, SHUTDOWN_DRAIN_MS: '25000', SHUTDOWN_GRACE_MS: '25000' }, reader: 'node' }))
      .to.throw(ConfigError, /SHUTDOWN_DRAIN_MS \(25000\) must be shorter than SHUTDOWN_GRACE_MS \(25000\)/)
      .with.property('key', 'shutdown.drainMs');
    // the CLI works on the database alone when no node runs; it refuses later, once it has seen nodes running
    expect(loadConfig({ env: { ...server, NATS_URL: '' }, reader: 'cli' }).nats.url).to.equal('');
    expect(() => loadConfig({ env: { ...server, DATABASE_URL: '' }, reader: 'cli' })).to.throw(ConfigError, /DATABASE_URL/);
    // embedded mode needs none of them; without a reader (tests, the simulator connector) no rule applies
    expect(loadConfig({ env: {}, reader: 'node' }).mode).to.equal('embedded');
    expect(loadConfig({ env: { GATEWAY_MODE: 'server' } }).nats.url).to.equal('');
  });

  it('when environment variables are set, then they win over files and are converted to their types', () => {
    const config = loadConfig({
      env: { NODE_ENV: 'test', PORT: '8080', WEBHOOK_RETRY_DELAYS_MS: '30, 120,600', SEED_DEMO_MERCHANT: 'true' },
    });
    expect(config.http.port).to.equal(8080);
    expect(config.webhooks.retryDelaysMs).to.deep.equal([30, 120, 600]);
    expect(config.demo.seedMerchant).to.equal(true);
  });

  it('when a value is invalid, then loading fails naming the key and its environment variable', () => {
    expect(() => loadConfig({ env: { PORT: 'eighty' } }))
      .to.throw(ConfigError, /http\.port.*PORT/)
      .with.property('key', 'http.port');
    expect(() => loadConfig({ env: { GATEWAY_ENVIRONMENT: 'staging' } })).to.throw(ConfigError, /environment.*GATEWAY_ENVIRONMENT/);
    expect(() => loadConfig({ env: { DEFAULT_UNIT_PRICE: '0.00001' } })).to.throw(ConfigError, /merchantDefaults\.unitPrice/);
    // a simulator receipt held longer than a second would no longer keep the sandbox's pace
    expect(() => loadConfig({ env: { SIMULATOR_RECEIPT_LINGER_MS: '1001' } })).to.throw(
      ConfigError,
      /simulator\.receiptLingerMs.*SIMULATOR_RECEIPT_LINGER_MS/,
    );
    expect(loadConfig({ env: { SIMULATOR_RECEIPT_LINGER_MS: '0' } }).simulator.receiptLingerMs).to.equal(0);
  });

  it('when loaded, then the result is frozen all the way down', () => {
    const config = loadConfig({ env: {} });
    expect(Object.isFrozen(config)).to.equal(true);
    expect(Object.isFrozen(config.http)).to.equal(true);
    expect(Object.isFrozen(config.webhooks.retryDelaysMs)).to.equal(true);
  });

  it('when overrides are given, then they are merged last', () => {
    const config = loadConfig({ env: { PORT: '1' }, overrides: { http: { port: 2 } } });
    expect(config.http.port).to.equal(2);
    expect(config.http.host).to.equal('0.0.0.0');
  });

  it('documents every setting with a distinct environment variable and a description', () => {
    const settings = describeSettings();
    const envs = settings.map((s) => s.env);
    expect(new Set(envs).size).to.equal(envs.length);
    for (const s of settings) expect(s.description, s.key).to.not.equal('');
    expect(settings.find((s) => s.key === 'http.port')?.env).to.equal('PORT');
  });
});
