import { expect } from 'chai';
import sinon from 'sinon';
import smpp from 'smpp';
import {
  captureRawPdus,
  keepGsmCoders,
  messageBodyOf,
  readMessageBody,
  TLV,
  tlvNumber,
  tlvString,
} from '../../../../src/carriers/smpp/smpp-pdu.js';
import { readInbound } from '../../../../src/carriers/smpp/smpp-receipts.js';

describe('SMPP raw PDU bytes', () => {
  it("decodes a message with the package's GSM table looked up once, not listed again per message", () => {
    keepGsmCoders();
    keepGsmCoders();
    const wire = new smpp.PDU('deliver_sm', {
      esm_class: 0x04,
      data_coding: 0,
      short_message: Buffer.from('stat:DELIVRD', 'latin1'),
    }).toBuffer();
    expect((new smpp.PDU(wire).short_message as { message: string }).message).to.equal('stat:DELIVRD');
    const listing = sinon.spy(Object, 'keys');
    try {
      const decoded = new smpp.PDU(wire);
      expect((decoded.short_message as { message: string }).message).to.equal('stat:DELIVRD');
      expect(smpp.gsmCoder.decode(Buffer.from([0x41, 0x1b, 0x3c]), 0)).to.equal('A[');
      expect(listing.called).to.equal(false);
    } finally {
      listing.restore();
    }
    // every national table keeps its own characters
    expect(smpp.gsmCoder.getCoder(0x01)).to.not.equal(smpp.gsmCoder.getCoder(0x00));
    expect(smpp.gsmCoder.getCoder(0x01)).to.equal(smpp.gsmCoder.getCoder(0x01));
  });

  it('reads short_message bytes the package would turn into other characters', () => {
    captureRawPdus();
    const text = Buffer.from('id:a_b@c stat:DELIVRD err:000', 'latin1');
    const wire = new smpp.PDU('deliver_sm', {
      esm_class: 0x04,
      data_coding: 0,
      source_addr: '243',
      short_message: text,
      sequence_number: 7,
    }).toBuffer();
    const parsed = new smpp.PDU(wire);
    // the package's own decoding loses '_' and '@'
    expect((parsed.short_message as { message: string }).message).to.not.equal(text.toString('latin1'));
    const body = messageBodyOf(parsed)!;
    expect(body.shortMessage).to.deep.equal(text);
    expect(body.esmClass).to.equal(0x04);
    const inbound = readInbound(body, { from: '243', to: '' }, 0);
    expect(inbound.kind === 'receipt' && inbound.report.reference).to.equal('a_b@c');
  });

  it('reads a data_sm receipt from its TLVs', () => {
    const wire = new smpp.PDU('data_sm', {
      esm_class: 0x04,
      data_coding: 0,
      receipted_message_id: 'ABC123',
      message_state: 5,
      network_error_code: Buffer.from([1, 0, 9]),
      sequence_number: 3,
    }).toBuffer();
    const body = readMessageBody(wire)!;
    expect(body.shortMessage.length).to.equal(0);
    expect(tlvString(body, TLV.receipted_message_id)).to.equal('ABC123');
    expect(tlvNumber(body, TLV.message_state)).to.equal(5);
    expect(readInbound(body, { from: '', to: '' }, 42)).to.deep.equal({
      kind: 'receipt',
      report: { reference: 'ABC123', state: 'undelivered', carrierError: '1:9', occurredAt: 42, carrierStatus: 'smpp:UNDELIV err:1:9' },
    });
  });

  it('reads SAR TLVs and message_payload of a submit_sm, and nothing of other commands', () => {
    const wire = new smpp.PDU('submit_sm', {
      destination_addr: '243810000001',
      data_coding: 8,
      short_message: Buffer.from([0, 0x41]),
      sar_msg_ref_num: 300,
      sar_total_segments: 3,
      sar_segment_seqnum: 2,
      message_payload: Buffer.from([1, 2, 3]),
      sequence_number: 1,
    }).toBuffer();
    const body = readMessageBody(wire)!;
    expect(body.dataCoding).to.equal(8);
    expect([...body.shortMessage]).to.deep.equal([0, 0x41]);
    expect(tlvNumber(body, TLV.sar_msg_ref_num)).to.equal(300);
    expect(tlvNumber(body, TLV.sar_total_segments)).to.equal(3);
    expect(tlvNumber(body, TLV.sar_segment_seqnum)).to.equal(2);
    expect([...body.tlvs.get(TLV.message_payload)!]).to.deep.equal([1, 2, 3]);
    expect(readMessageBody(new smpp.PDU('enquire_link', { sequence_number: 2 }).toBuffer())).to.equal(null);
    expect(() => readMessageBody(wire.subarray(0, 30))).to.throw();
  });
});
