import { ConnectorEnvironmentError, runConnectorProcess } from '../connector/connector-main.js';
import { loadSmppAccount, SmppAccountError } from './smpp-account.js';
import { logSmppLinkEvent } from './smpp-events.js';
import { createSmppLink } from './smpp-link.js';

/**
 * `npm run connector:smpp`: a carrier connector speaking SMPP 3.4 to one account of a message centre (docs/carriers.md).
 * The connector settings (NATS_URL, CONNECTOR_*) and the account (SMPP_*) come from the environment.
 */
await runConnectorProcess({
  kind: 'smpp',
  createLink: (env, logger) => {
    try {
      return createSmppLink(loadSmppAccount(env), {
        onEvent: (event) => {
          logSmppLinkEvent(logger, event);
        },
      });
    } catch (error) {
      if (error instanceof SmppAccountError) throw new ConnectorEnvironmentError([error.message]);
      throw error;
    }
  },
});
