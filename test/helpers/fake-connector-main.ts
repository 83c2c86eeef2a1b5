import { runConnectorProcess } from '../../src/carriers/connector/connector-main.js';
import { FakeCarrierLink } from './fake-carrier-link.js';

/** A connector process whose carrier is the fake link (every part accepted), for tests of the process entry. */
await runConnectorProcess({ kind: 'fake', createLink: (env) => new FakeCarrierLink(env.FAKE_REFERENCE_PREFIX ?? 'proc') });
