// Prints the error table of docs/api-guide.md (npm run docs:errors).
import { errorCatalogueTable } from '../../src/libraries/errors/error-catalogue-table.js';

process.stdout.write(`${errorCatalogueTable()}\n`);
