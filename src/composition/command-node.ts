import type { AgendaBackend } from 'agenda';
import { systemClock } from '../libraries/clock/clock.js';
import type { Config } from '../libraries/config/config.js';
import type { Persistence } from '../libraries/persistence/persistence.js';
import { secretBoxOf } from '../libraries/secrets/secret-keys.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import { replayDeadLetter } from '../webhooks/webhook-delivery.js';
import { createActorsAndCluster, type IncidentReport } from './actors-and-cluster.js';
import { createFollowUps, createScheduler } from './jobs.js';
import { DEFAULT_IDS } from './ids.js';
import { lifecycleOf } from './lifecycle.js';
import { createReadModels, createUseCases } from './use-cases.js';

export interface CommandNodeOptions {
  readonly config: Config;
  readonly persistence: Persistence;
  /** The database bus (embedded) or NATS (a running cluster, reached as a client); none otherwise. */
  readonly transport?: Transport;
  readonly role?: 'node' | 'client';
  /** Only for the commands that read the scheduler's jobs. */
  readonly agendaBackend?: AgendaBackend;
  readonly onIncident: IncidentReport;
}

/**
 * What an operator command runs on: the actors (or the cluster's, as a client), the use cases and their read
 * models, and the scheduler's jobs when asked for; no outbox relay, no consumers, no webhook sender, nothing
 * started. A command carries out its own work only; what it leaves in the outbox is carried out by the nodes.
 */
export function createCommandNode(options: CommandNodeOptions) {
  const { config, persistence, transport, onIncident: report } = options;
  const clock = systemClock;
  const readModels = createReadModels({ config, persistence, clock });
  const actors = createActorsAndCluster({
    config,
    persistence,
    clock,
    newEventId: DEFAULT_IDS.eventId,
    ...(transport ? { transport } : {}),
    ...(options.role ? { role: options.role } : {}),
    report,
    currencyOf: async (merchantId) => (await readModels.catalog.merchant(merchantId))?.currency ?? 'unknown',
  });
  const followUps = createFollowUps({ config, persistence, report });
  const { useCases } = createUseCases({
    config,
    router: actors.router,
    readModels,
    clock,
    ids: DEFAULT_IDS,
    secrets: secretBoxOf(config),
    requestBudgetMs: actors.requestBudgetMs,
    creationWithCharge: persistence.journal.writesCompanions,
    followUpDone: (id) => {
      followUps.doneMarker.mark(id);
    },
  });
  const { scheduler, component: schedulerComponent } = createScheduler({
    config,
    router: actors.router,
    clock,
    ...(options.agendaBackend ? { agendaBackend: options.agendaBackend } : {}),
    report,
  });
  const lifecycle = lifecycleOf([actors.components.actors, followUps.component, schedulerComponent]);
  return {
    config,
    clock,
    persistence,
    catalog: readModels.catalog,
    useCases,
    router: actors.router,
    scheduler,
    /** Operator: a dropped webhook event goes out again as a first attempt (through the nodes' transport). */
    replayDeadLetter: (id: string) =>
      transport ? replayDeadLetter({ transport, deadLetters: persistence.deadLetters, clock }, id) : Promise.resolve(false),
    /** Stops the scheduler's reader, flushes the follow-ups, stops the actors; the caller closes what it opened. */
    stop: () => lifecycle.stop(),
  };
}

export type CommandNode = ReturnType<typeof createCommandNode>;
