import type { ActorRouter } from '../cluster/actor-router.js';
import { NO_SCOPE, type RequestScope } from '../libraries/actors/request-deadline.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import { messageStatusView, type MessageStatusView } from './message-view.js';

const MESSAGE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export type StatusOutcome = { readonly found: true; readonly view: MessageStatusView } | { readonly found: false };

/**
 * `GET /status/{message_id}`. An unknown id, a malformed one and another merchant's id take the same path and
 * give the same answer, so existence never leaks across merchants.
 */
export function createGetStatusUseCase(deps: { router: ActorRouter; directory: Directory }) {
  return async function getStatus(merchantId: string, messageId: string, scope: RequestScope = NO_SCOPE): Promise<StatusOutcome> {
    const owner = MESSAGE_ID.test(messageId) ? await deps.directory.messageOwner(messageId) : null;
    if (owner !== merchantId) return { found: false };
    const reply = await deps.router.message(merchantId, messageId).ask({ type: 'status', merchantId }, { scope });
    if (!reply.ok) return { found: false };
    return { found: true, view: messageStatusView(reply.state) };
  };
}
