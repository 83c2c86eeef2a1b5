import type express from 'express';
import type { RequestScope } from '../../../libraries/actors/request-deadline.js';
import type { Clock } from '../../../libraries/clock/clock.js';
import type { Logger } from '../../../libraries/logger/logger.js';
import type { ForwardedRequest } from '../merchant-operations.js';
import type { UseCases } from '../../use-cases.js';
import type { HealthReport } from './health.js';

/** What the merchant API needs from the node that serves it. */
export interface HttpAppDependencies {
  readonly useCases: UseCases;
  readonly environment: 'sandbox' | 'production';
  readonly version: string;
  readonly bodyLimitBytes: number;
  readonly health: () => Promise<HealthReport>;
  readonly logger: Logger;
  /** Extra routers mounted outside the API root (documentation). */
  readonly extraRouters?: readonly express.Router[];
  /**
   * Each request's deadline: `budgetMs` after it arrives, on `clock`. No step of it starts later (503/1402,
   * nothing applied), except what finishes a decision already journaled. Absent: asks have only their own timeouts.
   */
  readonly deadline?: { readonly clock: Clock; readonly budgetMs: number };
  /** Observes each finished request (metrics); `remoteHops`: how often its work crossed to another node. */
  readonly onRequestFinished?: (sample: { route: string; method: string; status: number; seconds: number; remoteHops: number }) => void;
  /**
   * In a cluster: a request for a merchant whose shard another node owns is forwarded there whole (key check and
   * operation, one remote hop). Absent: every merchant is served here.
   */
  readonly forwarding?: {
    ownsMerchant(merchantId: string): boolean;
    /** In the request's `scope`: its deadline, and its hop count. */
    forward(merchantId: string, request: ForwardedRequest, scope: RequestScope): Promise<unknown>;
    /** A send forwarded to the owner was answered 201: the message `messageId` is `merchantId`'s. */
    messageCreated?(messageId: string, merchantId: string): void;
  };
}
