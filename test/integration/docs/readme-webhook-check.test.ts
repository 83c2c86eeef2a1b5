import type { IncomingHttpHeaders } from 'node:http';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { createWebhookSender, type WebhookCredentials, type WebhookSender } from '../../../src/webhooks/webhook-sender.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { fencedBlocks, readReadme } from './readme-blocks.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/*
 * The README's plain-Node webhook check (```js webhook-check, saved as webhook-check.mjs), imported as a merchant
 * would, against deliveries made by the gateway's own webhook sender: what it accepts is exactly what the gateway
 * signs, so the sample cannot drift from the real Basic header and X-Signature.
 */

type BasicAuthOk = (authorization: string | undefined, username: string, password: string) => boolean;
type SignatureOk = (rawBody: string | Buffer, headers: IncomingHttpHeaders, secret: string, toleranceSeconds?: number) => boolean;

const SECRET = 'whsec_readme_check_0123456789';
const CREDENTIALS: WebhookCredentials = { username: 'shop', password: 's3cret', signingSecret: SECRET };
const BODY = JSON.stringify({
  event_id: '0b6f3c1e-9d2a-4c47-8f1e-3a5b7c9d1e2f',
  event_type: 'sms.delivered',
  timestamp: '2026-01-01T10:00:00.000Z',
  message_id: 'msg_0123456789abcdef0123456789abcdef',
  data: {
    recipient_phone: '+243812345600',
    carrier: 'simulator',
    recipient_index: 0,
    delivered_at: '2026-01-01T10:00:00.000Z',
    segments: 1,
    note: 'é ✓',
  },
});

describe('README webhook check (webhook-check.mjs) against the gateway webhook sender', () => {
  let dir = '';
  let basicAuthOk: BasicAuthOk;
  let signatureOk: SignatureOk;
  let receiver: WebhookReceiver | null = null;
  let sender: WebhookSender | null = null;

  before(async () => {
    const blocks = fencedBlocks(readReadme()).filter((block) => block.info === 'js webhook-check');
    expect(blocks, 'exactly one ```js webhook-check block in README.md').to.have.lengthOf(1);
    dir = temporaryDir('readme-webhook-check-');
    const file = path.join(dir, 'webhook-check.mjs');
    writeFileSync(file, blocks[0]?.body ?? '');
    const loaded: unknown = await import(pathToFileURL(file).href);
    const exported = loaded as Partial<Record<'basicAuthOk' | 'signatureOk', unknown>>;
    if (typeof exported.basicAuthOk !== 'function' || typeof exported.signatureOk !== 'function') {
      throw new Error('webhook-check.mjs must export basicAuthOk and signatureOk');
    }
    basicAuthOk = exported.basicAuthOk as BasicAuthOk;
    signatureOk = exported.signatureOk as SignatureOk;
    receiver = await startWebhookReceiver();
    sender = createWebhookSender({
      timeoutMs: 5_000,
      policy: { publicAddressesOnly: false, allowHttpLocalhost: true },
      userAgent: 'readme-webhook-check',
    });
  });

  after(async () => {
    await sender?.close();
    await receiver?.close();
    if (dir !== '') removeTemporaryDir(dir);
  });

  async function deliver(nowMs: number, credentials: WebhookCredentials = CREDENTIALS): Promise<ReceivedRequest> {
    if (!sender || !receiver) throw new Error('not started');
    const before = receiver.requests.length;
    const result = await sender.send(receiver.url, BODY, credentials, nowMs);
    expect(result).to.deep.equal({ type: 'response', status: 200 });
    const request = receiver.requests[before];
    if (!request) throw new Error('the receiver got nothing');
    return request;
  }

  it('accepts a delivery as the gateway sends it (raw body as a Buffer or a string)', async () => {
    const request = await deliver(Date.now());
    expect(request.rawBody).to.equal(BODY);
    expect(basicAuthOk(request.headers.authorization, 'shop', 's3cret')).to.equal(true);
    expect(signatureOk(Buffer.from(request.rawBody), request.headers, SECRET)).to.equal(true);
    expect(signatureOk(request.rawBody, request.headers, SECRET)).to.equal(true);
  });

  it('refuses other credentials, another secret, an altered body and a stale timestamp', async () => {
    const request = await deliver(Date.now());
    expect(basicAuthOk(request.headers.authorization, 'shop', 'wrong')).to.equal(false);
    expect(basicAuthOk(undefined, 'shop', 's3cret')).to.equal(false);
    expect(signatureOk(request.rawBody, request.headers, 'whsec_other')).to.equal(false);
    expect(signatureOk(request.rawBody.replace('sms.delivered', 'sms.failed'), request.headers, SECRET)).to.equal(false);
    expect(signatureOk(request.rawBody, { ...request.headers, 'x-signature': undefined }, SECRET)).to.equal(false);

    const stale = await deliver(Date.now() - 301_000);
    expect(signatureOk(stale.rawBody, stale.headers, SECRET)).to.equal(false);
    // the signature itself is right: only its age fails it
    expect(signatureOk(stale.rawBody, stale.headers, SECRET, 600)).to.equal(true);
  });

  it('a key without credentials or signing sends neither header, and the check refuses it', async () => {
    const request = await deliver(Date.now(), { username: null, password: null, signingSecret: null });
    expect(request.headers.authorization).to.equal(undefined);
    expect(request.headers['x-signature']).to.equal(undefined);
    expect(basicAuthOk(request.headers.authorization, 'shop', 's3cret')).to.equal(false);
    expect(signatureOk(request.rawBody, request.headers, SECRET)).to.equal(false);
  });
});
