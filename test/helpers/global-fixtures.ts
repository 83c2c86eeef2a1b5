import { stopSharedNats } from './nats.js';
import { stopSharedPostgres } from './postgres.js';

/** Mocha global teardown: stop the private servers the suites started. */
export async function mochaGlobalTeardown(): Promise<void> {
  await Promise.all([stopSharedPostgres(), stopSharedNats()]);
}
