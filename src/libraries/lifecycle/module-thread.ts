import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * A worker thread running the module `name` beside `besideUrl` (a caller's `import.meta.url`): its compiled
 * JavaScript in production; from TypeScript sources (tsx), the worker registers tsx itself first, since Node 20 does
 * not carry the parent's loader into a worker.
 */
export function spawnModuleThread(besideUrl: string, name: string, workerData: unknown): Worker {
  const fromSource = besideUrl.endsWith('.ts');
  const entry = new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, besideUrl);
  if (!fromSource) return new Worker(entry, { workerData });
  // resolved here, where the package is (the worker's own base would be the working directory); its ESM build, the
  // one whose register() works when imported
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** `work`'s outcome, or 'late' when it takes longer than `ms`. */
export async function within<T>(ms: number, work: Promise<T>): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => {
      resolve('late');
    }, ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
