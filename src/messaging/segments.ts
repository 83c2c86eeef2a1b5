/**
 * SMS encoding and segmentation (GSM 03.38 / UCS-2), as docs/api-guide.md "Segments and encodings" describes them.
 *
 * GSM 7-bit: the basic table counts 1 septet per character, the extension table (reached through an escape)
 * counts 2. Any character outside both switches the whole message to UCS-2, measured in UTF-16 code units
 * (a character outside the BMP counts 2). Segments are counted honestly; there is no cap.
 */

// GSM 03.38 basic character set in table order; 0x1B (escape) is left out because it is not a character.
// Position 0x09 is 'Ç' (capital C with cedilla), as in the standard.
const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' + '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';

// Extension table: form feed and ^{}\[~]|€, each sent as escape + code, i.e. 2 septets.
const GSM_EXTENSION = '\f^{}\\[~]|€';

const BASIC = new Set(GSM_BASIC);
const EXTENSION = new Set(GSM_EXTENSION);

export const SEGMENT_CAPACITY = {
  'GSM-7': { single: 160, concatenated: 153 },
  'UCS-2': { single: 70, concatenated: 67 },
} as const;

export type Encoding = keyof typeof SEGMENT_CAPACITY;

export const ENCODINGS = ['GSM-7', 'UCS-2'] as const satisfies readonly Encoding[];

export interface MessageAnalysis {
  readonly encoding: Encoding;
  /** Unicode code points: the unit of the 1–1 600 character rule. */
  readonly characters: number;
  /** Septets (GSM-7) or UTF-16 code units (UCS-2): the contract's `length`. */
  readonly length: number;
  readonly segments: number;
  /** The text of each segment; they re-join to the message. */
  readonly parts: readonly string[];
}

export function isGsmCharacter(char: string): boolean {
  return BASIC.has(char) || EXTENSION.has(char);
}

/** Septets one GSM character takes, or null when it is not in the GSM alphabet. */
function septets(char: string): 1 | 2 | null {
  if (BASIC.has(char)) return 1;
  if (EXTENSION.has(char)) return 2;
  return null;
}

export function detectEncoding(message: string): Encoding {
  for (const char of message) if (septets(char) === null) return 'UCS-2';
  return 'GSM-7';
}

/** Units of one character: septets in GSM-7, UTF-16 code units in UCS-2. */
function unitsOf(char: string, encoding: Encoding): number {
  return encoding === 'GSM-7' ? (septets(char) ?? 0) : char.length;
}

export function analyseMessage(message: string): MessageAnalysis {
  const encoding = detectEncoding(message);
  const chars = Array.from(message);
  const length = chars.reduce((total, char) => total + unitsOf(char, encoding), 0);
  const capacity = SEGMENT_CAPACITY[encoding];
  if (length <= capacity.single) {
    return { encoding, characters: chars.length, length, segments: 1, parts: [message] };
  }
  // Greedy split by whole characters: an escape pair or a surrogate pair is one character here, so no part
  // ever ends in the middle of one. This can need one part more than ceil(length / 153) (or / 67).
  const parts: string[] = [];
  let current = '';
  let used = 0;
  for (const char of chars) {
    const units = unitsOf(char, encoding);
    if (used + units > capacity.concatenated) {
      parts.push(current);
      current = '';
      used = 0;
    }
    current += char;
    used += units;
  }
  parts.push(current); // never empty: the message is longer than one segment and every turn adds a character
  return { encoding, characters: chars.length, length, segments: parts.length, parts };
}

/** Units of a part in the given encoding (for checks and tests). */
export function measure(text: string, encoding: Encoding): number {
  let total = 0;
  for (const char of text) total += unitsOf(char, encoding);
  return total;
}

/** Code points, the unit of the contract's "1 to 1600 characters". */
export function countCharacters(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
