import type { RequestHandler } from 'express';
import { sendData } from '../envelopes.js';
import type { HttpAppDependencies } from './dependencies.js';
import { locals, underDeadline } from './request-context.js';

/** One routed carrier: `ok` when at least one of its connectors is live; `connectors` counts the live ones. */
export interface CarrierHealth {
  readonly status: 'ok' | 'down';
  readonly connectors: number;
}

export interface HealthReport {
  /** The database and the transport answer: HTTP 200 (otherwise 503). */
  readonly healthy: boolean;
  readonly checks: {
    readonly database: 'ok' | 'down';
    readonly transport: 'ok' | 'down';
    /** By carrier slug; a carrier `down` makes the status `degraded` without making the node unhealthy. */
    readonly carriers: Readonly<Record<string, CarrierHealth>>;
    /** Only once the node is stopping (a signal): it is unhealthy from then on, so load balancers take it out. */
    readonly node?: 'stopping';
  };
}

/** `ok` only when the node is healthy and every routed carrier has a live connector. */
export const healthStatus = (report: HealthReport): 'ok' | 'degraded' =>
  report.healthy && Object.values(report.checks.carriers).every((carrier) => carrier.status === 'ok') ? 'ok' : 'degraded';

/** `GET /health`: no key, no rate limit; 200 when the node is healthy, else 503 with the same body. */
export function healthHandler(deps: Pick<HttpAppDependencies, 'health' | 'version' | 'environment' | 'deadline'>): RequestHandler {
  return (req, res, next) => {
    locals(res).route = 'health';
    underDeadline(deps.deadline, res, () => deps.health())
      .then((report) => {
        sendData(res, report.healthy ? 200 : 503, {
          status: healthStatus(report),
          version: deps.version,
          environment: deps.environment,
          checks: report.checks,
        });
      })
      .catch(next);
  };
}
