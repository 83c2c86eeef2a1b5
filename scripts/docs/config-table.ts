// Prints the configuration table of the README (npm run docs:config).
import { configurationTable } from '../../src/libraries/config/config-table.js';

process.stdout.write(`${configurationTable()}\n`);
