/** The printed report of a chaos run: the load, each fault and its recovery, each verification with its evidence. */
import { readFileSync } from 'node:fs';
import { FAULT_DESCRIPTIONS, type FaultName } from './chaos-profiles.js';
import type { ChaosResult } from './chaos-run.js';

/** The CPU model as /proc/cpuinfo names it, and how many. */
export function machineLine(): string {
  let models: string[] = [];
  try {
    models = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('model name'))
      .map((line) => line.split(':')[1]?.trim() ?? '');
  } catch {
    // not Linux
  }
  return `${models.length} × ${models[0] ?? 'unknown CPU'}, Node ${process.version}`;
}

const ms = (value: number | null): string => (value === null ? 'never' : `${(value / 1000).toFixed(1)} s`);

export function formatReport(result: ChaosResult, command: string): string {
  const lines: string[] = [];
  const records = result.evidence.records;
  const outcomes = new Map<string, number>();
  for (const record of records)
    for (const a of record.attempts) outcomes.set(String(a.outcome), (outcomes.get(String(a.outcome)) ?? 0) + 1);
  const byKind = (kind: string): number => records.filter((r) => r.kind === kind).length;
  lines.push(
    `Chaos run ${result.runId}, profile ${result.profile.name}: ${((result.endedAt - result.startedAt) / 1000).toFixed(0)} s wall time`,
  );
  lines.push(`Machine: ${machineLine()}`);
  lines.push(`Command: ${command}`);
  lines.push(
    `Load: ${records.length} sends at ${result.profile.ratePerSecond}/s over ${result.profile.merchants} merchants and ${result.profile.nodes} nodes ` +
      `(${byKind('immediate')} immediate, ${byKind('multi')} multi-recipient, ${byKind('scheduled')} scheduled of which ${records.filter((r) => r.cancel).length} cancelled; ` +
      `${records.filter((r) => r.idempotencyKey).length} with an Idempotency-Key), ${records.filter((r) => r.accepted).length} accepted`,
  );
  lines.push(`Answers to POST /send: ${[...outcomes].map(([o, n]) => `${o} × ${n}`).join(', ')}`);
  lines.push('');
  lines.push("Faults (recovery counted from the fault's end):");
  lines.push('  fault              round target       lasted   first 201  all merchants  health ok  first dispatch');
  for (const f of result.faults) {
    lines.push(
      `  ${f.name.padEnd(18)} ${String(f.round).padEnd(5)} ${f.target.padEnd(12)} ${ms(f.endedAt - f.startedAt).padStart(7)}  ${ms(f.firstSendMs).padStart(9)}  ${ms(f.allMerchantsMs).padStart(13)}  ${ms(f.healthOkMs).padStart(9)}  ${f.name === 'simulator-kill' ? ms(f.firstDispatchMs).padStart(14) : ''}`,
    );
  }
  for (const name of new Set(result.faults.map((f) => f.name))) lines.push(`  ${name}: ${FAULT_DESCRIPTIONS[name as FaultName]}`);
  lines.push('');
  lines.push(
    `Webhooks: ${result.webhooks.expected} terminal events expected, ${result.webhooks.missing} missing; ${result.webhooks.deliveries} deliveries of ` +
      `${result.webhooks.distinctEvents} distinct events, duplicate rate ${(result.webhooks.duplicateRate * 100).toFixed(2)} %`,
  );
  lines.push('');
  lines.push('Verifications:');
  for (const v of result.verifications) {
    lines.push(`  ${v.ok ? 'PASS' : 'FAIL'}  ${v.name}: ${v.summary}`);
    // failures open with the fault they fall in ("[during nats-kill#1] ..."): how many each
    const byFault = new Map<string, number>();
    for (const failure of v.failures) {
      const label = /^\[([^\]]+)\]/.exec(failure)?.[1];
      if (label) byFault.set(label, (byFault.get(label) ?? 0) + 1);
    }
    if (byFault.size > 0) lines.push(`        by fault: ${[...byFault].map(([label, n]) => `${label} × ${n}`).join(', ')}`);
    for (const failure of v.failures.slice(0, 8)) lines.push(`        - ${failure}`);
    if (v.failures.length > 8) lines.push(`        … and ${v.failures.length - 8} more`);
  }
  const failed = result.verifications.filter((v) => !v.ok).length;
  lines.push('');
  lines.push(failed === 0 ? 'All verifications passed.' : `${failed} verification(s) failed.`);
  if (result.logDir !== null) lines.push(`Logs of every process (nodes, simulator, nats-server, PostgreSQL): ${result.logDir}`);
  return lines.join('\n');
}
