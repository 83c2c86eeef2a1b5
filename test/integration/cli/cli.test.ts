import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import { mustParseMoney } from '../../../src/pricing/money.js';
import type { CommandOutcome } from '../../../src/entry-points/cli/command.js';
import { parseCommandLine } from '../../../src/entry-points/cli/command-line.js';
import { parsePricingCsv } from '../../../src/entry-points/cli/csv.js';
import {
  createKey,
  deleteKey,
  listKeys,
  rotateKey,
  setKeyStatus,
  setSigning,
  setWebhook,
} from '../../../src/entry-points/cli/key-commands.js';
import { createMerchant, listMerchants, showMerchant } from '../../../src/entry-points/cli/merchant-commands.js';
import { importPricing, listPricing } from '../../../src/entry-points/cli/pricing-commands.js';
import { runCli } from '../../../src/composition/cli.js';
import { openWallet, topUp, walletBalance, walletLedger } from '../../../src/entry-points/cli/wallet-commands.js';
import { runCommand, type CommandResult } from '../../helpers/command-process.js';
import { gatewayOnPostgres } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const PRICES = [
  'country_calling_code,network_prefix,price,carrier',
  '243,81,0.02,vodacom-cd',
  '243,99,0.03,airtel-cd',
  '33,,0.05,orange-fr',
  '',
].join('\n');

type Json = Record<string, unknown>;

function succeeded(outcome: CommandOutcome): Extract<CommandOutcome, { ok: true }> {
  if (!outcome.ok) throw new Error(`expected success, got: ${outcome.message} ${outcome.details.join('; ')}`);
  return outcome;
}

/** The JSON of a successful outcome, as a script reading `--json` sees it. */
function jsonOf(outcome: CommandOutcome): Json {
  return JSON.parse(JSON.stringify(succeeded(outcome).json)) as Json;
}

function listOf(outcome: CommandOutcome): Json[] {
  return JSON.parse(JSON.stringify(succeeded(outcome).json)) as Json[];
}

function runCliProcess(args: readonly string[], env: Record<string, string>): Promise<CommandResult> {
  return runCommand(process.execPath, ['--import', 'tsx', 'src/entry-points/cli/cli-main.ts', ...args], { cwd: ROOT, env });
}

describe('operator CLI', function () {
  this.timeout(60_000);
  let url: string;
  let gateway: Gateway;

  before(async () => {
    url = await (await testPostgres()).createDatabase('cli');
    gateway = await gatewayOnPostgres(url);
  });
  after(async () => {
    await gateway.stop();
  });

  async function newMerchant(name: string): Promise<string> {
    return succeeded(await createMerchant(gateway, { name })).text;
  }

  async function keysOf(merchantId: string): Promise<Json[]> {
    return listOf(await listKeys(gateway, { merchantId }));
  }

  describe('merchants', () => {
    it('when a merchant is created, then its id is printed and show and list report its settings', async () => {
      const created = succeeded(
        await createMerchant(gateway, { name: 'Kin Shop', unitPrice: '0.015', currencySymbol: '$', locale: 'fr-CD' }),
      );
      const id = created.text;

      const shown = await showMerchant(gateway, { merchantId: id });
      const listed = listOf(await listMerchants(gateway));

      expect(id).to.match(/^mer_[0-9a-f]{20}$/);
      expect(jsonOf(shown)).to.deep.equal({
        id,
        name: 'Kin Shop',
        timezone: 'Africa/Kinshasa',
        default_country: 'CD',
        currency: 'USD',
        currency_symbol: '$',
        locale: 'fr-CD',
        unit_price: 0.015,
        unit_price_is_default: false,
        wallets: { prepaid: false, postpaid: false },
        created_at: jsonOf(created).created_at,
        pricing_rows: 0,
        api_keys: 0,
        balance: null,
      });
      expect(succeeded(shown).text).to.include('Kin Shop').and.include('Unit price:      0.015');
      expect(listed.find((m) => m.id === id)?.name).to.equal('Kin Shop');
      expect(succeeded(await listMerchants(gateway)).text).to.include(id);
    });

    it('when the settings are invalid, then nothing is created and every problem is named', async () => {
      const before = (await gateway.persistence.directory.merchants()).length;

      const outcome = await createMerchant(gateway, { name: 'Bad', timezone: 'Mars/Olympus', currency: 'dollars', unitPrice: '0.00001' });

      expect(outcome).to.deep.equal({
        ok: false,
        message: 'the merchant was not created',
        details: [
          'timezone: unknown IANA time zone "Mars/Olympus"',
          'currency: must be an ISO 4217 code',
          'unitPrice: must be a positive amount with at most 4 decimals',
        ],
      });
      expect(await gateway.persistence.directory.merchants()).to.have.length(before);
    });

    it('when an unknown merchant is shown, then it is a validation error', async () => {
      expect(await showMerchant(gateway, { merchantId: 'mer_nope' })).to.deep.equal({
        ok: false,
        message: 'unknown merchant mer_nope',
        details: [],
      });
    });
  });

  describe('pricing', () => {
    it('when a valid CSV is imported, then the rows replace the price list and are listed', async () => {
      const id = await newMerchant('Priced');

      const imported = await importPricing(gateway, { merchantId: id, csv: PRICES });
      const listed = await listPricing(gateway, { merchantId: id });

      expect(jsonOf(imported)).to.deep.equal({ merchant_id: id, imported: 3, replaced: 0 });
      expect(jsonOf(listed)).to.deep.equal({
        merchant_id: id,
        currency: 'USD',
        unit_price: 0.01,
        rows: [
          { country_calling_code: '243', network_prefix: '81', price: 0.02, carrier: 'vodacom-cd' },
          { country_calling_code: '243', network_prefix: '99', price: 0.03, carrier: 'airtel-cd' },
          { country_calling_code: '33', network_prefix: '', price: 0.05, carrier: 'orange-fr' },
        ],
      });
      expect(succeeded(listed).text.split('\n')[1]).to.match(/^\+243 +81 +0\.02 +vodacom-cd$/);
      expect(
        jsonOf(
          await importPricing(gateway, { merchantId: id, csv: 'country_calling_code,network_prefix,price,carrier\n1,,0.0125,twilio-us\n' }),
        ),
      ).to.deep.equal({
        merchant_id: id,
        imported: 1,
        replaced: 3,
      });
      expect(await gateway.persistence.directory.pricing(id)).to.deep.equal([
        { countryCallingCode: '1', networkPrefix: '', price: 125, carrier: 'twilio-us' },
      ]);
    });

    it('when one line of the CSV is bad, then its line number is reported and nothing changes', async () => {
      const id = await newMerchant('Priced twice');
      succeeded(await importPricing(gateway, { merchantId: id, csv: PRICES }));
      const before = await gateway.persistence.directory.pricing(id);
      const csv = [
        'country_calling_code,network_prefix,price,carrier',
        '243,81,0.05,vodacom-cd',
        '243,99,0.12345,airtel-cd',
        '33,6,0.05,orange-fr',
      ].join('\n');

      const outcome = await importPricing(gateway, { merchantId: id, csv });

      expect(outcome).to.deep.equal({
        ok: false,
        message: 'the pricing file is invalid; nothing was changed',
        details: ['line 3: price "0.12345" must be a positive amount with at most 4 decimals'],
      });
      expect(await gateway.persistence.directory.pricing(id)).to.deep.equal(before);
    });

    it('when the merchant is unknown, then nothing is imported', async () => {
      expect(await importPricing(gateway, { merchantId: 'mer_nope', csv: PRICES })).to.deep.equal({
        ok: false,
        message: 'unknown merchant mer_nope',
        details: [],
      });
    });
  });

  describe('pricing CSV', () => {
    const HEADER = 'country_calling_code,network_prefix,price,carrier';
    const cases: { name: string; csv: string; errors: string[] }[] = [
      {
        name: 'a wrong header',
        csv: 'code,prefix,price,carrier\n243,81,0.02,x',
        errors: ['1: the header must be "country_calling_code,network_prefix,price,carrier"'],
      },
      { name: 'a missing field', csv: `${HEADER}\n243,81,0.02`, errors: ['2: expected 4 fields, found 3'] },
      {
        name: 'a 4-digit country code',
        csv: `${HEADER}\n2433,81,0.02,x`,
        errors: ['2: country_calling_code "2433" must be 1 to 3 digits, not starting with 0'],
      },
      { name: 'a letter in the prefix', csv: `${HEADER}\n243,8a,0.02,x`, errors: ['2: network_prefix "8a" must be digits or empty'] },
      { name: 'a zero price', csv: `${HEADER}\n243,81,0,x`, errors: ['2: price "0" must be a positive amount with at most 4 decimals'] },
      {
        name: 'a 5th decimal',
        csv: `${HEADER}\n243,81,0.00001,x`,
        errors: ['2: price "0.00001" must be a positive amount with at most 4 decimals'],
      },
      {
        name: 'a carrier with a dot',
        csv: `${HEADER}\n243,81,0.02,a.b`,
        errors: ['2: carrier "a.b" must be a connector slug (letters, digits, - and _)'],
      },
      {
        name: 'a carrier holding U+0000',
        csv: `${HEADER}\n243,81,0.02,sim\u0000ulator`,
        errors: ['2: carrier "sim\u0000ulator" must be a connector slug (letters, digits, - and _)'],
      },
      {
        name: 'a price holding U+0000',
        csv: `${HEADER}\n243,81,0.0\u00002,x`,
        errors: ['2: price "0.0\u00002" must be a positive amount with at most 4 decimals'],
      },
      {
        name: 'a duplicate prefix',
        csv: `${HEADER}\n243,81,0.02,x\n\n+243,81,0.03,y`,
        errors: ['4: duplicates the row for +243 81 on line 2'],
      },
      { name: 'an open quote', csv: `${HEADER}\n243,81,0.02,"x`, errors: ['2: unbalanced quotes'] },
      { name: 'no rows', csv: `${HEADER}\n`, errors: ['1: the file has a header but no pricing rows'] },
    ];
    for (const { name, csv, errors } of cases) {
      it(`when a file has ${name}, then the line is reported`, () => {
        const parsed = parsePricingCsv(csv);
        expect(parsed.ok ? [] : parsed.errors.map((e) => `${e.line}: ${e.message}`)).to.deep.equal(errors);
      });
    }

    it('when fields are quoted, padded or end in CRLF, then they are read as written', () => {
      const parsed = parsePricingCsv(`\uFEFF${HEADER}\r\n "243" , 81 ,"0.0200","vodacom-cd"\r\n`);
      expect(parsed).to.deep.equal({
        ok: true,
        rows: [{ line: 2, row: { countryCallingCode: '243', networkPrefix: '81', price: 200, carrier: 'vodacom-cd' } }],
      });
    });
  });

  describe('wallets', () => {
    it('when wallets are opened and topped up, then the balance reports both', async () => {
      const id = await newMerchant('Funded');

      const opened = await openWallet(gateway, { merchantId: id, wallet: 'prepaid' });
      const reopened = await openWallet(gateway, { merchantId: id, wallet: 'prepaid' });
      succeeded(await openWallet(gateway, { merchantId: id, wallet: 'postpaid' }));
      const prepaid = await topUp(gateway, { merchantId: id, wallet: 'prepaid', amount: '10.5' });
      succeeded(await topUp(gateway, { merchantId: id, wallet: 'postpaid', amount: '5', reference: 'credit-line-1' }));
      const balance = await walletBalance(gateway, { merchantId: id });

      expect(jsonOf(opened)).to.deep.equal({ merchant_id: id, wallet: 'prepaid', opened: true });
      expect(jsonOf(reopened)).to.deep.equal({ merchant_id: id, wallet: 'prepaid', opened: false });
      expect(jsonOf(prepaid)).to.deep.equal({
        merchant_id: id,
        wallet: 'prepaid',
        amount: 10.5,
        reference: 'operator-cli',
        currency: 'USD',
        balance: { prepaid: 10.5, postpaid: 0, total: 10.5 },
      });
      expect(jsonOf(balance)).to.deep.equal({
        merchant_id: id,
        balance: 15.5,
        sms_wallet_balance: 10.5,
        postpaid_wallet_balance: 5,
        currency: 'USD',
        unit_price: 0.01,
        available_sms: 1550,
      });
      expect(succeeded(balance).text).to.include('Total:         15.5 USD');
    });

    it('when the amount is not money or the wallet is not open, then nothing is credited', async () => {
      const id = await newMerchant('Closed');

      expect(await topUp(gateway, { merchantId: id, wallet: 'prepaid', amount: '1.23456' })).to.deep.equal({
        ok: false,
        message: 'amount "1.23456" must be a positive amount with at most 4 decimals',
        details: [],
      });
      expect(await topUp(gateway, { merchantId: id, wallet: 'prepaid', amount: '5' })).to.deep.equal({
        ok: false,
        message: `the prepaid wallet of ${id} is not open (wallet open ${id} prepaid)`,
        details: [],
      });
      expect((await walletBalance(gateway, { merchantId: id })).ok).to.equal(false);
      expect(await gateway.persistence.journal.read(`wallet:${id}`, 0)).to.deep.equal([]);
    });

    it('when money was charged, refunded and settled, then the ledger shows each movement, its split and the running balances', async () => {
      const id = await newMerchant('Ledger');
      succeeded(await openWallet(gateway, { merchantId: id, wallet: 'prepaid' }));
      succeeded(await openWallet(gateway, { merchantId: id, wallet: 'postpaid' }));
      succeeded(await topUp(gateway, { merchantId: id, wallet: 'prepaid', amount: '10', reference: 'inv-1' }));
      succeeded(await topUp(gateway, { merchantId: id, wallet: 'postpaid', amount: '5' }));
      const wallet = gateway.router.wallet(id);
      await wallet.ask({
        type: 'charge',
        chargeId: 'chg-1',
        amount: mustParseMoney('12.5'),
        refundable: true,
        idempotency: null,
        followUp: null,
      });
      await wallet.ask({ type: 'refund', chargeId: 'chg-1', refundId: 'ref-1', amount: mustParseMoney('3') });
      await wallet.ask({ type: 'settle', chargeId: 'chg-1' });

      const ledger = await walletLedger(gateway, { merchantId: id });

      const movements = jsonOf(ledger).movements as Json[];
      expect(
        movements.map((m) => [m.movement, m.wallet, m.prepaid, m.postpaid, m.reference, m.charge_id, m.refund_id, m.balance]),
      ).to.deep.equal([
        ['wallet_opened', 'prepaid', 0, 0, null, null, null, { prepaid: 0, postpaid: 0, total: 0 }],
        ['wallet_opened', 'postpaid', 0, 0, null, null, null, { prepaid: 0, postpaid: 0, total: 0 }],
        ['topped_up', 'prepaid', 10, 0, 'inv-1', null, null, { prepaid: 10, postpaid: 0, total: 10 }],
        ['topped_up', 'postpaid', 0, 5, 'operator-cli', null, null, { prepaid: 10, postpaid: 5, total: 15 }],
        // prepaid first, then postpaid
        ['charged', null, -10, -2.5, null, 'chg-1', null, { prepaid: 0, postpaid: 2.5, total: 2.5 }],
        // a refund returns postpaid first
        ['refunded', null, 0.5, 2.5, null, 'chg-1', 'ref-1', { prepaid: 0.5, postpaid: 5, total: 5.5 }],
        ['charge_settled', null, 0, 0, null, 'chg-1', null, { prepaid: 0.5, postpaid: 5, total: 5.5 }],
      ]);
      expect(movements.every((m) => typeof m.at === 'string' && !Number.isNaN(Date.parse(m.at)))).to.equal(true);
      const text = succeeded(ledger).text.split('\n');
      expect(text[0]).to.equal(`Ledger of ${id} (USD)`);
      expect(text[1]).to.match(/^TIME +MOVEMENT +WALLET +PREPAID +POSTPAID +PREPAID BAL +POSTPAID BAL +TOTAL +REFERENCE$/);
      expect(text[6]).to.match(/^\S+Z +charged +-10 +-2\.5 +0 +2\.5 +2\.5 +chg-1$/);
      expect(text[7]).to.match(/^\S+Z +refunded +\+0\.5 +\+2\.5 +0\.5 +5 +5\.5 +chg-1 ref-1$/);
      const balance = jsonOf(await walletBalance(gateway, { merchantId: id }));
      expect([balance.sms_wallet_balance, balance.postpaid_wallet_balance]).to.deep.equal([0.5, 5]);
    });
  });

  describe('keys', () => {
    it('when a key goes through its life, then each command takes effect on authentication at once', async () => {
      const id = await newMerchant('Keyed');

      const created = await createKey(gateway, { merchantId: id });
      const { api_key: apiKey, key_id: keyId } = jsonOf(created) as { api_key: string; key_id: string };
      expect(succeeded(created).text).to.include(apiKey);
      expect(succeeded(created).notices).to.deep.equal(['Store it now: it is not shown again.']);
      expect(await gateway.useCases.apiKeys.authenticate(apiKey, 'status')).to.deep.equal({
        outcome: 'authenticated',
        merchantId: id,
        keyId,
      });

      const listed = await listKeys(gateway, { merchantId: id });
      const display = `sk_test_…${apiKey.slice(-4)}`;
      expect(listOf(listed).map((k) => [k.key_id, k.key, k.status, k.webhook_url, k.webhook_basic_auth_password_set])).to.deep.equal([
        [keyId, display, 'allowed', null, false],
      ]);
      expect(JSON.stringify(succeeded(listed).json)).not.to.include(apiKey);
      expect(succeeded(listed).text).to.include(display).and.not.include(apiKey);

      expect(jsonOf(await setKeyStatus(gateway, { keyId, status: 'suspended' }))).to.deep.equal({ key_id: keyId, status: 'suspended' });
      expect(await gateway.useCases.apiKeys.authenticate(apiKey, 'status')).to.deep.equal({ outcome: 'forbidden', status: 'suspended' });
      succeeded(await setKeyStatus(gateway, { keyId, status: 'allowed' }));

      const rotated = jsonOf(await rotateKey(gateway, { keyId })) as { api_key: string };
      expect(await gateway.useCases.apiKeys.authenticate(apiKey, 'status')).to.deep.equal({ outcome: 'unauthorized' });
      expect(await gateway.useCases.apiKeys.authenticate(rotated.api_key, 'status')).to.deep.equal({
        outcome: 'authenticated',
        merchantId: id,
        keyId,
      });

      succeeded(
        await setWebhook(gateway, { keyId, url: 'https://shop.example/hooks', username: 'hook-user', password: 'p4ss-w0rd-secret' }),
      );
      const withWebhook = await listKeys(gateway, { merchantId: id });
      expect(listOf(withWebhook)[0]).to.deep.include({
        key: `sk_test_…${rotated.api_key.slice(-4)}`,
        webhook_url: 'https://shop.example/hooks',
        webhook_basic_auth_username: 'hook-user',
        webhook_basic_auth_password_set: true,
      });
      expect(JSON.stringify(succeeded(withWebhook).json)).not.to.include('p4ss-w0rd-secret');
      expect(succeeded(withWebhook).text).to.include('hook-user (password set)').and.not.include('p4ss-w0rd-secret');

      const signing = jsonOf(await setSigning(gateway, { keyId, enabled: true })) as { signing: boolean; secret: string };
      expect(signing.secret).to.match(/^whsec_/);
      expect((await keysOf(id))[0]?.signing).to.equal(true);
      expect(JSON.stringify(succeeded(await listKeys(gateway, { merchantId: id })).json)).not.to.include(signing.secret);

      succeeded(await setWebhook(gateway, { keyId, clear: true }));
      expect((await keysOf(id))[0]).to.deep.include({ webhook_url: null, webhook_basic_auth_password_set: false });

      expect(jsonOf(await deleteKey(gateway, { keyId }))).to.deep.equal({ key_id: keyId, deleted: true });
      expect(await gateway.useCases.apiKeys.authenticate(rotated.api_key, 'status')).to.deep.equal({ outcome: 'unauthorized' });
      expect((await keysOf(id))[0]).to.deep.include({ deleted: true });
      expect(await rotateKey(gateway, { keyId })).to.deep.equal({ ok: false, message: `unknown or deleted key ${keyId}`, details: [] });
    });

    it('when a key is created with a status and an expiry, then both are recorded', async () => {
      const id = await newMerchant('Pending');

      const created = jsonOf(
        await createKey(gateway, { merchantId: id, status: 'pending_validation', expiresAt: '2099-01-01T00:00:00Z' }),
      ) as { api_key: string; key_id: string };

      expect(await gateway.useCases.apiKeys.authenticate(created.api_key, 'status')).to.deep.equal({
        outcome: 'forbidden',
        status: 'pending_validation',
      });
      expect((await keysOf(id))[0]).to.deep.include({ status: 'pending_validation', expires_at: '2099-01-01T00:00:00.000Z' });
    });

    it('when the input is invalid, then nothing changes and the reason is given', async () => {
      const id = await newMerchant('Strict');
      const { key_id: keyId } = jsonOf(await createKey(gateway, { merchantId: id })) as { key_id: string };

      expect((await createKey(gateway, { merchantId: id, status: 'open' })).ok).to.equal(false);
      expect(await createKey(gateway, { merchantId: id, expiresAt: 'next tuesday' })).to.deep.include({ ok: false });
      expect(await createKey(gateway, { merchantId: 'mer_nope' })).to.deep.equal({
        ok: false,
        message: 'unknown merchant mer_nope',
        details: [],
      });
      expect(await setKeyStatus(gateway, { keyId, status: 'revoked' })).to.deep.include({ ok: false, message: 'unknown status "revoked"' });
      expect(await setKeyStatus(gateway, { keyId: 'key_nope', status: 'locked' })).to.deep.include({
        ok: false,
        message: 'unknown or deleted key key_nope',
      });
      expect(await setWebhook(gateway, { keyId, url: 'http://shop.example/hooks' })).to.deep.include({ ok: false });
      expect(await setWebhook(gateway, { keyId, url: 'https://shop.example/hooks', password: 'alone' })).to.deep.include({
        ok: false,
        message: '--password needs --username',
      });
      expect(await keysOf(id)).to.have.length(1);
      expect((await keysOf(id))[0]).to.deep.include({ status: 'allowed', webhook_url: null });
    });
  });

  describe('command line', () => {
    const usageErrors: { argv: string[]; message: string }[] = [
      { argv: [], message: 'no command given' },
      { argv: ['merchant', 'list'], message: 'unknown command "merchant"' },
      { argv: ['merchants', 'delete'], message: 'unknown command "merchants delete"' },
      { argv: ['merchants', 'create'], message: '--name is required' },
      { argv: ['merchants', 'show'], message: 'expected <merchantId>, got none' },
      { argv: ['merchants', 'list', 'extra'], message: 'expected no arguments, got "extra"' },
      { argv: ['wallet', 'open', 'mer_1', 'credit'], message: 'the wallet must be prepaid or postpaid, not "credit"' },
      { argv: ['keys', 'signing', 'key_1', 'maybe'], message: 'signing must be on or off, not "maybe"' },
      { argv: ['keys', 'set-webhook', 'key_1'], message: 'give --url, or --clear' },
      { argv: ['keys', 'set-webhook', 'key_1', '--clear', '--url', 'https://x.example'], message: '--clear takes no other option' },
    ];
    for (const { argv, message } of usageErrors) {
      it(`when the command line is "${argv.join(' ')}", then it is a usage error: ${message}`, () => {
        expect(parseCommandLine(argv)).to.deep.include({ type: 'usage_error', message });
      });
    }

    it('when an option is unknown, then parseArgs names it', () => {
      const parsed = parseCommandLine(['merchants', 'list', '--colour']);
      expect(parsed.type).to.equal('usage_error');
      if (parsed.type === 'usage_error') expect(parsed.message).to.include("Unknown option '--colour'");
    });

    it('when help is asked, then every command is listed', () => {
      const help = parseCommandLine(['--help']);
      expect(help.type).to.equal('help');
      if (help.type !== 'help') return;
      const commands = [
        ...['merchants create', 'merchants show', 'merchants list', 'pricing import', 'pricing list', 'pricing set-default'],
        ...['wallet open', 'wallet top-up', 'wallet balance', 'wallet ledger'],
        ...['keys create', 'keys list', 'keys set-status', 'keys rotate', 'keys delete', 'keys set-webhook', 'keys signing'],
      ];
      for (const command of commands) {
        expect(help.text).to.match(new RegExp(`^  ${command}( |$)`, 'm'));
      }
      expect(parseCommandLine(['help'])).to.deep.equal(help);
    });

    it('when a command and --json are given, then the command is run with JSON output', () => {
      expect(parseCommandLine(['wallet', 'top-up', 'mer_1', 'prepaid', '10', '--reference', 'r-1', '--json'])).to.deep.include({
        type: 'run',
        name: 'wallet top-up',
        json: true,
      });
    });

    it('when the database cannot be opened, then the exit code is 2', async () => {
      const errors: string[] = [];
      const code = await runCli(['merchants', 'list'], {
        env: { NODE_ENV: 'test' },
        out: () => undefined,
        err: (text) => errors.push(text),
        openGateway: () => Promise.reject(new Error('database down')),
      });
      expect(code).to.equal(2);
      expect(errors.join('')).to.include('unexpected failure: Error: database down');
    });

    it('when the real CLI lists merchants as JSON, then it exits 0 with every merchant of the database', async () => {
      const id = await newMerchant('Spawned shop');
      const expected = (await gateway.persistence.directory.merchants()).map((m) => m.id);

      const { code, stdout, stderr } = await runCliProcess(['merchants', 'list', '--json'], {
        DATABASE_URL: url,
        GATEWAY_MODE: 'server',
        NODE_ENV: 'test',
      });

      expect({ code, stderr }).to.deep.equal({ code: 0, stderr: '' });
      const listed = JSON.parse(stdout) as { id: string; name: string }[];
      expect(listed.map((m) => m.id)).to.deep.equal(expected);
      expect(listed.find((m) => m.id === id)?.name).to.equal('Spawned shop');
    });

    it('when the real CLI gets a usage error, then it exits 1 with the message on stderr', async () => {
      const { code, stdout, stderr } = await runCliProcess(['merchants', 'create', '--timezone', 'Africa/Kinshasa'], {
        DATABASE_URL: url,
        GATEWAY_MODE: 'server',
        NODE_ENV: 'test',
      });

      expect({ code, stdout }).to.deep.equal({ code: 1, stdout: '' });
      expect(stderr).to.include('error: --name is required');
    });
  });
});
