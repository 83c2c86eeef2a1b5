/** A part of the node that is started and stopped with it; either step may be absent. */
export interface Component {
  /** For the logs of a failed stop. */
  readonly name: string;
  start?(): Promise<void> | void;
  /** Safe to call whether or not the part was started (a node may be stopped without being started). */
  stop?(): Promise<void> | void;
}

export interface Lifecycle {
  /**
   * Starts the parts in order; when one fails, stops it (it may have started half-way) and those started before it,
   * in reverse, and rethrows.
   */
  start(): Promise<void>;
  /**
   * Stops, in reverse order, every part not stopped yet (started or not): each at most once, the later ones even
   * when an earlier stop fails; the first failure is rethrown at the end.
   */
  stop(): Promise<void>;
}

/** Start in order, stop in reverse, and stop what was started when a later start fails. */
export function lifecycleOf(components: readonly Component[], onStopFailed?: (name: string, error: unknown) => void): Lifecycle {
  const stopped = new Set<Component>();

  async function stopAll(parts: readonly Component[]): Promise<unknown[]> {
    const failures: unknown[] = [];
    for (const part of [...parts].reverse()) {
      if (stopped.has(part)) continue;
      stopped.add(part);
      try {
        await part.stop?.();
      } catch (error) {
        onStopFailed?.(part.name, error);
        failures.push(error);
      }
    }
    return failures;
  }

  return {
    async start() {
      for (const [index, part] of components.entries()) {
        try {
          await part.start?.();
        } catch (error) {
          await stopAll(components.slice(0, index + 1));
          throw error;
        }
      }
    },
    async stop() {
      const failures = await stopAll(components);
      if (failures.length === 1) throw failures[0];
      if (failures.length > 1) throw new AggregateError(failures, 'several parts failed to stop');
    },
  };
}
