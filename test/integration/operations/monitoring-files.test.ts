import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { createMetrics } from '../../../src/libraries/observability/metrics.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { dataOf, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { parseExposition, type Exposition } from '../../helpers/prometheus-text.js';
import { always, respond, startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/**
 * The monitoring files shipped in deploy/: the Prometheus alert rules (with their promtool unit tests), the example
 * Prometheus configuration and the Grafana dashboard. promtool checks the rules; a real node, after a send, serves
 * every metric the rules and the dashboard's panels name, with the labels they select and aggregate by.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const ALERTS = 'deploy/prometheus/alerts.yml';
const ALERT_TESTS = 'deploy/prometheus/alerts.test.yml';
const PROMETHEUS_CONFIG = 'deploy/prometheus/prometheus.yml';
const DASHBOARD = 'deploy/grafana/sms-gateway.json';
const JOB = 'sms-gateway';
const run = promisify(execFile);

interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
interface RuleFile {
  readonly groups: readonly { readonly name: string; readonly rules: readonly AlertRule[] }[];
}
interface PanelTarget {
  readonly expr?: string;
  readonly refId?: string;
  readonly datasource?: { readonly uid?: string };
}
interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly targets?: readonly PanelTarget[];
  readonly datasource?: { readonly type?: string; readonly uid?: string };
}
interface Dashboard {
  readonly uid: string;
  readonly title: string;
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly { readonly name: string; readonly type: string; readonly query?: unknown }[] };
}

/** promtool, which must be installed (.ci/run installs Debian's `prometheus` package when it is missing). */
async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: ROOT });
    return stdout + stderr;
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT')
      throw new Error('promtool is not installed: apt-get install prometheus (.ci/run does it when missing)', { cause: error });
    throw new Error(`promtool ${args.join(' ')} failed:\n${failure.stdout ?? ''}${failure.stderr ?? ''}`, { cause: error });
  }
}

const readText = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');
const alertRules = (): AlertRule[] => (parseYaml(readText(ALERTS)) as RuleFile).groups.flatMap((group) => group.rules);
const dashboard = (): Dashboard => JSON.parse(readText(DASHBOARD)) as Dashboard;
const dashboardPanels = (): Panel[] => dashboard().panels.filter((panel) => panel.type !== 'row');

/** Grafana's variables replaced by what they stand for, so that the expression is plain PromQL. */
function withoutVariables(expr: string): string {
  return expr.replaceAll('$__rate_interval', '5m').replaceAll('$__range', '1h').replaceAll('$job', '.+');
}

// ---------------------------------------------------------------------------------------------------------------
// PromQL, read just enough: metric names, label matchers, `by`/`without` labels

/** Strings blanked out (same length), so names and labels inside label values are not read as such. */
function blankStrings(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, (text) => `"${' '.repeat(text.length - 2)}"`);
}

/** The gateway's metric names an expression uses (identifiers starting with `sms_gateway_`). */
function metricNames(expr: string): string[] {
  return [...new Set(blankStrings(expr).match(/\bsms_gateway_[a-zA-Z0-9_:]*/g) ?? [])];
}

/** Label names the expression selects on (`{status=~"5.."}`) or aggregates by (`by (carrier)`, `without (le)`). */
function labelNames(expr: string): string[] {
  const plain = blankStrings(expr);
  const labels = new Set<string>();
  for (const selector of plain.matchAll(/\{([^}]*)\}/g)) {
    for (const matcher of selector[1]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) labels.add(matcher[1]!);
  }
  for (const grouping of plain.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)) {
    for (const label of grouping[1]!.split(',').map((l) => l.trim())) if (label !== '') labels.add(label);
  }
  return [...labels];
}

/** Labels Prometheus adds itself (target labels) or that the histogram buckets carry. */
const PROMETHEUS_LABELS = new Set(['job', 'instance', 'le']);

const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'] as const;

/** The metric family (a `# TYPE` line) a series name belongs to: itself, or a histogram's base name. */
function familyOf(exposition: Exposition, name: string): string | null {
  if (exposition.types.has(name)) return name;
  for (const suffix of HISTOGRAM_SUFFIXES) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    if (exposition.types.get(base) === 'histogram' || exposition.types.get(base) === 'summary') return base;
  }
  return null;
}

/** What an expression needs that the node does not serve: unknown names, series without samples, unknown labels. */
function missingIn(exposition: Exposition, expr: string): string[] {
  const problems: string[] = [];
  const names = metricNames(expr);
  const labelsServed = new Set<string>(PROMETHEUS_LABELS);
  for (const name of names) {
    const family = familyOf(exposition, name);
    if (family === null) {
      problems.push(`${name}: no such metric on /metrics`);
      continue;
    }
    const samples = exposition.samples.filter((sample) => sample.name === name);
    if (samples.length === 0) problems.push(`${name}: no sample on /metrics`);
    for (const sample of samples) for (const label of Object.keys(sample.labels)) labelsServed.add(label);
  }
  for (const label of labelNames(expr))
    if (!labelsServed.has(label)) problems.push(`label ${label}: on none of ${names.join(', ') || '(no metric)'}`);
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------

describe('monitoring files: Prometheus alert rules and configuration, Grafana dashboard', function () {
  this.timeout(120_000);

  describe('the files', () => {
    it('promtool accepts the alert rules, and their unit tests pass', async () => {
      expect(await promtool('check', 'rules', ALERTS)).to.include('SUCCESS');
      expect(await promtool('test', 'rules', ALERT_TESTS)).to.include('SUCCESS');
    });

    it('promtool accepts the example configuration, which scrapes the job the rules select and loads the rules', async () => {
      expect(await promtool('check', 'config', PROMETHEUS_CONFIG)).to.include('SUCCESS');
      const config = parseYaml(readText(PROMETHEUS_CONFIG)) as {
        rule_files: string[];
        scrape_configs: { job_name: string; metrics_path?: string }[];
      };
      expect(config.rule_files).to.deep.equal([path.basename(ALERTS)]);
      expect(config.scrape_configs.map((scrape) => [scrape.job_name, scrape.metrics_path])).to.deep.equal([[JOB, '/metrics']]);
      const nodeDown = alertRules().find((rule) => rule.alert === 'SmsGatewayNodeDown');
      expect(nodeDown?.expr).to.equal(`up{job="${JOB}"} == 0`);
    });

    it('every alert has an expression, a duration, a severity, a summary and a description', () => {
      const rules = alertRules();
      expect(rules.map((rule) => rule.alert)).to.have.members([
        'SmsGatewayNodeDown',
        'SmsGatewayEventLoopLag',
        'SmsGatewayHttp5xxRate',
        'SmsGatewayShardWithoutOwner',
        'SmsGatewayOutboxBacklogGrowing',
        'SmsGatewayWebhookDeadLetters',
        'SmsGatewayReceiptTimeoutsRising',
        'SmsGatewayCarrierWithoutConnector',
      ]);
      for (const rule of rules) {
        expect(rule.expr, rule.alert).to.be.a('string').and.not.equal('');
        expect(rule.for, rule.alert).to.match(/^\d+[smh]$/);
        expect(rule.labels?.severity, rule.alert).to.be.oneOf(['critical', 'warning']);
        expect(rule.annotations?.summary, rule.alert).to.be.a('string').and.not.equal('');
        expect(rule.annotations?.description, rule.alert).to.be.a('string').and.not.equal('');
      }
    });

    it('the dashboard is JSON with a Prometheus datasource variable, and every panel has a target on it', () => {
      const board = dashboard();
      expect(board.uid).to.equal('sms-gateway');
      expect(board.templating.list.find((variable) => variable.name === 'datasource')).to.include({
        type: 'datasource',
        query: 'prometheus',
      });
      const panels = dashboardPanels();
      expect(panels.length).to.be.at.least(8);
      for (const panel of panels) {
        expect(panel.targets, panel.title).to.be.an('array').that.is.not.empty;
        expect(panel.datasource?.uid, panel.title).to.equal('${datasource}');
        for (const target of panel.targets ?? [])
          expect(target.expr, `${panel.title} ${String(target.refId)}`)
            .to.be.a('string')
            .and.not.equal('');
      }
      expect(panels.map((panel) => panel.title)).to.include.members([
        'Sends',
        'Recipients by status',
        'HTTP latency',
        'Outbox backlog',
        'Webhooks',
        'Shards',
        'Live connectors per carrier',
        'Dispatch backlog per carrier',
        'Money charged and refunded per hour',
      ]);
    });

    it('the Grafana provisioning files load the dashboard from files and a Prometheus datasource', () => {
      const provider = parseYaml(readText('deploy/grafana/provisioning/dashboards/sms-gateway.yml')) as {
        apiVersion: number;
        providers: { type: string; options: { path: string } }[];
      };
      const datasources = parseYaml(readText('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
        apiVersion: number;
        datasources: { type: string; isDefault: boolean }[];
      };
      expect(provider.apiVersion).to.equal(1);
      expect(provider.providers.map((p) => p.type)).to.deep.equal(['file']);
      expect(provider.providers[0]?.options.path).to.be.a('string').and.not.equal('');
      expect(datasources.datasources.map((d) => [d.type, d.isDefault])).to.deep.equal([['prometheus', true]]);
    });

    it("promtool parses every panel's query (Grafana's variables replaced)", async () => {
      const rules = dashboardPanels().flatMap((panel) =>
        (panel.targets ?? []).map((target) => ({
          record: `dashboard:panel_${String(panel.id)}:${target.refId ?? 'A'}`,
          expr: withoutVariables(target.expr ?? ''),
        })),
      );
      const dir = temporaryDir('gw-dashboard-');
      try {
        const file = path.join(dir, 'dashboard-queries.yml');
        writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard', rules }] }));
        expect(await promtool('check', 'rules', file)).to.include(`SUCCESS: ${String(rules.length)} rules found`);
      } finally {
        removeTemporaryDir(dir);
      }
    });

    it('the PromQL reader finds names, labels and histogram families', () => {
      const expr =
        'histogram_quantile(0.99, sum by (le, route) (rate(sms_gateway_http_request_duration_seconds_bucket{job=~"$job", status="sms_gateway_x"}[5m])))';
      expect(metricNames(expr)).to.deep.equal(['sms_gateway_http_request_duration_seconds_bucket']);
      expect(labelNames(expr)).to.have.members(['job', 'status', 'le', 'route']);
      const exposition = parseExposition(
        '# TYPE sms_gateway_h histogram\nsms_gateway_h_bucket{le="+Inf"} 1\n# TYPE sms_gateway_c_total counter\nsms_gateway_c_total 2\n',
      );
      expect(familyOf(exposition, 'sms_gateway_h_bucket')).to.equal('sms_gateway_h');
      expect(familyOf(exposition, 'sms_gateway_c_total')).to.equal('sms_gateway_c_total');
      expect(familyOf(exposition, 'sms_gateway_c')).to.equal(null);
      expect(missingIn(exposition, 'sum by (carrier) (sms_gateway_c_total) + sms_gateway_nope')).to.deep.equal([
        'sms_gateway_nope: no such metric on /metrics',
        'label carrier: on none of sms_gateway_c_total, sms_gateway_nope',
      ]);
    });
  });

  describe('a running node serves what they name', () => {
    let nats: TestNats;
    let transport: Transport;
    let fixture: ApiFixture;
    let rejecting: WebhookReceiver;
    let exposition: Exposition;

    before(async function () {
      this.timeout(120_000);
      // Arrange: a server-mode node on NATS (the carrier gauges read the dispatch backlog there) with the in-process
      // simulator, and a merchant whose webhook endpoint answers 410 (its events become dead letters)
      nats = await startTestNats();
      transport = await connectNatsTransport({ servers: nats.url, name: 'monitoring-files' });
      fixture = await startApi(await (await testPostgres()).createDatabase('monitoring_files'), {
        metrics: createMetrics(),
        transport,
        inProcessSimulator: true,
        config: { nats: { url: nats.url } },
      });
      rejecting = await startWebhookReceiver({ path: '/gone', behaviour: always(respond(410)) });
      const gateway = fixture.node.gateway;
      const shop = await seedMerchant(gateway, { name: 'Monitored shop', prepaid: '10' });
      await gateway.useCases.apiKeys.setWebhook(shop.keyId, { url: rejecting.url, username: null, password: null });

      // Act: a scheduled send for tomorrow, cancelled (a refund); a send the simulator delivers, until its events
      // are dead letters
      const tomorrow = new Date(Date.now() + 24 * 3_600_000).toISOString().slice(0, 10);
      const scheduled = dataOf<SendData>(
        await call(`${fixture.api}/send`, {
          method: 'POST',
          key: shop.apiKey,
          json: {
            to: ['+243812345612'],
            message: 'later',
            sending_type: 'scheduled',
            scheduled_dates: [{ date: tomorrow, time: '12:00' }],
          },
        }),
        201,
      );
      expect((await call(`${fixture.api}/cancel/${scheduled.message_id}`, { method: 'DELETE', key: shop.apiKey })).status).to.equal(200);
      const sent = dataOf<SendData>(
        await call(`${fixture.api}/send`, { method: 'POST', key: shop.apiKey, json: { to: ['+243812345612'], message: 'monitored' } }),
        201,
      );
      await eventually(
        async () =>
          ((await call(`${fixture.api}/status/${sent.message_id}`, { key: shop.apiKey })).body as { data: { delivered: number } }).data
            .delivered === 1,
        30_000,
        'the recipient delivered',
      );
      await eventually(
        async () => (await gateway.persistence.deadLetters.list({ merchantId: shop.merchantId, limit: 10 })).length >= 1,
        30_000,
        'a dead letter',
      );

      const response = await fetch(`http://127.0.0.1:${String(fixture.node.operator?.port)}/metrics`);
      expect(response.status).to.equal(200);
      exposition = parseExposition(await response.text());
    });

    after(async () => {
      await (fixture as ApiFixture | undefined)?.stop();
      await (transport as Transport | undefined)?.close();
      await (rejecting as WebhookReceiver | undefined)?.close();
      await (nats as TestNats | undefined)?.stop();
    });

    it("every metric and label of the alert rules' expressions is on /metrics", () => {
      const rules = alertRules();
      const problems = rules.flatMap((rule) => missingIn(exposition, rule.expr).map((problem) => `${rule.alert}: ${problem}`));

      expect(problems).to.deep.equal([]);
      // the event loop lag is prom-client's default metric under the gateway's prefix
      expect(rules.flatMap((rule) => metricNames(rule.expr))).to.include.members([
        'sms_gateway_nodejs_eventloop_lag_p99_seconds',
        'sms_gateway_cluster_shards',
        'sms_gateway_receipt_timeouts_total',
      ]);
    });

    it("every metric and label of the dashboard panels' queries is on /metrics", () => {
      const panels = dashboardPanels();
      const problems = panels.flatMap((panel) =>
        (panel.targets ?? []).flatMap((target) =>
          missingIn(exposition, withoutVariables(target.expr ?? '')).map((problem) => `${panel.title} ${String(target.refId)}: ${problem}`),
        ),
      );

      expect(problems).to.deep.equal([]);
      const named = new Set(panels.flatMap((panel) => (panel.targets ?? []).flatMap((target) => metricNames(target.expr ?? ''))));
      expect([...named]).to.include.members([
        'sms_gateway_messages_created_total',
        'sms_gateway_recipient_transitions_total',
        'sms_gateway_http_request_duration_seconds_bucket',
        'sms_gateway_outbox_backlog',
        'sms_gateway_webhook_attempts_total',
        'sms_gateway_webhook_dropped_total',
        'sms_gateway_webhook_batches_total',
        'sms_gateway_shard_owned',
        'sms_gateway_cluster_shards',
        'sms_gateway_carrier_connectors_live',
        'sms_gateway_carrier_dispatch_backlog',
        'sms_gateway_charged_amount_ten_thousandths_total',
      ]);
    });

    it("the dashboard's job variable reads a metric every node serves", () => {
      const job = dashboard().templating.list.find((variable) => variable.name === 'job');
      const names = metricNames((job?.query as { query: string }).query);
      expect(names).to.have.length(1);
      expect(missingIn(exposition, names[0]!)).to.deep.equal([]);
    });
  });
});
