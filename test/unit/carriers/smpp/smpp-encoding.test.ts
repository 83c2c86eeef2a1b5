import { expect } from 'chai';
import fc from 'fast-check';
import { analyseMessage } from '../../../../src/messaging/segments.js';
import {
  createReferenceCounter,
  decodeGsm7,
  decodeText,
  decodeUcs2,
  encodeGsm7,
  encodeMessage,
  encodeUcs2,
  EncodingError,
  type LongMessageMethod,
} from '../../../../src/carriers/smpp/smpp-encoding.js';
import { decodeGsmSeptets } from '../../../helpers/test-smsc.js';

const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENSION = '\f^{}\\[~]|€';
const gsmChar = fc.constantFrom(...Array.from(GSM_BASIC + GSM_EXTENSION));
const anyChar = fc.oneof(gsmChar, fc.constantFrom('ж', 'é', '😀', '中', 'ü', '€', '\u{1F680}', 'ß'));
const gsmText = fc.array(gsmChar, { minLength: 1, maxLength: 600 }).map((chars) => chars.join(''));
const anyText = fc.array(anyChar, { minLength: 1, maxLength: 600 }).map((chars) => chars.join(''));

describe('SMPP encoding', () => {
  it('encodes the GSM basic alphabet one octet per septet, in table order', () => {
    const bytes = encodeGsm7('@£$A a\n_');
    expect([...bytes]).to.deep.equal([0x00, 0x01, 0x02, 0x41, 0x20, 0x61, 0x0a, 0x11]);
  });

  it('encodes extension characters as escape + code', () => {
    expect([...encodeGsm7('€{}[]~|^\\\f')]).to.deep.equal([
      0x1b, 0x65, 0x1b, 0x28, 0x1b, 0x29, 0x1b, 0x3c, 0x1b, 0x3e, 0x1b, 0x3d, 0x1b, 0x40, 0x1b, 0x14, 0x1b, 0x2f, 0x1b, 0x0a,
    ]);
  });

  it('refuses a character outside GSM 03.38 in GSM-7', () => {
    expect(() => encodeGsm7('жaba')).to.throw(EncodingError, /U\+0436/);
  });

  it('encodes UCS-2 as UTF-16BE, surrogate pairs included', () => {
    expect([...encodeUcs2('Aж😀')]).to.deep.equal([0x00, 0x41, 0x04, 0x36, 0xd8, 0x3d, 0xde, 0x00]);
    expect(decodeUcs2(encodeUcs2('Aж😀'))).to.equal('Aж😀');
  });

  it('round-trips GSM text, and agrees with an independent decoder', () => {
    fc.assert(
      fc.property(gsmText, (text) => {
        const bytes = encodeGsm7(text);
        expect(decodeGsm7(bytes)).to.equal(text);
        expect(decodeGsmSeptets(bytes)).to.equal(text);
        expect(decodeText(bytes, 0)).to.equal(text);
      }),
    );
  });

  it('gives exactly the segments the gateway counted, whatever the method', () => {
    fc.assert(
      fc.property(
        anyText,
        fc.constantFrom<LongMessageMethod>('udh', 'sar'),
        fc.integer({ min: 0, max: 255 }),
        (text, method, reference) => {
          const analysis = analyseMessage(text);
          const encoded = encodeMessage(text, analysis.encoding, method, reference);
          expect(encoded.segments).to.equal(analysis.segments);
          expect(encoded.parts).to.have.length(analysis.segments);
          expect(encoded.dataCoding).to.equal(analysis.encoding === 'GSM-7' ? 0 : 8);
          const texts = encoded.parts.map((part) => {
            const userData = part.esmClass & 0x40 ? part.shortMessage.subarray(6) : part.shortMessage;
            return decodeText(userData, encoded.dataCoding);
          });
          expect(texts).to.deep.equal(analysis.parts);
          for (const part of encoded.parts) expect(part.shortMessage.length).to.be.at.most(160);
        },
      ),
    );
  });

  it('concatenates with a UDH 05 00 03 ref total seq and the UDHI bit', () => {
    const text = 'x'.repeat(200);
    const encoded = encodeMessage(text, 'GSM-7', 'udh', 0x1ab);
    expect(encoded.parts).to.have.length(2);
    expect([...encoded.parts[0]!.shortMessage.subarray(0, 6)]).to.deep.equal([5, 0, 3, 0xab, 2, 1]);
    expect([...encoded.parts[1]!.shortMessage.subarray(0, 6)]).to.deep.equal([5, 0, 3, 0xab, 2, 2]);
    expect(encoded.parts.every((p) => p.esmClass === 0x40 && p.sar === null)).to.be.true;
    expect(encoded.parts[0]!.shortMessage.length).to.equal(6 + 153);
  });

  it('concatenates with SAR TLVs and no UDH', () => {
    const encoded = encodeMessage('ж'.repeat(100), 'UCS-2', 'sar', 7);
    expect(encoded.parts.map((p) => p.sar)).to.deep.equal([
      { reference: 7, total: 2, seq: 1 },
      { reference: 7, total: 2, seq: 2 },
    ]);
    expect(encoded.parts.every((p) => p.esmClass === 0)).to.be.true;
    expect(encoded.parts[0]!.shortMessage.length).to.equal(134);
  });

  it('puts the whole text in message_payload with the payload method', () => {
    const text = 'Hello € world '.repeat(20);
    const encoded = encodeMessage(text, 'GSM-7', 'payload', 1);
    expect(encoded.parts).to.have.length(1);
    expect(encoded.parts[0]!.shortMessage.length).to.equal(0);
    expect(decodeGsm7(encoded.parts[0]!.messagePayload!)).to.equal(text);
    expect(encoded.segments).to.equal(analyseMessage(text).segments);
  });

  it('sends a single segment without concatenation', () => {
    const encoded = encodeMessage('Your code is 1234', 'GSM-7', 'udh', 9);
    expect(encoded.parts).to.deep.equal([{ shortMessage: encodeGsm7('Your code is 1234'), esmClass: 0, sar: null, messagePayload: null }]);
  });

  it('refuses a text whose encoding is not the one the job states', () => {
    expect(() => encodeMessage('жж', 'GSM-7', 'udh', 0)).to.throw(EncodingError);
    expect(() => encodeMessage('plain', 'UCS-2', 'udh', 0)).to.throw(EncodingError);
  });

  it('rotates references 0–255', () => {
    const next = createReferenceCounter(254);
    expect([next(), next(), next(), next()]).to.deep.equal([254, 255, 0, 1]);
  });
});
