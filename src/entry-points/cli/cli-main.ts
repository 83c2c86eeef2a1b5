import { EXIT, runCli } from '../../composition/cli.js';

/** Operator CLI entry (`npm run cli -- help`). runCli maps failures to exit codes; this catches what escapes it. */
function crash(error: unknown): never {
  process.stderr.write(`unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(EXIT.failure);
}

process.on('unhandledRejection', crash);
process.on('uncaughtException', crash);

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
});
// stdout and stderr are synchronous for files and pipes on Linux, so nothing written is lost
process.exit(code);
