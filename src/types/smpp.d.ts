/**
 * Types for the parts of the `smpp` package (0.5.1, CommonJS, untyped) this project uses: sessions on both sides
 * (ESME client, SMSC server), PDUs with their mandatory parameters and the TLVs read or written here.
 *
 * PDU fields are loose on purpose: the package fills a decoded PDU with whatever the command carries, and
 * `short_message` / `message_payload` arrive decoded by the package (`{ udh?, message }`) while they are sent as
 * raw bytes (a Buffer passes through its encoder untouched).
 */
declare module 'smpp' {
  import type { EventEmitter } from 'node:events';
  import type { Server as NetServer, Socket } from 'node:net';

  /** What the package's decoder makes of `short_message` / `message_payload`. */
  export interface DecodedMessage {
    readonly udh?: readonly Buffer[];
    readonly message: string | Buffer;
  }

  /** Fields of a PDU, given when building one; every one optional (the package fills defaults). */
  export interface PduFields {
    command_status?: number;
    sequence_number?: number;
    system_id?: string;
    password?: string;
    system_type?: string;
    interface_version?: number;
    addr_ton?: number;
    addr_npi?: number;
    address_range?: string;
    service_type?: string;
    source_addr_ton?: number;
    source_addr_npi?: number;
    source_addr?: string;
    dest_addr_ton?: number;
    dest_addr_npi?: number;
    destination_addr?: string;
    esm_class?: number;
    protocol_id?: number;
    priority_flag?: number;
    registered_delivery?: number;
    replace_if_present_flag?: number;
    data_coding?: number;
    sm_default_msg_id?: number;
    short_message?: Buffer | string | DecodedMessage;
    message_id?: string;
    // TLVs
    receipted_message_id?: string;
    message_state?: number;
    network_error_code?: Buffer;
    message_payload?: Buffer | DecodedMessage;
    sar_msg_ref_num?: number;
    sar_total_segments?: number;
    sar_segment_seqnum?: number;
  }

  export class PDU implements PduFields {
    constructor(command: string, options?: PduFields);
    /** Parses a whole PDU from its bytes. */
    constructor(buffer: Buffer);
    readonly command: string;
    readonly command_id: number;
    command_status: number;
    sequence_number: number;
    command_length: number;
    system_id?: string;
    password?: string;
    system_type?: string;
    interface_version?: number;
    addr_ton?: number;
    addr_npi?: number;
    address_range?: string;
    service_type?: string;
    source_addr_ton?: number;
    source_addr_npi?: number;
    source_addr?: string;
    dest_addr_ton?: number;
    dest_addr_npi?: number;
    destination_addr?: string;
    esm_class?: number;
    protocol_id?: number;
    priority_flag?: number;
    registered_delivery?: number;
    replace_if_present_flag?: number;
    data_coding?: number;
    sm_default_msg_id?: number;
    short_message?: Buffer | string | DecodedMessage;
    message_id?: string;
    receipted_message_id?: string;
    message_state?: number;
    network_error_code?: Buffer;
    message_payload?: Buffer | DecodedMessage;
    sar_msg_ref_num?: number;
    sar_total_segments?: number;
    sar_segment_seqnum?: number;
    isResponse(): boolean;
    /** The response PDU to this request (same sequence number); with a non-zero status it has no body. */
    response(options?: PduFields): PDU;
    toBuffer(): Buffer;
    static fromBuffer(buffer: Buffer): PDU | false;
  }

  export type ResponseCallback = (pdu: PDU) => void;

  export class Session extends EventEmitter {
    readonly socket: Socket;
    /** Writes the PDU; false (nothing sent) when the socket is not writable. The response callback fires once. */
    send(pdu: PDU, responseCallback?: ResponseCallback, sendCallback?: ResponseCallback): boolean;
    close(callback?: () => void): void;
    destroy(callback?: () => void): void;
    pause(): void;
    resume(): void;
    bind_transceiver(options: PduFields, responseCallback?: ResponseCallback): boolean;
    bind_transmitter(options: PduFields, responseCallback?: ResponseCallback): boolean;
    bind_receiver(options: PduFields, responseCallback?: ResponseCallback): boolean;
    submit_sm(options: PduFields, responseCallback?: ResponseCallback): boolean;
    deliver_sm(options: PduFields, responseCallback?: ResponseCallback): boolean;
    enquire_link(options: PduFields, responseCallback?: ResponseCallback): boolean;
    unbind(options: PduFields, responseCallback?: ResponseCallback): boolean;
    on(event: 'connect' | 'secureConnect' | 'close', listener: () => void): this;
    on(event: 'error', listener: (error: Error) => void): this;
    /** 'pdu' for every PDU, or a command name (`submit_sm`, `deliver_sm_resp`, …) for those. */
    on(event: string, listener: (pdu: PDU) => void): this;
  }

  export interface ConnectOptions {
    host: string;
    port: number;
    tls?: boolean;
    /** Passed to tls.connect when `tls` is on. */
    ca?: string | Buffer;
    servername?: string;
    rejectUnauthorized?: boolean;
  }

  export interface Server extends NetServer {
    readonly sessions: Session[];
  }

  export interface ServerOptions {
    key?: string | Buffer;
    cert?: string | Buffer;
  }

  /** One of the package's GSM 03.38 tables (default, Turkish, Spanish, Portuguese), filled on first use. */
  export interface GsmCoderTable {
    readonly chars: string;
  }

  /** The package's GSM 03.38 coder, used by its message filters. */
  export interface GsmCoder {
    /** The table of a national language shift (0: the default alphabet); checks on every call that it is filled. */
    getCoder(encoding: number | undefined): GsmCoderTable;
    encode(text: string, encoding: number | undefined): Buffer;
    decode(bytes: Buffer | string, encoding: number | undefined): string;
  }

  interface Smpp {
    connect(options: ConnectOptions, listener?: () => void): Session;
    createServer(options: ServerOptions, listener?: (session: Session) => void): Server;
    readonly PDU: typeof PDU;
    readonly errors: Readonly<Record<string, number>>;
    readonly gsmCoder: GsmCoder;
  }

  const smpp: Smpp;
  export default smpp;
}
