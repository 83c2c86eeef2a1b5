import { ERROR_CATALOGUE, type CatalogueEntry } from './error-catalogue.js';

const HOW_IT_REACHES_YOU: Readonly<Record<CatalogueEntry['envelope'], string>> = {
  service: 'HTTP error envelope',
  event: '`sms.failed` event and the recipient in `GET /status`',
};

/**
 * The error table of docs/api-guide.md, generated from the catalogue (`npm run docs:errors`): code, name, HTTP
 * status, how the code reaches a merchant and the catalogue's own message. A test keeps the guide equal to it.
 */
export function errorCatalogueTable(): string {
  const rows = Object.entries(ERROR_CATALOGUE).map(([name, entry]: [string, CatalogueEntry]) => {
    const status = entry.httpStatus === null ? '—' : String(entry.httpStatus);
    return `| ${entry.code} | ${name} | ${status} | ${HOW_IT_REACHES_YOU[entry.envelope]} | ${entry.message} |`;
  });
  return ['| error_code | Name | HTTP | Reaches you as | Message |', '|---|---|---|---|---|', ...rows].join('\n');
}
