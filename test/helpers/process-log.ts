import { createWriteStream } from 'node:fs';

/**
 * Appends a process's whole output to `file`, each start opening with a line saying when and what; without a file,
 * nothing (null). The evidence a long run keeps (scripts/chaos/, docs/reliability.md).
 */
export function appendOutput(file: string | undefined, start: string): ((chunk: Buffer) => void) | null {
  if (file === undefined) return null;
  const stream = createWriteStream(file, { flags: 'a' });
  stream.on('error', () => undefined);
  stream.write(`--- ${new Date().toISOString()} ${start}\n`);
  return (chunk) => {
    stream.write(chunk);
  };
}
