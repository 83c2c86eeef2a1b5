import { expect } from 'chai';
import fc from 'fast-check';
import {
  SEGMENT_CAPACITY,
  analyseMessage,
  countCharacters,
  detectEncoding,
  isGsmCharacter,
  measure,
  type Encoding,
} from '../../../src/messaging/segments.js';

// GSM 03.38 basic table written out independently of the module, in code order 0x00–0x7F, escape (0x1B) left out.
const GSM_BASIC_TABLE = [
  '@',
  '£',
  '$',
  '¥',
  'è',
  'é',
  'ù',
  'ì',
  'ò',
  'Ç',
  '\n',
  'Ø',
  'ø',
  '\r',
  'Å',
  'å',
  'Δ',
  '_',
  'Φ',
  'Γ',
  'Λ',
  'Ω',
  'Π',
  'Ψ',
  'Σ',
  'Θ',
  'Ξ',
  /* 0x1B escape */ 'Æ',
  'æ',
  'ß',
  'É',
  ' ',
  '!',
  '"',
  '#',
  '¤',
  '%',
  '&',
  "'",
  '(',
  ')',
  '*',
  '+',
  ',',
  '-',
  '.',
  '/',
  '0',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  '8',
  '9',
  ':',
  ';',
  '<',
  '=',
  '>',
  '?',
  '¡',
  'A',
  'B',
  'C',
  'D',
  'E',
  'F',
  'G',
  'H',
  'I',
  'J',
  'K',
  'L',
  'M',
  'N',
  'O',
  'P',
  'Q',
  'R',
  'S',
  'T',
  'U',
  'V',
  'W',
  'X',
  'Y',
  'Z',
  'Ä',
  'Ö',
  'Ñ',
  'Ü',
  '§',
  '¿',
  'a',
  'b',
  'c',
  'd',
  'e',
  'f',
  'g',
  'h',
  'i',
  'j',
  'k',
  'l',
  'm',
  'n',
  'o',
  'p',
  'q',
  'r',
  's',
  't',
  'u',
  'v',
  'w',
  'x',
  'y',
  'z',
  'ä',
  'ö',
  'ñ',
  'ü',
  'à',
];
const GSM_EXTENSION_TABLE = ['\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'];

const GSM_ONE = 'a';
const UCS_BMP = 'ж'; // Cyrillic: outside GSM, one UTF-16 unit
const EMOJI = '😀'; // U+1F600: outside the BMP, two UTF-16 units (a surrogate pair)

/** The contract's formula: 1 if length <= single, else ceil(length / concatenated). */
function contractSegments(length: number, encoding: Encoding): number {
  const { single, concatenated } = SEGMENT_CAPACITY[encoding];
  return length <= single ? 1 : Math.ceil(length / concatenated);
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

describe('segments', () => {
  describe('capacities', () => {
    it('when the capacities are read, then they are the contract table: GSM 160/153, UCS-2 70/67', () => {
      expect(SEGMENT_CAPACITY).to.deep.equal({
        'GSM-7': { single: 160, concatenated: 153 },
        'UCS-2': { single: 70, concatenated: 67 },
      });
    });
  });

  describe('GSM 03.38 alphabet', () => {
    it('when each of the 127 basic-table characters is checked, then it is GSM and counts 1 septet', () => {
      expect(GSM_BASIC_TABLE).to.have.length(127);
      for (const char of GSM_BASIC_TABLE) {
        expect(isGsmCharacter(char), `basic ${JSON.stringify(char)}`).to.equal(true);
        expect(measure(char, 'GSM-7'), `basic ${JSON.stringify(char)}`).to.equal(1);
      }
    });

    it('when the whole basic table is one message, then it stays GSM-7 with 127 septets in 1 segment', () => {
      const analysis = analyseMessage(GSM_BASIC_TABLE.join(''));
      expect(analysis).to.deep.include({ encoding: 'GSM-7', characters: 127, length: 127, segments: 1 });
    });

    for (const char of GSM_EXTENSION_TABLE) {
      it(`when the extension character ${JSON.stringify(char)} is sent, then it counts 2 septets and stays GSM-7`, () => {
        const analysis = analyseMessage(`ab${char}`);
        expect(isGsmCharacter(char)).to.equal(true);
        expect(analysis).to.deep.equal({ encoding: 'GSM-7', characters: 3, length: 4, segments: 1, parts: [`ab${char}`] });
      });
    }

    it('when 80 extension characters are sent, then they fill exactly 160 septets; one more septet needs 2 segments', () => {
      expect(analyseMessage('€'.repeat(80))).to.deep.include({ encoding: 'GSM-7', characters: 80, length: 160, segments: 1 });
      expect(analyseMessage('€'.repeat(80) + GSM_ONE)).to.deep.include({ encoding: 'GSM-7', characters: 81, length: 161, segments: 2 });
    });

    it("when the message holds 'Ç' (0x09 in the standard), then it is GSM-7", () => {
      expect(isGsmCharacter('Ç')).to.equal(true);
      expect(analyseMessage('Ça va')).to.deep.equal({ encoding: 'GSM-7', characters: 5, length: 5, segments: 1, parts: ['Ça va'] });
    });

    it("when the message holds lower-case 'ç', then the whole message is UCS-2", () => {
      expect(isGsmCharacter('ç')).to.equal(false);
      expect(analyseMessage('ça va')).to.deep.equal({ encoding: 'UCS-2', characters: 5, length: 5, segments: 1, parts: ['ça va'] });
    });

    const nonGsm: readonly (readonly [string, string])[] = [
      ['an emoji', EMOJI],
      ["Polish 'ł'", 'ł'],
      ['Cyrillic', UCS_BMP],
      ["acute 'á'", 'á'],
      ["capital grave 'È'", 'È'],
      ['a backtick', '`'],
      ['a tab', '\t'],
      ['a lone escape 0x1B', '\u001b'],
    ];
    for (const [label, char] of nonGsm) {
      it(`when a GSM message gains a single non-GSM character (${label}), then the whole message flips to UCS-2`, () => {
        const base = 'Hello {world} €5';
        expect(detectEncoding(base)).to.equal('GSM-7');
        const analysis = analyseMessage(base + char);
        expect(isGsmCharacter(char)).to.equal(false);
        expect(analysis.encoding).to.equal('UCS-2');
        // In UCS-2 extension characters count 1 unit like any BMP character.
        expect(analysis.length).to.equal(base.length + char.length);
        expect(analysis.characters).to.equal(17);
      });
    }
  });

  describe('lengths and characters', () => {
    it('when an emoji (outside the BMP) is sent, then it counts 2 UTF-16 units but 1 character', () => {
      expect(analyseMessage(EMOJI)).to.deep.equal({ encoding: 'UCS-2', characters: 1, length: 2, segments: 1, parts: [EMOJI] });
      expect(measure(EMOJI, 'UCS-2')).to.equal(2);
    });

    it('when 35 emoji are sent, then they fill exactly 70 units in 1 segment; 36 emoji take 2 segments', () => {
      expect(analyseMessage(EMOJI.repeat(35))).to.deep.include({ characters: 35, length: 70, segments: 1 });
      const over = analyseMessage(EMOJI.repeat(36));
      expect(over).to.deep.include({ encoding: 'UCS-2', characters: 36, length: 72, segments: 2 });
      expect(over.parts).to.deep.equal([EMOJI.repeat(33), EMOJI.repeat(3)]);
    });

    it('when characters are counted, then they are Unicode code points, not septets or UTF-16 units', () => {
      expect(analyseMessage('a€b').characters).to.equal(3);
      expect(analyseMessage('a€b').length).to.equal(4);
      expect(analyseMessage(`${EMOJI}${EMOJI}ж`)).to.deep.include({ characters: 3, length: 5 });
      expect(countCharacters(`${EMOJI}${EMOJI}ж`)).to.equal(3);
      expect(countCharacters('a€b')).to.equal(3);
      expect(countCharacters('')).to.equal(0);
    });

    it('when a message mixes both tables, then measure counts 1 per basic and 2 per extension septet', () => {
      expect(measure('a[b]c', 'GSM-7')).to.equal(7);
      expect(measure('a[b]c', 'UCS-2')).to.equal(5);
      expect(measure(`ж${EMOJI}`, 'UCS-2')).to.equal(3);
    });
  });

  describe('segment limits (each at -1, exact, +1)', () => {
    const limits: readonly {
      readonly label: string;
      readonly char: string;
      readonly encoding: Encoding;
      readonly count: number;
      readonly segments: number;
      readonly partLengths: readonly number[];
    }[] = [
      { label: 'GSM 159 septets', char: GSM_ONE, encoding: 'GSM-7', count: 159, segments: 1, partLengths: [159] },
      { label: 'GSM 160 septets', char: GSM_ONE, encoding: 'GSM-7', count: 160, segments: 1, partLengths: [160] },
      { label: 'GSM 161 septets', char: GSM_ONE, encoding: 'GSM-7', count: 161, segments: 2, partLengths: [153, 8] },
      { label: 'GSM 305 septets', char: GSM_ONE, encoding: 'GSM-7', count: 305, segments: 2, partLengths: [153, 152] },
      { label: 'GSM 306 septets', char: GSM_ONE, encoding: 'GSM-7', count: 306, segments: 2, partLengths: [153, 153] },
      { label: 'GSM 307 septets', char: GSM_ONE, encoding: 'GSM-7', count: 307, segments: 3, partLengths: [153, 153, 1] },
      { label: 'UCS-2 69 units', char: UCS_BMP, encoding: 'UCS-2', count: 69, segments: 1, partLengths: [69] },
      { label: 'UCS-2 70 units', char: UCS_BMP, encoding: 'UCS-2', count: 70, segments: 1, partLengths: [70] },
      { label: 'UCS-2 71 units', char: UCS_BMP, encoding: 'UCS-2', count: 71, segments: 2, partLengths: [67, 4] },
      { label: 'UCS-2 133 units', char: UCS_BMP, encoding: 'UCS-2', count: 133, segments: 2, partLengths: [67, 66] },
      { label: 'UCS-2 134 units', char: UCS_BMP, encoding: 'UCS-2', count: 134, segments: 2, partLengths: [67, 67] },
      { label: 'UCS-2 135 units', char: UCS_BMP, encoding: 'UCS-2', count: 135, segments: 3, partLengths: [67, 67, 1] },
    ];

    for (const { label, char, encoding, count, segments, partLengths } of limits) {
      it(`when a message has ${label}, then it takes ${segments} segment(s) split as [${partLengths.join(', ')}]`, () => {
        const message = char.repeat(count);

        const analysis = analyseMessage(message);

        expect(analysis).to.deep.equal({
          encoding,
          characters: count,
          length: count,
          segments,
          parts: partLengths.map((n) => char.repeat(n)),
        });
        expect(analysis.segments).to.equal(contractSegments(count, encoding));
      });
    }

    it('when the limit is reached with extension characters, then 2-septet characters count toward it', () => {
      // 158 basic + 1 extension = 160 septets; 159 basic + 1 extension = 161 septets.
      expect(analyseMessage('a'.repeat(158) + '~')).to.deep.include({ length: 160, segments: 1 });
      const over = analyseMessage('a'.repeat(159) + '~');
      expect(over).to.deep.include({ length: 161, segments: 2 });
      expect(over.parts).to.deep.equal(['a'.repeat(153), 'a'.repeat(6) + '~']);
    });

    it('when the UCS-2 limit is reached with an emoji, then its 2 units count toward it', () => {
      expect(analyseMessage(UCS_BMP.repeat(68) + EMOJI)).to.deep.include({ length: 70, segments: 1 });
      const over = analyseMessage(UCS_BMP.repeat(69) + EMOJI);
      expect(over).to.deep.include({ encoding: 'UCS-2', characters: 70, length: 71, segments: 2 });
      expect(over.parts).to.deep.equal([UCS_BMP.repeat(67), UCS_BMP.repeat(2) + EMOJI]);
    });
  });

  describe('no segment cap', () => {
    it("when 1600 GSM characters are sent, then they take 11 segments (the contract's 10 is not enforced)", () => {
      const analysis = analyseMessage(GSM_ONE.repeat(1600));
      expect(analysis).to.deep.include({ encoding: 'GSM-7', characters: 1600, length: 1600, segments: 11 });
      expect(analysis.parts.map((p) => p.length)).to.deep.equal([...Array<number>(10).fill(153), 70]);
    });

    it('when 1600 UCS-2 characters are sent, then they take 24 segments', () => {
      const analysis = analyseMessage(UCS_BMP.repeat(1600));
      expect(analysis).to.deep.include({ encoding: 'UCS-2', characters: 1600, length: 1600, segments: 24 });
      expect(analysis.parts.map((p) => p.length)).to.deep.equal([...Array<number>(23).fill(67), 59]);
    });

    it('when 1600 emoji are sent, then 3200 units take 49 segments of 33 emoji (66 units) each but the last', () => {
      const analysis = analyseMessage(EMOJI.repeat(1600));
      expect(analysis).to.deep.include({ encoding: 'UCS-2', characters: 1600, length: 3200, segments: 49 });
      expect(analysis.parts.map((p) => countCharacters(p))).to.deep.equal([...Array<number>(48).fill(33), 16]);
    });
  });

  describe('pairs straddling a part boundary', () => {
    it('when an escape pair would straddle septet 153/154, then it moves whole to the next part (3 parts, not ceil(306/153) = 2)', () => {
      const message = 'a'.repeat(152) + '€' + 'a'.repeat(152);

      const analysis = analyseMessage(message);

      expect(analysis).to.deep.equal({
        encoding: 'GSM-7',
        characters: 305,
        length: 306,
        segments: 3,
        parts: ['a'.repeat(152), '€' + 'a'.repeat(151), 'a'],
      });
      expect(contractSegments(analysis.length, analysis.encoding)).to.equal(2);
    });

    it('when an escape pair ends exactly on septet 153, then it stays in the first part (2 parts)', () => {
      const message = 'a'.repeat(151) + '€' + 'a'.repeat(153);

      const analysis = analyseMessage(message);

      expect(analysis).to.deep.equal({
        encoding: 'GSM-7',
        characters: 305,
        length: 306,
        segments: 2,
        parts: ['a'.repeat(151) + '€', 'a'.repeat(153)],
      });
    });

    it('when a surrogate pair would straddle unit 67/68, then it moves whole to the next part (3 parts, not ceil(134/67) = 2)', () => {
      const message = UCS_BMP.repeat(66) + EMOJI + UCS_BMP.repeat(66);

      const analysis = analyseMessage(message);

      expect(analysis).to.deep.equal({
        encoding: 'UCS-2',
        characters: 133,
        length: 134,
        segments: 3,
        parts: [UCS_BMP.repeat(66), EMOJI + UCS_BMP.repeat(65), UCS_BMP],
      });
      expect(contractSegments(analysis.length, analysis.encoding)).to.equal(2);
    });

    it('when a surrogate pair ends exactly on unit 67, then it stays in the first part (2 parts)', () => {
      const message = UCS_BMP.repeat(65) + EMOJI + UCS_BMP.repeat(67);

      const analysis = analyseMessage(message);

      expect(analysis).to.deep.equal({
        encoding: 'UCS-2',
        characters: 133,
        length: 134,
        segments: 2,
        parts: [UCS_BMP.repeat(65) + EMOJI, UCS_BMP.repeat(67)],
      });
    });
  });

  describe('properties', () => {
    const gsmBasic = fc.constantFrom(...GSM_BASIC_TABLE);
    const gsmExtension = fc.constantFrom(...GSM_EXTENSION_TABLE);
    // BMP, outside GSM, not a surrogate: Latin Extended through CJK.
    const bmpNonGsm = fc
      .integer({ min: 0x0100, max: 0xd7ff })
      .map((code) => String.fromCodePoint(code))
      .filter((char) => !isGsmCharacter(char));
    const nonBmp = fc.integer({ min: 0x10000, max: 0x10ffff }).map((code) => String.fromCodePoint(code));

    const gsmOnlyMessage = fc
      .array(fc.oneof({ arbitrary: gsmBasic, weight: 4 }, { arbitrary: gsmExtension, weight: 1 }), { maxLength: 500 })
      .map((chars) => chars.join(''));
    const mixedMessage = fc
      .array(
        fc.oneof(
          { arbitrary: gsmBasic, weight: 6 },
          { arbitrary: gsmExtension, weight: 2 },
          { arbitrary: bmpNonGsm, weight: 1 },
          { arbitrary: nonBmp, weight: 1 },
        ),
        { maxLength: 300 },
      )
      .map((chars) => chars.join(''));
    const ucs2Message = fc
      .array(fc.oneof(gsmBasic, gsmExtension, bmpNonGsm, nonBmp), { minLength: 1, maxLength: 400 })
      .map((chars) => chars.join('') + EMOJI);
    const anyMessage = fc.oneof(gsmOnlyMessage, mixedMessage, ucs2Message);

    it('when any message is split, then its parts re-join to the message', () => {
      fc.assert(
        fc.property(anyMessage, (message) => {
          expect(analyseMessage(message).parts.join('')).to.equal(message);
        }),
        { numRuns: 300 },
      );
    });

    it('when any message is split, then segments equals the number of parts and each part fits its capacity', () => {
      fc.assert(
        fc.property(anyMessage, (message) => {
          const { encoding, length, segments, parts } = analyseMessage(message);
          const { single, concatenated } = SEGMENT_CAPACITY[encoding];
          expect(segments).to.equal(parts.length);
          expect(parts.reduce((total, part) => total + measure(part, encoding), 0)).to.equal(length);
          const capacity = segments > 1 ? concatenated : single;
          for (const part of parts) {
            expect(measure(part, encoding)).to.be.at.most(capacity);
            if (segments > 1) expect(part).to.not.equal('');
          }
        }),
        { numRuns: 300 },
      );
    });

    it('when any message is split, then segments is at least the contract formula and at most ceil(length / (concatenated - 1))', () => {
      fc.assert(
        fc.property(anyMessage, (message) => {
          const { encoding, length, segments } = analyseMessage(message);
          const { single, concatenated } = SEGMENT_CAPACITY[encoding];
          const contract = contractSegments(length, encoding);
          expect(segments).to.be.at.least(contract);
          // Each part but the last wastes at most 1 unit, so it holds at least concatenated - 1.
          const upper = length <= single ? 1 : Math.ceil(length / (concatenated - 1));
          expect(segments).to.be.at.most(upper);
          expect(segments).to.be.at.most(upper + 1);
          // Within 1 600 characters the waste never reaches a whole segment.
          expect(segments).to.be.at.most(contract + 1);
        }),
        { numRuns: 300 },
      );
    });

    it('when any message is split, then no part starts with a lone low surrogate nor ends with a lone high surrogate', () => {
      fc.assert(
        fc.property(anyMessage, (message) => {
          for (const part of analyseMessage(message).parts) {
            if (part === '') continue;
            expect(isLowSurrogate(part.charCodeAt(0)), JSON.stringify(part)).to.equal(false);
            expect(isHighSurrogate(part.charCodeAt(part.length - 1)), JSON.stringify(part)).to.equal(false);
          }
        }),
        { numRuns: 300 },
      );
    });

    it('when a message has only GSM characters, then it is GSM-7 and its length counts extension characters twice', () => {
      fc.assert(
        fc.property(gsmOnlyMessage, (message) => {
          const analysis = analyseMessage(message);
          const extensions = Array.from(message).filter((char) => GSM_EXTENSION_TABLE.includes(char)).length;
          expect(analysis.encoding).to.equal('GSM-7');
          expect(analysis.characters).to.equal(message.length);
          expect(analysis.length).to.equal(message.length + extensions);
        }),
        { numRuns: 200 },
      );
    });

    it('when a message has any non-GSM character, then it is UCS-2 and its length is its UTF-16 length', () => {
      fc.assert(
        fc.property(ucs2Message, (message) => {
          const analysis = analyseMessage(message);
          expect(analysis.encoding).to.equal('UCS-2');
          expect(analysis.length).to.equal(message.length);
          expect(analysis.characters).to.equal(Array.from(message).length);
        }),
        { numRuns: 200 },
      );
    });
  });
});
