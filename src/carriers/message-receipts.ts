import type { CarrierReceipt } from '../messaging/message-behaviour.js';
import { isCarrierStatus } from './carrier-outcomes.js';
import { parseDispatchId, type Receipt } from './carrier-protocol.js';

/** One message's receipts on their way to its actor (a batch item between nodes). */
export interface MessageReceipts {
  readonly messageId: string;
  readonly receipts: readonly CarrierReceipt[];
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const isOptionalText = (value: unknown): value is string | null | undefined =>
  value === undefined || value === null || typeof value === 'string';
const isFiniteNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** A message's receipts off the wire, checked field by field (null: malformed). */
export function messageReceiptsOf(value: unknown): MessageReceipts | null {
  if (!isRecord(value) || typeof value.messageId !== 'string' || !Array.isArray(value.receipts)) return null;
  const receipts: CarrierReceipt[] = [];
  for (const receipt of value.receipts as unknown[]) {
    if (!isRecord(receipt) || !isCarrierStatus(receipt.status)) return null;
    const { occurrence, recipient, at, errorCode, errorMessage, carrierStatus } = receipt;
    if (!isFiniteNumber(occurrence) || !isFiniteNumber(recipient) || !isFiniteNumber(at)) return null;
    if (!isOptionalText(errorCode) || !isOptionalText(errorMessage) || (carrierStatus !== undefined && typeof carrierStatus !== 'string'))
      return null;
    receipts.push({
      occurrence,
      recipient,
      status: receipt.status,
      at,
      ...(errorCode === undefined ? {} : { errorCode }),
      ...(errorMessage === undefined ? {} : { errorMessage }),
      ...(carrierStatus === undefined ? {} : { carrierStatus }),
    });
  }
  return { messageId: value.messageId, receipts };
}

/** A receipt as published, and as its message's actor takes it. */
export interface AddressedReceipt {
  readonly receipt: Receipt;
  readonly carrierReceipt: CarrierReceipt;
}

/**
 * Receipts as connectors publish them, grouped by message and in the form its actor takes them; a receipt whose
 * dispatch id names no dispatch is left out and reported.
 */
export function receiptsByMessage(receipts: readonly Receipt[], reject: (reason: string) => void): Map<string, AddressedReceipt[]> {
  const byMessage = new Map<string, AddressedReceipt[]>();
  for (const receipt of receipts) {
    const dispatch = parseDispatchId(receipt.dispatch_id);
    if (!dispatch) {
      reject(`receipt for an unknown dispatch ${receipt.dispatch_id}`);
      continue;
    }
    const carrierReceipt: CarrierReceipt = {
      occurrence: dispatch.occurrence,
      recipient: dispatch.recipient,
      status: receipt.status,
      at: Date.parse(receipt.occurred_at),
      errorCode: receipt.error_code ?? null,
      errorMessage: receipt.error_message ?? null,
      ...(receipt.carrier_status == null || receipt.carrier_status === '' ? {} : { carrierStatus: receipt.carrier_status }),
    };
    const group = byMessage.get(dispatch.messageId);
    if (group) group.push({ receipt, carrierReceipt });
    else byMessage.set(dispatch.messageId, [{ receipt, carrierReceipt }]);
  }
  return byMessage;
}
