import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cleanUpAtExit } from './exit-cleanup.js';

/** Each directory `temporaryDir` made and `removeTemporaryDir` has not removed yet: what forgets it at exit. */
const made = new Map<string, () => void>();

/**
 * A new directory under the OS's temporary directory, its name starting with `prefix`, as its real path (no symbolic
 * link on the way). Removed by `removeTemporaryDir`, or by the exit cleanup if the process ends first (a run
 * interrupted by Ctrl-C).
 */
export function temporaryDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  made.set(
    dir,
    cleanUpAtExit(() => undefined, dir),
  );
  return dir;
}

/** Removes the directory and everything in it (nothing when it is gone already). */
export function removeTemporaryDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  made.get(dir)?.();
  made.delete(dir);
}
