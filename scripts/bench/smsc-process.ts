/**
 * The test message centre (test/helpers/test-smsc.ts) in its own process, for bench:smpp: its CPU is not the
 * connector's nor the node's. Every part is accepted at once and receipted DELIVRD after SMSC_RECEIPT_DELAY_MS
 * (default 10). Prints `{"port":…}` on stdout once listening; over IPC (when run with one) it answers `cpu` with its
 * own CPU time and `counts` with what it saw. Stops on SIGTERM or when the parent goes away.
 */
import { startTestSmsc } from '../../test/helpers/test-smsc.js';

export type SmscRequest = { readonly kind: 'cpu' } | { readonly kind: 'counts' };
export type SmscReply =
  | { readonly kind: 'cpu'; readonly ms: number }
  | {
      readonly kind: 'counts';
      readonly submits: number;
      readonly throttled: number;
      readonly answeredReceipts: number;
      readonly binds: number;
    };

const receiptDelayMs = Number(process.env.SMSC_RECEIPT_DELAY_MS ?? 10);
const smsc = await startTestSmsc({ receiptDelayMs });
process.stdout.write(`${JSON.stringify({ port: smsc.port })}\n`);

process.on('message', (request: SmscRequest) => {
  if (request.kind === 'cpu') {
    const used = process.cpuUsage();
    process.send?.({ kind: 'cpu', ms: (used.user + used.system) / 1000 } satisfies SmscReply);
  } else {
    process.send?.({
      kind: 'counts',
      submits: smsc.submits.length,
      throttled: smsc.throttled(),
      answeredReceipts: smsc.answeredReceipts(),
      binds: smsc.binds(),
    } satisfies SmscReply);
  }
});

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void smsc.stop().finally(() => {
    process.exit(0);
  });
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop);
