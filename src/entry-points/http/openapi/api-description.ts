import { CARRIER_CODE_RANGE, ERROR_CATALOGUE, type ErrorName } from '../../../libraries/errors/error-catalogue.js';
import { API_ROOT } from '../routes.js';
import type { ErrorCodeEntry } from './openapi-document.js';

// The error catalogue (`x-error-codes`) and the description of the API (`info.description`).

export function errorCodeEntries(): ErrorCodeEntry[] {
  return (Object.entries(ERROR_CATALOGUE) as [ErrorName, (typeof ERROR_CATALOGUE)[ErrorName]][]).map(([name, entry]) => ({
    code: entry.code,
    name,
    http_status: entry.httpStatus,
    delivered_as: entry.envelope === 'service' ? 'service-error envelope' : 'sms.failed event and GET /status recipient',
    message: entry.message,
  }));
}

function catalogueTable(): string {
  const rows = errorCodeEntries().map((entry) => {
    const status =
      entry.http_status === null
        ? 'event only'
        : entry.code === ERROR_CATALOGUE.INVALID_FIELD_FORMAT.code
          ? `${entry.http_status} (413, 415 for the body)`
          : String(entry.http_status);
    return `| ${entry.code} | ${entry.name} | ${status} | ${entry.message} |`;
  });
  return ['| error_code | Name | HTTP | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

export function apiDescription(): string {
  return `HTTP/JSON gateway for sending SMS on behalf of a merchant: immediate, scheduled and recurring sends, charged to a prepaid then a postpaid wallet, with delivery status and webhooks.

All endpoints are under \`{base_url}${API_ROOT}\` (v1). Every endpoint but \`GET /health\` needs the merchant key in the \`app-key\` header (\`sk_test_…\` keys on the sandbox, \`sk_live_…\` on production). This document and its reference page are served outside the API root (\`/docs/openapi.json\`, \`/docs\`) without a key.

Beyond the v1 contract, this document describes additions that a client written against the contract alone never notices: \`Idempotency-Key\`, HMAC-signed webhooks, the OpenAPI document itself, and extra fields in \`data\` (marked *additive*). Responses may gain fields within v1: ignore the ones you do not know.

## Requests and errors
- Every authenticated endpoint runs authenticate → rate limit → read and validate the body → act: a request with no key and a bad body gets 401, and invalid requests count against the rate limit.
- Successful responses are \`{status_code, data}\`. Service errors use the envelope \`{success: false, status_code, error_code, message, request_id, details?, retry_after?}\`; \`error_code\` is always a four-digit string, \`details[]\` entries are \`{field, message, type}\`. Authentication failures and unknown messages are exactly \`{detail}\`.
- Every response carries \`X-Request-Id\`. Unknown paths are 404/1404 and known paths with another method 405/1405 with \`Allow\` (\`#/components/responses/RouteNotFound\`, \`MethodNotAllowed\`).
- Malformed JSON or bytes that are not valid UTF-8 (400), a body without \`Content-Type: application/json\` or with a charset other than UTF-8 (415) and a body over 256 KiB (413) are 1110 with one detail whose \`field\` is \`body\` (the request body, not the SMS text, which is \`message\`).
- Rate limits per key, each bucket independent, sliding 60-second window: send 60, status 120, balance 30, calculate 60, cancel/pause/resume together 60 requests per minute; health is unlimited. Over the limit: 429/1301 with \`Retry-After\`. The 20th rejection within a minute suspends the key for 15 minutes (that one is still a 429, with \`Retry-After: 900\`); every call then gets 403/1302 with \`retry_after\`.
- Failed authentication is limited per client address: past 60 401s a minute (configurable), the address's requests with keys the node has not found within the last minute get 429/1301 with \`Retry-After\`, without a key lookup.
- Money is exact decimal (up to 4 fractional digits); only \`/calculate\` rounds (\`amount\` to 2, \`average_price\` to 4 decimals). 1202 INSUFFICIENT_BALANCE is HTTP 402.

## Error catalogue
Also in machine-readable form as \`x-error-codes\`. Carrier-level codes ${CARRIER_CODE_RANGE.min}–${CARRIER_CODE_RANGE.max} reach clients only in \`sms.failed\` events and \`GET /status\` recipients; a connector may report codes of that range beyond the named ones.

${catalogueTable()}

## Webhooks
Configured on the API key (\`webhook_url\`, optional Basic credentials, optional HMAC signing) and per send (\`callback_url\`: neither Basic credentials nor signature; a \`callback_url\` equal to the key's \`webhook_url\` gets each event once, as the key's). Events are POSTed one per request; deliveries to the key's \`webhook_url\` carry HTTP Basic when credentials are set and, for keys with signing enabled, \`X-Signature: sha256=<hex>\` of \`<timestamp>.<body>\` with \`X-Signature-Timestamp\`. Any 2xx acknowledges; any 4xx ends delivery at once; 5xx, timeouts (over 5 s) and connection failures are retried after 30 s, 2 min, 10 min and 1 h, then the event is dropped (operators can replay it). Delivery order is not guaranteed: correlate by \`message_id\` and \`recipient_index\`; \`GET /status\` is authoritative. Each \`event_id\` is unique and a retry repeats it. No event follows a terminal one (\`sms.delivered\`, \`sms.failed\`) for the same dispatch (message, occurrence, recipient).`;
}
