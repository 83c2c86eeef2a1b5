import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import {
  parseWebhookEvent,
  verifyBasicAuth,
  verifyWebhookSignature,
  WebhookEventError,
  type WebhookEvent,
} from '../../../src/client/index.js';

const SECRET = 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cw';
const NOW = Date.UTC(2031, 2, 10, 8, 0, 0);
const NOW_SECONDS = NOW / 1000;

const QUEUED: WebhookEvent = {
  event_id: '3b241101-e2bb-4255-8caf-4136c566a962',
  event_type: 'sms.queued',
  timestamp: '2031-03-10T08:00:00.000Z',
  message_id: 'msg_abc123',
  data: { total_recipients: 2, total_messages: 2, total_cost: 0.04, currency: 'USD', scheduled_at: null },
};
const BODY = JSON.stringify(QUEUED);

/** As the server signs (src/webhooks/webhook-sender.ts): HMAC-SHA256 of `<timestamp>.<body>`, hex. */
function sign(body: string, timestamp: number, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

function signedHeaders(body: string, timestamp = NOW_SECONDS, secret = SECRET): Record<string, string> {
  return { 'x-signature': sign(body, timestamp, secret), 'x-signature-timestamp': String(timestamp) };
}

const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;

describe('client: webhook verification', () => {
  describe('verifyWebhookSignature', () => {
    const verify = (options: Partial<Parameters<typeof verifyWebhookSignature>[0]>) =>
      verifyWebhookSignature({ body: BODY, headers: signedHeaders(BODY), secret: SECRET, now: NOW, ...options });

    it('when the body is signed with the secret and a current timestamp, then it verifies', () => {
      expect(verify({})).to.equal(true);
    });

    it('when the body comes as a Buffer or the headers as Fetch Headers or in another case, then it still verifies', () => {
      expect(verify({ body: Buffer.from(BODY) })).to.equal(true);
      expect(verify({ headers: new Headers(signedHeaders(BODY)) })).to.equal(true);
      const headers = signedHeaders(BODY);
      expect(
        verify({ headers: { 'X-Signature': headers['x-signature'], 'X-Signature-Timestamp': headers['x-signature-timestamp'] } }),
      ).to.equal(true);
    });

    it('when the body has non-ASCII characters, then the signature covers its UTF-8 bytes', () => {
      const body = JSON.stringify({ ...QUEUED, message_id: 'msg_é€😀' });
      expect(verify({ body, headers: signedHeaders(body) })).to.equal(true);
      expect(verify({ body: Buffer.from(body, 'utf8'), headers: signedHeaders(body) })).to.equal(true);
    });

    it('when one byte of the body is changed, then it does not verify', () => {
      expect(verify({ body: BODY.replace('0.04', '0.05') })).to.equal(false);
      expect(verify({ body: `${BODY} ` })).to.equal(false);
    });

    it('when the body was signed with another secret, then it does not verify', () => {
      expect(verify({ headers: signedHeaders(BODY, NOW_SECONDS, `${SECRET}x`) })).to.equal(false);
      expect(verify({ secret: 'whsec_other' })).to.equal(false);
    });

    it('when the timestamp header is changed after signing, then it does not verify', () => {
      const headers = { ...signedHeaders(BODY, NOW_SECONDS - 10), 'x-signature-timestamp': String(NOW_SECONDS) };
      expect(verify({ headers })).to.equal(false);
    });

    it('when the timestamp is more than the tolerance in the past or the future, then it does not verify; at the tolerance it does', () => {
      for (const offset of [-300, 300]) expect(verify({ headers: signedHeaders(BODY, NOW_SECONDS + offset) }), `${offset}`).to.equal(true);
      for (const offset of [-301, 301, -86_400])
        expect(verify({ headers: signedHeaders(BODY, NOW_SECONDS + offset) }), `${offset}`).to.equal(false);
    });

    it('when a tolerance is given, then it replaces the default 300 seconds', () => {
      const headers = signedHeaders(BODY, NOW_SECONDS - 30);
      expect(verify({ headers, toleranceSeconds: 60 })).to.equal(true);
      expect(verify({ headers, toleranceSeconds: 10 })).to.equal(false);
    });

    it('when now is not given, then the current time is used', () => {
      const current = Math.floor(Date.now() / 1000);
      expect(verifyWebhookSignature({ body: BODY, headers: signedHeaders(BODY, current), secret: SECRET })).to.equal(true);
      expect(verifyWebhookSignature({ body: BODY, headers: signedHeaders(BODY, current - 3600), secret: SECRET })).to.equal(false);
    });

    it('when a signature header is missing or malformed, then it does not verify (and does not throw)', () => {
      const headers = signedHeaders(BODY);
      const hex = headers['x-signature']!.slice('sha256='.length);
      const cases: Record<string, Record<string, string>> = {
        'no headers': {},
        'no signature': { 'x-signature-timestamp': headers['x-signature-timestamp']! },
        'no timestamp': { 'x-signature': headers['x-signature']! },
        'no sha256= prefix': { ...headers, 'x-signature': hex },
        'another algorithm': { ...headers, 'x-signature': `sha1=${hex}` },
        'short hex': { ...headers, 'x-signature': `sha256=${hex.slice(2)}` },
        'not hex': { ...headers, 'x-signature': `sha256=${'z'.repeat(64)}` },
        'timestamp not a number': { ...headers, 'x-signature-timestamp': 'soon' },
        'timestamp in milliseconds': { ...signedHeaders(BODY, NOW), 'x-signature-timestamp': String(NOW) },
      };
      for (const [label, caseHeaders] of Object.entries(cases)) expect(verify({ headers: caseHeaders }), label).to.equal(false);
    });
  });

  describe('verifyBasicAuth', () => {
    const credentials = { username: 'shop-hooks', password: 'p4ss:word' };

    it('when the header carries the configured credentials, then it verifies (a colon in the password included)', () => {
      expect(verifyBasicAuth(basic('shop-hooks:p4ss:word'), credentials)).to.equal(true);
      expect(verifyBasicAuth(`basic  ${Buffer.from('shop-hooks:p4ss:word').toString('base64')}`, credentials)).to.equal(true);
    });

    it('when the username or the password differs, then it does not verify', () => {
      expect(verifyBasicAuth(basic('shop-hooks:p4ss:wore'), credentials)).to.equal(false);
      expect(verifyBasicAuth(basic('shop-hook:p4ss:word'), credentials)).to.equal(false);
      expect(verifyBasicAuth(basic('shop-hooks:'), credentials)).to.equal(false);
      expect(verifyBasicAuth(basic('shop-hooks:p4ss:word!'), credentials)).to.equal(false);
    });

    it('when the header is missing, empty or of another scheme, then it does not verify', () => {
      for (const header of [undefined, null, '', 'Basic', 'Basic ', `Bearer ${Buffer.from('shop-hooks:p4ss:word').toString('base64')}`]) {
        expect(verifyBasicAuth(header, credentials), String(header)).to.equal(false);
      }
    });
  });

  describe('parseWebhookEvent', () => {
    const failed = {
      event_id: '9f0c0f2e-6d41-4b53-9a3e-0f5b1a7c2d11',
      event_type: 'sms.failed',
      timestamp: '2031-03-10T08:00:05.000Z',
      message_id: 'msg_abc123',
      data: {
        recipient_phone: '+243812345691',
        carrier: 'simulator',
        recipient_index: 0,
        failed_at: '2031-03-10T08:00:05.000Z',
        error_code: '1504',
        error_message: 'The carrier rejected the message before dispatch.',
        retryable: false,
      },
    };

    it('when the body is a valid event (raw string, Buffer or parsed), then it is returned typed by event_type', () => {
      for (const body of [BODY, Buffer.from(BODY), QUEUED]) expect(parseWebhookEvent(body)).to.deep.equal(QUEUED);
      const event = parseWebhookEvent(JSON.stringify(failed));
      if (event.event_type !== 'sms.failed') throw new Error('narrowing');
      expect(event.data.retryable).to.equal(false);
      expect(event.data.error_code).to.equal('1504');
    });

    it('when an event carries fields beyond the contract (additive), then they are kept', () => {
      const scheduled = { ...failed, data: { ...failed.data, occurrence_index: 2, scheduled_at: '2031-04-01T09:00:00.000Z' } };
      expect(parseWebhookEvent(scheduled)).to.deep.equal(scheduled);
    });

    it('when event_type is unknown, then it throws a WebhookEventError naming the field and the value', () => {
      expect(() => parseWebhookEvent({ ...QUEUED, event_type: 'sms.read' }))
        .to.throw(WebhookEventError)
        .with.property('message')
        .that.contains('event_type')
        .and.contains('"sms.read"');
    });

    it('when an envelope or data field is missing or of the wrong type, then the error names it', () => {
      const { event_id: _omitted, ...withoutId } = QUEUED;
      expect(() => parseWebhookEvent(withoutId)).to.throw(WebhookEventError, 'event_id must be a string');
      expect(() => parseWebhookEvent({ ...QUEUED, data: null })).to.throw(WebhookEventError, 'data must be an object');
      expect(() => parseWebhookEvent({ ...QUEUED, data: { ...QUEUED.data, total_cost: '0.04' } })).to.throw(
        WebhookEventError,
        'data.total_cost must be a number',
      );
      expect(() => parseWebhookEvent({ ...QUEUED, data: { ...QUEUED.data, scheduled_at: 5 } })).to.throw(
        WebhookEventError,
        'data.scheduled_at must be a string or null',
      );
      expect(() => parseWebhookEvent({ ...failed, data: { ...failed.data, retryable: 'no' } })).to.throw(
        WebhookEventError,
        'data.retryable must be a boolean',
      );
    });

    it('when the body is not a JSON object, then it throws a WebhookEventError', () => {
      for (const body of ['{"event_id":', '[]', 'null', '42', Buffer.from('not json'), undefined]) {
        expect(() => parseWebhookEvent(body), String(body)).to.throw(WebhookEventError);
      }
    });
  });
});
