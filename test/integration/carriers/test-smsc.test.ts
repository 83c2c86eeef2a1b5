import { expect } from 'chai';
import smpp, { type PDU, type Session } from 'smpp';
import { decodeGsmSeptets, startTestSmsc, type TestSmsc } from '../../helpers/test-smsc.js';

/** The test message centre itself, driven by a bare `smpp` client. */

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function connect(port: number): Promise<Session> {
  return new Promise((resolve, reject) => {
    const session = smpp.connect({ host: '127.0.0.1', port }, () => {
      resolve(session);
    });
    session.on('error', reject);
  });
}

function request(session: Session, pdu: PDU): Promise<PDU> {
  return new Promise((resolve) => {
    session.send(pdu, resolve);
  });
}

const bind = (session: Session, password = 'secret'): Promise<PDU> =>
  request(session, new smpp.PDU('bind_transceiver', { system_id: 'smsc', password }));

const gsm = (text: string): Buffer => Buffer.from(Array.from(text, (c) => (c === '@' ? 0 : c.charCodeAt(0))));

describe('test SMSC', function () {
  this.timeout(20_000);
  let smsc: TestSmsc;
  let sessions: Session[] = [];

  afterEach(async () => {
    for (const session of sessions) session.destroy();
    sessions = [];
    await smsc.stop();
  });

  async function client(): Promise<Session> {
    const session = await connect(smsc.port);
    sessions.push(session);
    return session;
  }

  it('binds its accounts only, and refuses binds on demand', async () => {
    smsc = await startTestSmsc();
    const wrong = await bind(await client(), 'nope');
    expect(wrong.command_status).to.equal(0x0e);
    const right = await bind(await client());
    expect(right.command_status).to.equal(0);
    expect(smsc.binds()).to.equal(1);
    smsc.refuseBinds(true);
    const refused = await bind(await client());
    expect(refused.command_status).to.equal(0x0d);
    expect(smsc.binds()).to.equal(1);
  });

  it('records parts, reassembles a UDH message and sends a receipt it resends until answered', async () => {
    smsc = await startTestSmsc({
      receiptRetryMs: 200,
      outcomeFor: (_d, part) => (part === 0 ? { stat: 'DELIVRD' } : { stat: 'UNDELIV', err: '012' }),
    });
    const session = await client();
    await bind(session);
    const receipts: PDU[] = [];
    let answer = false;
    session.on('deliver_sm', (pdu) => {
      receipts.push(pdu);
      if (answer) session.send(pdu.response());
    });
    const parts = ['Hello @', 'world'];
    const responses: PDU[] = [];
    for (const [i, part] of parts.entries()) {
      const udh = Buffer.from([5, 0, 3, 42, 2, i + 1]);
      responses.push(
        await request(
          session,
          new smpp.PDU('submit_sm', {
            source_addr_ton: 5,
            source_addr: 'ACME',
            dest_addr_ton: 1,
            dest_addr_npi: 1,
            destination_addr: '243810000001',
            esm_class: 0x40,
            registered_delivery: 1,
            data_coding: 0,
            short_message: Buffer.concat([udh, gsm(part)]),
          }),
        ),
      );
    }
    expect(responses.map((r) => r.command_status)).to.deep.equal([0, 0]);
    expect(smsc.submits).to.have.length(2);
    expect(smsc.submits[0]!.shortMessage.subarray(6)).to.deep.equal(gsm('Hello @'));
    expect(smsc.submits[0]!.concatenation).to.deep.include({ method: 'udh', reference: 42, total: 2, seq: 1 });
    expect(smsc.messagesTo('243810000001')).to.deep.equal(['Hello @world']);
    // two receipts arrive, unanswered; they come again
    await until(() => receipts.length >= 4, 'receipts sent again');
    expect(smsc.unansweredReceipts()).to.equal(2);
    answer = true;
    await until(() => smsc.answeredReceipts() === 2, 'receipts answered');
    expect(smsc.unansweredReceipts()).to.equal(0);
    const first = receipts.find((r) => r.receipted_message_id === responses[0]!.message_id)!;
    expect(first.esm_class).to.equal(0x04);
    expect(first.message_state).to.equal(2);
    const second = receipts.find((r) => r.receipted_message_id === responses[1]!.message_id)!;
    expect(second.message_state).to.equal(5);
    const text = (second.short_message as { message: string }).message;
    expect(text).to.match(
      new RegExp(`^id:${responses[1]!.message_id!} sub:001 dlvrd:000 submit date:\\d{10} done date:\\d{10} stat:UNDELIV err:012 text:`),
    );
  });

  it('throttles beyond its window', async () => {
    smsc = await startTestSmsc({ window: 1 });
    const session = await client();
    await bind(session);
    smsc.delayResponses(200);
    const submit = (): Promise<PDU> =>
      request(session, new smpp.PDU('submit_sm', { destination_addr: '1', data_coding: 0, short_message: gsm('x') }));
    const statuses = (await Promise.all([submit(), submit(), submit()])).map((r) => r.command_status);
    expect(statuses.filter((s) => s === 0x58)).to.have.length(2);
    expect(statuses.filter((s) => s === 0)).to.have.length(1);
    expect(smsc.throttled()).to.equal(2);
  });

  it('sends a mobile-originated message and decodes GSM extension characters', async () => {
    smsc = await startTestSmsc();
    const session = await client();
    await bind(session);
    let received: PDU | null = null;
    session.on('deliver_sm', (pdu) => {
      received = pdu;
      session.send(pdu.response());
    });
    const status = await smsc.mobileOriginated('243810000002', 'STOP');
    expect(status).to.equal(0);
    expect(received).to.not.equal(null);
    expect(received!.esm_class).to.equal(0);
    expect(decodeGsmSeptets(Buffer.from([0x1b, 0x65, 0x1b, 0x28, 0x00, 0x11]))).to.equal('€{@_');
  });
});
