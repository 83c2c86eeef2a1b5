import type { RequestListener } from 'node:http';
import express, { type Request, type Response } from 'express';
import helmet from 'helmet';
import { createMerchantAuthentication } from './app/authentication.js';
import type { HttpAppDependencies } from './app/dependencies.js';
import { errorEnvelope, refuseOptions, unmatched, unroutedAnswer } from './app/fallbacks.js';
import { createMerchantRouter } from './app/merchant-router.js';
import { requestLine, takeMalformedPathLiterally } from './app/request-context.js';
import { API_ROOT } from './routes.js';

/**
 * The merchant API: security headers and the request line first, then the routes of ROUTES under the API root
 * (app/merchant-router.ts), the extra routers, and the contract's answers for everything else (app/fallbacks.ts).
 */
export function createHttpApp(deps: HttpAppDependencies): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(helmet());
  app.use(requestLine(deps));

  const authentication = createMerchantAuthentication(deps);
  app.use(takeMalformedPathLiterally);
  app.use(refuseOptions);
  app.use(API_ROOT, createMerchantRouter(deps, authentication));
  for (const router of deps.extraRouters ?? []) app.use(router);
  app.use(unmatched);
  app.use(errorEnvelope(deps.bodyLimitBytes, authentication.refuse));

  const unrouted = unroutedAnswer(deps);
  return (req, res) => {
    // what an http server hands its listener; Express takes it as its own request and response
    app(req as Request, res as Response, (error?: unknown) => {
      unrouted(req, res, error);
    });
  };
}
