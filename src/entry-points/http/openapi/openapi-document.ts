import type { ErrorName } from '../../../libraries/errors/error-catalogue.js';
import type { JsonSchema } from '../joi-json-schema.js';

// The shape of the OpenAPI 3.1 document of the merchant API, as buildOpenApiDocument writes it.

export type JsonObject = { readonly [key: string]: unknown };

export interface OpenApiServer {
  readonly url: string;
  readonly description?: string;
  readonly variables?: Readonly<
    Record<string, { readonly default: string; readonly enum?: readonly string[]; readonly description?: string }>
  >;
}

export interface OpenApiOptions {
  /** `info.version`: the gateway's version (config `version`). */
  readonly version: string;
  /** Defaults to the API root on the host that serves the document. */
  readonly servers?: readonly OpenApiServer[];
}

export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: JsonObject;
  readonly servers: readonly OpenApiServer[];
  readonly tags: readonly JsonObject[];
  readonly paths: Readonly<Record<string, Readonly<Record<string, JsonObject>>>>;
  readonly webhooks: Readonly<Record<string, Readonly<Record<string, JsonObject>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly responses: Readonly<Record<string, JsonObject>>;
    readonly parameters: Readonly<Record<string, JsonObject>>;
    readonly headers: Readonly<Record<string, JsonObject>>;
    readonly securitySchemes: Readonly<Record<string, JsonObject>>;
  };
  readonly 'x-error-codes': readonly ErrorCodeEntry[];
}

export interface ErrorCodeEntry {
  readonly code: string;
  readonly name: ErrorName;
  /** null: carrier-level code, carried by `sms.failed` events and `GET /status` recipients, never an HTTP status. */
  readonly http_status: number | null;
  readonly delivered_as: 'service-error envelope' | 'sms.failed event and GET /status recipient';
  readonly message: string;
}
