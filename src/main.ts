import { ConfigError, loadConfig } from './libraries/config/config.js';

/** Composition root. Reads and validates the configuration before anything connects. */
function main(): void {
  try {
    const config = loadConfig();
    process.stdout.write(`Configuration valid (${config.environment}, ${config.mode} mode). The HTTP API is not wired yet.\n`);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

main();
