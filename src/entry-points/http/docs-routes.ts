import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * Where the OpenAPI document and its reference page live: outside the API root, without a key, so that every endpoint
 * under the root but health still needs one.
 */
export const DOCS_PATHS = { page: '/docs', document: '/docs/openapi.json', assets: '/docs/assets' } as const;

/** Swagger UI's prebuilt bundle, served from node_modules: no CDN, nothing fetched from another origin. */
const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const VENDOR_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui.css.map': 'application/json; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-bundle.js.map': 'application/json; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** The page's own script: no inline script, so the CSP can stay at 'self'. */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '${DOCS_PATHS.document}',
    dom_id: '#swagger-ui',
    deepLinking: true,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    validatorUrl: null
  });
});
`;

const PAGE_STYLE = `html { box-sizing: border-box; overflow-y: scroll; }
*, *::before, *::after { box-sizing: inherit; }
body { margin: 0; background: #fafafa; }
`;

const PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>SMS gateway API reference</title>
    <link rel="stylesheet" href="${DOCS_PATHS.assets}/swagger-ui.css">
    <link rel="stylesheet" href="${DOCS_PATHS.assets}/page.css">
    <link rel="icon" type="image/png" href="${DOCS_PATHS.assets}/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="${DOCS_PATHS.assets}/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <noscript>The reference needs JavaScript; the OpenAPI document itself is at <a href="${DOCS_PATHS.document}">${DOCS_PATHS.document}</a>.</noscript>
    <div id="swagger-ui"></div>
    <script src="${DOCS_PATHS.assets}/swagger-ui-bundle.js"></script>
    <script src="${DOCS_PATHS.assets}/init.js"></script>
  </body>
</html>
`;

/**
 * The page's Content-Security-Policy, replacing the app-wide one of helmet on /docs only: everything from 'self';
 * `data:` images are the icons Swagger UI's stylesheet embeds. No inline script, no eval, no other origin.
 */
export const DOCS_CSP_DIRECTIVES = {
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
} as const;

const ASSET_MAX_AGE_MS = 3_600_000;

/** GET /docs/openapi.json (the document) and GET /docs (the API reference, rendered by Swagger UI). */
export function createDocsRouter(document: object): express.Router {
  const router = express.Router({ strict: false, caseSensitive: true });
  const documentJson = JSON.stringify(document);

  router.use(DOCS_PATHS.page, helmet.contentSecurityPolicy({ useDefaults: false, directives: DOCS_CSP_DIRECTIVES }));

  router.get(DOCS_PATHS.document, (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('application/json').send(documentJson);
  });

  router.get(DOCS_PATHS.page, (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('text/html').send(PAGE);
  });

  const own =
    (type: string, body: string): RequestHandler =>
    (_req, res) => {
      res.setHeader('Cache-Control', `public, max-age=${ASSET_MAX_AGE_MS / 1000}`);
      res.type(type).send(body);
    };
  router.get(`${DOCS_PATHS.assets}/init.js`, own('text/javascript', INIT_SCRIPT));
  router.get(`${DOCS_PATHS.assets}/page.css`, own('text/css', PAGE_STYLE));

  for (const [file, type] of Object.entries(VENDOR_ASSETS)) {
    router.get(`${DOCS_PATHS.assets}/${file}`, (_req, res, next) => {
      res.sendFile(path.join(SWAGGER_UI_DIR, file), { maxAge: ASSET_MAX_AGE_MS, headers: { 'Content-Type': type } }, (error?: Error) => {
        if (error) next(error);
      });
    });
  }
  return router;
}
