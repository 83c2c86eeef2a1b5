export { API_ROOT, createSmsGatewayClient, DEFAULT_RETRY } from './sms-gateway-client.js';
export type { RetryOptions, SendOptions, SmsGatewayClient, SmsGatewayClientOptions } from './sms-gateway-client.js';
export {
  SmsGatewayAuthError,
  SmsGatewayError,
  SmsGatewayNetworkError,
  SmsGatewayNotFoundError,
  SmsGatewayResponseError,
} from './sms-gateway-errors.js';
export { EVENT_TYPES } from './sms-gateway-types.js';
export type * from './sms-gateway-types.js';
export { parseWebhookEvent, verifyBasicAuth, verifyWebhookSignature, WebhookEventError } from './webhook-verification.js';
export type { WebhookHeaders, VerifySignatureOptions } from './webhook-verification.js';
