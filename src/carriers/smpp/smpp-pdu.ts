import smpp, { type GsmCoder, type GsmCoderTable, type PDU } from 'smpp';

/**
 * The bytes of a received PDU, as they came off the wire.
 *
 * The `smpp` package decodes `short_message` and `message_payload` into text with its own GSM table (bytes it
 * does not know become spaces, and an ASCII `_` or `@` in a receipt turns into another character), so what was
 * really sent is lost. `captureRawPdus()` makes every PDU the package parses keep its buffer (a non-enumerable
 * property, so the package never writes it back), and `readMessageBody` reads the message bytes and TLVs from it.
 */

const RAW = Symbol.for('sms-gateway.smpp.raw-pdu');
const INSTALLED = Symbol.for('sms-gateway.smpp.raw-pdu.installed');

interface PatchablePrototype {
  fromBuffer: (this: PDU, buffer: Buffer) => void;
  [INSTALLED]?: boolean;
}

/** Idempotent: any number of modules may call it, the package is wrapped once. */
export function captureRawPdus(): void {
  const prototype = smpp.PDU.prototype as unknown as PatchablePrototype;
  if (prototype[INSTALLED] === true) return;
  const original = prototype.fromBuffer;
  prototype.fromBuffer = function fromBufferKeepingBytes(this: PDU, buffer: Buffer): void {
    Object.defineProperty(this, RAW, { value: Buffer.from(buffer), enumerable: false });
    original.call(this, buffer);
  };
  prototype[INSTALLED] = true;
}

const CODERS_KEPT = Symbol.for('sms-gateway.smpp.gsm-coders-kept');

interface PatchableCoder {
  getCoder: GsmCoder['getCoder'];
  [CODERS_KEPT]?: boolean;
}

/**
 * The package looks its GSM table up for every message it decodes (each delivery report's text) by listing the
 * table's keys to see whether it is filled yet: an array of 128 keys per report. A table, once filled, never changes,
 * so each is looked up once and kept. Idempotent.
 */
export function keepGsmCoders(): void {
  const coder = smpp.gsmCoder as unknown as PatchableCoder;
  if (coder[CODERS_KEPT] === true) return;
  const lookUp = coder.getCoder.bind(coder);
  const kept = new Map<number | undefined, GsmCoderTable>();
  coder.getCoder = (encoding) => {
    let table = kept.get(encoding);
    if (table === undefined) {
      table = lookUp(encoding);
      kept.set(encoding, table);
    }
    return table;
  };
  coder[CODERS_KEPT] = true;
}

export function rawBytesOf(pdu: PDU): Buffer | null {
  const raw = (pdu as unknown as Record<symbol, unknown>)[RAW];
  return Buffer.isBuffer(raw) ? raw : null;
}

/** TLV tags read from raw bytes. */
export const TLV = {
  receipted_message_id: 0x001e,
  sar_msg_ref_num: 0x020c,
  sar_total_segments: 0x020e,
  sar_segment_seqnum: 0x020f,
  network_error_code: 0x0423,
  message_payload: 0x0424,
  message_state: 0x0427,
} as const;

/** The message-bearing part of a submit_sm, deliver_sm or data_sm, from its bytes. */
export interface MessageBody {
  readonly esmClass: number;
  readonly dataCoding: number;
  /** Empty for data_sm (it has no short_message). */
  readonly shortMessage: Buffer;
  /** Every TLV by tag (the last one when a tag repeats). */
  readonly tlvs: ReadonlyMap<number, Buffer>;
}

const HEADER = 16;

class Reader {
  constructor(
    private readonly buffer: Buffer,
    public offset: number,
  ) {}

  octet(): number {
    if (this.offset >= this.buffer.length) throw new Error('PDU ends early');
    return this.buffer.readUInt8(this.offset++);
  }

  cstring(): void {
    const end = this.buffer.indexOf(0, this.offset);
    if (end < 0) throw new Error('PDU ends inside a C-octet string');
    this.offset = end + 1;
  }

  bytes(length: number): Buffer {
    if (this.offset + length > this.buffer.length) throw new Error('PDU ends inside a field');
    const out = this.buffer.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }
}

/** Reads the message fields of submit_sm (0x04), deliver_sm (0x05) or data_sm (0x103); null for other commands. */
export function readMessageBody(raw: Buffer): MessageBody | null {
  if (raw.length < HEADER) return null;
  const length = Math.min(raw.readUInt32BE(0), raw.length);
  const commandId = raw.readUInt32BE(4);
  if (commandId !== 0x04 && commandId !== 0x05 && commandId !== 0x103) return null;
  const buffer = raw.subarray(0, length);
  const reader = new Reader(buffer, HEADER);
  reader.cstring(); // service_type
  reader.octet(); // source_addr_ton
  reader.octet(); // source_addr_npi
  reader.cstring(); // source_addr
  reader.octet(); // dest_addr_ton
  reader.octet(); // dest_addr_npi
  reader.cstring(); // destination_addr
  const esmClass = reader.octet();
  let dataCoding: number;
  let shortMessage: Buffer = Buffer.alloc(0);
  if (commandId === 0x04 || commandId === 0x05) {
    reader.octet(); // protocol_id
    reader.octet(); // priority_flag
    reader.cstring(); // schedule_delivery_time
    reader.cstring(); // validity_period
    reader.octet(); // registered_delivery
    reader.octet(); // replace_if_present_flag
    dataCoding = reader.octet();
    reader.octet(); // sm_default_msg_id
    shortMessage = Buffer.from(reader.bytes(reader.octet()));
  } else {
    reader.octet(); // registered_delivery (data_sm)
    dataCoding = reader.octet();
  }
  const tlvs = new Map<number, Buffer>();
  while (reader.offset + 4 <= buffer.length) {
    const tag = buffer.readUInt16BE(reader.offset);
    const size = buffer.readUInt16BE(reader.offset + 2);
    reader.offset += 4;
    tlvs.set(tag, Buffer.from(reader.bytes(size)));
  }
  return { esmClass, dataCoding, shortMessage, tlvs };
}

/** The body of a received PDU, or null when it carries none (or its bytes were not kept). */
export function messageBodyOf(pdu: PDU): MessageBody | null {
  const raw = rawBytesOf(pdu);
  if (raw === null) return null;
  try {
    return readMessageBody(raw);
  } catch {
    return null;
  }
}

/** An integer TLV (1, 2 or 4 octets) or null. */
export function tlvNumber(body: MessageBody, tag: number): number | null {
  const value = body.tlvs.get(tag);
  if (value === undefined || value.length === 0 || value.length > 4) return null;
  return value.readUIntBE(0, value.length);
}

/** A C-octet string TLV (trailing NUL dropped) or null. */
export function tlvString(body: MessageBody, tag: number): string | null {
  const value = body.tlvs.get(tag);
  if (value === undefined) return null;
  const end = value.indexOf(0);
  return value.subarray(0, end < 0 ? value.length : end).toString('latin1');
}
