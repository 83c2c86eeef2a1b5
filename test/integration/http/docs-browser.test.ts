import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Every endpoint, as the contract names it (relative to the API root). */
const ENDPOINTS = ['/send', '/status/{message_id}', '/balance', '/calculate', '/health', '/cancel/{id}', '/pause/{id}', '/resume/{id}'];

describe(`API reference page in headless Chromium (skipped when ${CHROMIUM} is absent: apt-get install chromium)`, function () {
  this.timeout(120_000);
  let fixture: ApiFixture;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const requested: string[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      this.skip();
      return;
    }
    const url = await (await testPostgres()).createDatabase('http_docs_browser');
    fixture = await startApi(url);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
    page.on('request', (request) => requested.push(request.url()));
  });
  after(async () => {
    // skipped without Chromium: nothing was started
    if (browser as Browser | undefined) await browser.close();
    if (fixture as ApiFixture | undefined) await fixture.stop();
  });

  it('renders the reference from /docs/openapi.json and lists every endpoint', async () => {
    const response = await page.goto(`${fixture.baseUrl}/docs`);
    expect(response?.status()).to.equal(200);
    await page.locator('.opblock-summary-path').first().waitFor({ timeout: 30_000 });
    const title = (await page.locator('.info .title').first().textContent()) ?? '';
    expect(title).to.contain('SMS gateway API');

    const rendered = await Promise.all(
      (await page.locator('.opblock-summary-path').all()).map(
        async (element) => (await element.getAttribute('data-path')) ?? (await element.textContent()) ?? '',
      ),
    );
    const paths = rendered.map((path) => path.replace(/\u200b/g, ''));
    for (const endpoint of ENDPOINTS) expect(paths, endpoint).to.include(endpoint);
  });

  it('shows the five webhook events', async () => {
    const text = (await page.locator('#swagger-ui').textContent()) ?? '';
    for (const event of ['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed']) expect(text, event).to.contain(event);
  });

  it('loads everything from its own origin, with no CSP violation, script error or failed request', () => {
    const foreign = requested.filter((url) => !url.startsWith(fixture.baseUrl) && !url.startsWith('data:'));
    expect(foreign, 'requests to another origin').to.deep.equal([]);
    expect(problems).to.deep.equal([]);
  });
});
