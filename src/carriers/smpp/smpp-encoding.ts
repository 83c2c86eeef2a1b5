import { analyseMessage, type Encoding } from '../../messaging/segments.js';
import { InternalError } from '../../libraries/errors/internal-errors.js';

/**
 * A dispatch job's text as SMPP parts.
 *
 * GSM-7 goes as data_coding 0, the GSM 03.38 default alphabet one septet per octet (unpacked, as SMPP carries it),
 * extension-table characters as the escape 0x1B then their code. UCS-2 goes as data_coding 8, UTF-16BE (a
 * character outside the BMP is its surrogate pair). The text is split exactly as the gateway counted and charged
 * it: the parts are `analyseMessage(text).parts`, so one segmentation module decides both.
 *
 * A message of several parts is concatenated in one of three ways (`LongMessageMethod`):
 * - `udh`: each short_message starts with the user data header `05 00 03 <ref> <total> <seq>` and esm_class has
 *   the UDHI bit (0x40);
 * - `sar`: the TLVs sar_msg_ref_num, sar_total_segments, sar_segment_seqnum, no UDH;
 * - `payload`: one submit_sm carrying the whole text in the message_payload TLV (short_message empty); the
 *   message centre splits it, and gives one message id for the whole message.
 */

export type LongMessageMethod = 'udh' | 'sar' | 'payload';

export const DATA_CODING = { 'GSM-7': 0x00, 'UCS-2': 0x08 } as const;
export const ESM_CLASS_UDHI = 0x40;

// GSM 03.38 default alphabet by septet; 0x1B is the escape to the extension table.
const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM_EXTENSION: readonly (readonly [string, number])[] = [
  ['\f', 0x0a],
  ['^', 0x14],
  ['{', 0x28],
  ['}', 0x29],
  ['\\', 0x2f],
  ['[', 0x3c],
  ['~', 0x3d],
  [']', 0x3e],
  ['|', 0x40],
  ['€', 0x65],
];
const ESCAPE = 0x1b;

const BASIC_CODE = new Map<string, number>();
Array.from(GSM_BASIC).forEach((char, code) => {
  if (code !== ESCAPE) BASIC_CODE.set(char, code);
});
const EXTENSION_CODE = new Map<string, number>(GSM_EXTENSION);
const EXTENSION_CHAR = new Map<number, string>(GSM_EXTENSION.map(([char, code]) => [code, char]));
const BASIC_CHAR = Array.from(GSM_BASIC);

export class EncodingError extends InternalError {
  readonly kind = 'gsm_encoding';
}

/** GSM 03.38 unpacked: one octet per septet, extension characters as 0x1B + code. */
export function encodeGsm7(text: string): Buffer {
  const out: number[] = [];
  for (const char of text) {
    const basic = BASIC_CODE.get(char);
    if (basic !== undefined) {
      out.push(basic);
      continue;
    }
    const extension = EXTENSION_CODE.get(char);
    if (extension === undefined)
      throw new EncodingError(
        `character U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')} is not in the GSM 03.38 alphabet`,
      );
    out.push(ESCAPE, extension);
  }
  return Buffer.from(out);
}

/** Unpacked septets back to text. An escape before an unknown code reads as the default-alphabet character. */
export function decodeGsm7(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const code = bytes[i] ?? 0;
    if (code === ESCAPE) {
      if (i + 1 >= bytes.length) break; // a trailing escape carries nothing
      const next = bytes[++i] ?? 0;
      out += EXTENSION_CHAR.get(next) ?? BASIC_CHAR[next & 0x7f] ?? '';
      continue;
    }
    out += code < 0x80 ? (BASIC_CHAR[code] ?? '') : '\ufffd';
  }
  return out;
}

export function encodeUcs2(text: string): Buffer {
  return Buffer.from(text, 'utf16le').swap16();
}

export function decodeUcs2(bytes: Uint8Array): string {
  const even = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2)));
  return even.swap16().toString('utf16le');
}

/** Text of a short_message / message_payload by data_coding: 0 GSM, 8 UCS-2, 3 Latin-1, 1 IA5 (ASCII); others as Latin-1. */
export function decodeText(bytes: Uint8Array, dataCoding: number): string {
  switch (dataCoding & 0x0f) {
    case 0x00:
      return decodeGsm7(bytes);
    case 0x08:
      return decodeUcs2(bytes);
    default:
      return Buffer.from(bytes).toString('latin1');
  }
}

export function encodeText(text: string, encoding: Encoding): Buffer {
  return encoding === 'GSM-7' ? encodeGsm7(text) : encodeUcs2(text);
}

/** One submit_sm's worth of message: what goes in short_message, esm_class bits, and the optional TLVs. */
export interface EncodedPart {
  readonly shortMessage: Buffer;
  readonly esmClass: number;
  readonly sar: { readonly reference: number; readonly total: number; readonly seq: number } | null;
  readonly messagePayload: Buffer | null;
}

export interface EncodedMessage {
  readonly dataCoding: number;
  /** Segments the gateway counted (analyseMessage). */
  readonly segments: number;
  /** submit_sm PDUs to send, in order (one for a single segment or the payload method). */
  readonly parts: readonly EncodedPart[];
}

/**
 * Splits and encodes a text in the job's encoding. `reference` is used only when there is more than one segment
 * (and not by `payload`). Throws EncodingError when the text does not fit the encoding the job states.
 */
export function encodeMessage(text: string, encoding: Encoding, method: LongMessageMethod, reference: number): EncodedMessage {
  const analysis = analyseMessage(text);
  if (analysis.encoding !== encoding) {
    throw new EncodingError(`the text is ${analysis.encoding}, the job says ${encoding}`);
  }
  const dataCoding = DATA_CODING[encoding];
  const segments = analysis.segments;
  if (segments === 1) {
    return { dataCoding, segments, parts: [{ shortMessage: encodeText(text, encoding), esmClass: 0, sar: null, messagePayload: null }] };
  }
  if (method === 'payload') {
    return {
      dataCoding,
      segments,
      parts: [{ shortMessage: Buffer.alloc(0), esmClass: 0, sar: null, messagePayload: encodeText(text, encoding) }],
    };
  }
  const ref = reference & 0xff;
  const parts = analysis.parts.map((partText, index): EncodedPart => {
    const bytes = encodeText(partText, encoding);
    const seq = index + 1;
    if (method === 'sar') return { shortMessage: bytes, esmClass: 0, sar: { reference: ref, total: segments, seq }, messagePayload: null };
    const udh = Buffer.from([0x05, 0x00, 0x03, ref, segments, seq]);
    return { shortMessage: Buffer.concat([udh, bytes]), esmClass: ESM_CLASS_UDHI, sar: null, messagePayload: null };
  });
  return { dataCoding, segments, parts };
}

/** Concatenation references of one connector: 0, 1, … 255, 0, … */
export function createReferenceCounter(start = 0): () => number {
  let next = start & 0xff;
  return () => {
    const value = next;
    next = (next + 1) & 0xff;
    return value;
  };
}
