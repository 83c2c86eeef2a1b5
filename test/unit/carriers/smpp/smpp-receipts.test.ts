import { expect } from 'chai';
import {
  classifyStatus,
  commandStatusName,
  isReceipt,
  parseReceiptDate,
  parseReceiptText,
  readInbound,
  stateFromMessageState,
  stateFromStat,
} from '../../../../src/carriers/smpp/smpp-receipts.js';
import { TLV, type MessageBody } from '../../../../src/carriers/smpp/smpp-pdu.js';
import { encodeGsm7, encodeUcs2 } from '../../../../src/carriers/smpp/smpp-encoding.js';
import { FINAL_PART_STATES } from '../../../../src/carriers/connector/carrier-link.js';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const ADDRESSES = { from: '243810000001', to: 'ACME' };

function body(esmClass: number, text: string, tlvs: [number, Buffer][] = [], dataCoding = 0): MessageBody {
  return { esmClass, dataCoding, shortMessage: Buffer.from(text, 'latin1'), tlvs: new Map(tlvs) };
}

const receiptText = (id: string, stat: string, err = '000', done = '2601020304') =>
  `id:${id} sub:001 dlvrd:000 submit date:2601020300 done date:${done} stat:${stat} err:${err} text:Hello`;

describe('SMPP receipts', () => {
  const STATS: [string, number, string][] = [
    ['DELIVRD', 2, 'delivered'],
    ['UNDELIV', 5, 'undelivered'],
    ['EXPIRED', 3, 'expired'],
    ['REJECTD', 8, 'rejected'],
    ['UNKNOWN', 7, 'unknown'],
    ['DELETED', 4, 'deleted'],
    ['ACCEPTD', 6, 'enroute'],
    ['ENROUTE', 1, 'enroute'],
  ];

  for (const [stat, messageState, state] of STATS) {
    it(`maps ${stat} and message_state ${messageState} to ${state}`, () => {
      expect(stateFromStat(stat)).to.equal(state);
      expect(stateFromMessageState(messageState)).to.equal(state);
      const fromText = readInbound(body(0x04, receiptText('abc_1@', stat)), ADDRESSES, NOW);
      expect(fromText).to.deep.equal({
        kind: 'receipt',
        report: { reference: 'abc_1@', state, carrierError: null, occurredAt: NOW, carrierStatus: `smpp:${stat}` },
      });
      const fromTlv = readInbound(
        body(0x04, '', [
          [TLV.receipted_message_id, Buffer.from('abc_1@\0')],
          [TLV.message_state, Buffer.from([messageState])],
        ]),
        ADDRESSES,
        NOW,
      );
      expect(fromTlv).to.deep.equal({
        kind: 'receipt',
        report: { reference: 'abc_1@', state, carrierError: null, occurredAt: NOW, carrierStatus: `smpp:${stat}` },
      });
    });
  }

  it('dates a report by its done date: to the minute, at the latest moment of that minute not after now; to the second, as given', () => {
    const text = (done: string): Buffer =>
      Buffer.from(`id:X9 sub:001 dlvrd:001 submit date:2601020300 done date:${done} stat:DELIVRD err:000 text:`, 'latin1');
    const at = (done: string, now: number): number | null => {
      const inbound = readInbound(body(0x04, text(done).toString('latin1')), ADDRESSES, now);
      return inbound.kind === 'receipt' ? inbound.report.occurredAt : null;
    };
    // reported within its minute: now (a delivery is never dated before the submission it follows)
    expect(at('2601020304', NOW)).to.equal(NOW);
    // reported minutes later: the end of the minute it names
    expect(at('2601020304', NOW + 10 * 60_000)).to.equal(Date.UTC(2026, 0, 2, 3, 4, 59, 999));
    // with seconds: exactly as given
    expect(at('260102030402', NOW + 10 * 60_000)).to.equal(Date.UTC(2026, 0, 2, 3, 4, 2));
  });

  it('treats ACCEPTD and ENROUTE as not final (both enroute: the recipient stays sent)', () => {
    expect(stateFromStat('ACCEPTD')).to.equal('enroute');
    expect(FINAL_PART_STATES.has('accepted')).to.be.false;
    expect(FINAL_PART_STATES.has('enroute')).to.be.false;
  });

  it('prefers the TLVs to the text, and takes the error from err:', () => {
    const inbound = readInbound(
      body(0x04, receiptText('text-id', 'DELIVRD', '012'), [
        [TLV.receipted_message_id, Buffer.from('tlv-id\0')],
        [TLV.message_state, Buffer.from([5])],
      ]),
      ADDRESSES,
      NOW,
    );
    expect(inbound).to.deep.equal({
      kind: 'receipt',
      report: { reference: 'tlv-id', state: 'undelivered', carrierError: '012', occurredAt: NOW, carrierStatus: 'smpp:UNDELIV err:012' },
    });
  });

  it('takes the error from network_error_code when the text has none', () => {
    const inbound = readInbound(
      body(0x04, '', [
        [TLV.receipted_message_id, Buffer.from('X1\0')],
        [TLV.message_state, Buffer.from([5])],
        [TLV.network_error_code, Buffer.from([3, 0x00, 0x22])],
      ]),
      ADDRESSES,
      NOW,
    );
    expect(inbound.kind === 'receipt' && inbound.report.carrierError).to.equal('3:34');
  });

  it('reads the receipt bit from esm_class', () => {
    expect(isReceipt(0x04)).to.be.true;
    expect(isReceipt(0x44)).to.be.true; // with UDHI
    expect(isReceipt(0x00)).to.be.false;
    expect(isReceipt(0x08)).to.be.false; // delivery acknowledgement
    expect(isReceipt(0x40)).to.be.false;
  });

  it('reads a mobile-originated message (GSM and UCS-2)', () => {
    expect(readInbound({ esmClass: 0, dataCoding: 0, shortMessage: encodeGsm7('STOP €'), tlvs: new Map() }, ADDRESSES, NOW)).to.deep.equal({
      kind: 'mobile-originated',
      from: '243810000001',
      to: 'ACME',
      text: 'STOP €',
    });
    const ucs = readInbound({ esmClass: 0, dataCoding: 8, shortMessage: encodeUcs2('стоп'), tlvs: new Map() }, ADDRESSES, NOW);
    expect(ucs.kind === 'mobile-originated' && ucs.text).to.equal('стоп');
  });

  it('reports a receipt without id or state as unreadable', () => {
    expect(readInbound(body(0x04, 'stat:DELIVRD'), ADDRESSES, NOW).kind).to.equal('unreadable-receipt');
    expect(readInbound(body(0x04, 'id:1 stat:WHATEVER'), ADDRESSES, NOW).kind).to.equal('unreadable-receipt');
  });

  it('parses the standard text, with seconds in the dates and case-insensitive keys', () => {
    expect(
      parseReceiptText('ID:77 SUB:001 DLVRD:001 SUBMIT DATE:2601020300 DONE DATE:260102030455 STAT:DELIVRD ERR:000 TEXT:a b'),
    ).to.deep.equal({
      id: '77',
      sub: '001',
      dlvrd: '001',
      submitDate: '2601020300',
      doneDate: '260102030455',
      stat: 'DELIVRD',
      err: '000',
      text: 'a b',
    });
    expect(parseReceiptDate('260102030455')).to.equal(Date.UTC(2026, 0, 2, 3, 4, 55));
    expect(parseReceiptDate('2613020304')).to.equal(null);
    expect(parseReceiptDate('2602300304')).to.equal(null); // 30 February
  });

  it('classifies submit_sm_resp statuses', () => {
    expect(classifyStatus(0)).to.equal('ok');
    expect(classifyStatus(0x58)).to.equal('throttle');
    expect(classifyStatus(0x14)).to.equal('throttle');
    expect(classifyStatus(0x08)).to.equal('retry');
    expect(classifyStatus(0x64)).to.equal('retry');
    expect(classifyStatus(0x0b)).to.equal('permanent');
    expect(classifyStatus(0x45)).to.equal('permanent');
    expect(classifyStatus(0x4242)).to.equal('permanent');
    expect(commandStatusName(0x0b)).to.equal('ESME_RINVDSTADR');
    expect(commandStatusName(0x4242)).to.equal('0x00004242');
  });
});
