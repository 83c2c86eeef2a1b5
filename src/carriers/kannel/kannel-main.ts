import { ConnectorEnvironmentError, runConnectorProcess } from '../connector/connector-main.js';
import { createKannelLink } from './kannel-link.js';
import { KannelSettingsError, loadKannelSettings } from './kannel-settings.js';

/**
 * `npm run connector:kannel`: a carrier connector submitting through a Kannel smsbox's sendsms interface and taking
 * Kannel's delivery reports on its own listener (docs/carriers.md). The connector settings (NATS_URL, CONNECTOR_*)
 * and Kannel's (KANNEL_*) come from the environment.
 */
await runConnectorProcess({
  kind: 'kannel',
  createLink: (env, logger) => {
    try {
      return createKannelLink(loadKannelSettings(env), { logger });
    } catch (error) {
      if (error instanceof KannelSettingsError) throw new ConnectorEnvironmentError([error.message]);
      throw error;
    }
  },
});
