import type { RateBucket } from '../../api-keys/rate-limiter.js';

export const API_ROOT = '/api/v1/messaging/sms-api';

export type HttpMethod = 'get' | 'post' | 'delete';

/** Every route of the merchant API, in one table: the router, the 404/405 logic and the OpenAPI check read it. */
export const ROUTES = [
  { name: 'health', method: 'get', path: '/health', bucket: null, body: false },
  { name: 'send', method: 'post', path: '/send', bucket: 'send', body: true },
  { name: 'status', method: 'get', path: '/status/:messageId', bucket: 'status', body: false },
  { name: 'balance', method: 'get', path: '/balance', bucket: 'balance', body: false },
  { name: 'calculate', method: 'post', path: '/calculate', bucket: 'calculate', body: true },
  { name: 'cancel', method: 'delete', path: '/cancel/:messageId', bucket: 'management', body: false },
  { name: 'pause', method: 'post', path: '/pause/:messageId', bucket: 'management', body: false },
  { name: 'resume', method: 'post', path: '/resume/:messageId', bucket: 'management', body: false },
] as const satisfies readonly { name: string; method: HttpMethod; path: string; bucket: RateBucket | null; body: boolean }[];

export type RouteName = (typeof ROUTES)[number]['name'];

const patterns = ROUTES.map((route) => ({
  route,
  regex: new RegExp(`^${API_ROOT}${route.path.replace(/:[A-Za-z]+/g, '[^/]+')}/?$`),
}));

/** Methods allowed on a path, for 405 answers; empty when no route has this path. */
export function allowedMethods(path: string): string[] {
  return [...new Set(patterns.filter((p) => p.regex.test(path)).map((p) => p.route.method.toUpperCase()))];
}
