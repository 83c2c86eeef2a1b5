import { expect } from 'chai';
import Joi from 'joi';
import { loadConfig, type Config, type GatewayEnvironment } from '../../../src/libraries/config/config.js';
import type { SettingValue } from '../../../src/libraries/config/config-schema.js';

/** Whether `T`, or anything in it, is `any` (a schema leaf joi cannot type, such as a bare `Joi.array()`). */
type HasAny<T> = 0 extends 1 & T
  ? true
  : T extends readonly (infer E)[]
    ? HasAny<E>
    : T extends object
      ? true extends { [K in keyof T]-?: HasAny<T[K]> }[keyof T]
        ? true
        : false
      : false;

/**
 * Type-level tests: `Config` is computed from the schema, so there is no second declaration to drift from it. These
 * lines must not compile (`tsc --noEmit`, part of npm test, checks the directives): were `Config` to lose its keys or
 * its precise types (any), a directive would go unused and the type check fail.
 */
function typeChecks(config: Config): void {
  // @ts-expect-error: a setting the schema does not have
  const timeout: Config['http']['timeoutMs'] = 1_000;
  // @ts-expect-error: a group the schema does not have
  const { tenancy } = config;
  // @ts-expect-error: the schema's port is a number
  const port: string = config.http.port;
  // @ts-expect-error: the environments are those of the schema's `valid()`
  const staging: GatewayEnvironment = 'staging';
  // @ts-expect-error: the retry delays are read-only
  const delays: number[] = config.webhooks.retryDelaysMs;
  // @ts-expect-error: a configuration is read-only
  config.cluster.shards = 2;
  const http: Config['http'] = { host: '0.0.0.0', port: 3000, bodyLimitBytes: 1024 };
  // @ts-expect-error: a configuration missing a key of the schema (http.bodyLimitBytes)
  const partial: Config['http'] = { host: '0.0.0.0', port: 3000 };
  // @ts-expect-error: a configuration with a key the schema lacks
  const extra: Config['http'] = { host: '0.0.0.0', port: 3000, bodyLimitBytes: 1024, keepAliveMs: 5000 };
  // a leaf joi cannot type makes the configuration `any` there: the schema writes lists with `listOf`
  const typed: HasAny<Config> = false;
  // @ts-expect-error: this is what `typed` guards against
  const untyped: HasAny<SettingValue<Joi.ArraySchema>> = false;
  expect([timeout, tenancy, port, staging, delays, http, partial, extra, typed, untyped]).to.have.length(10);
}

describe('configuration type', () => {
  it('is the schema’s own: checked at compile time (see the @ts-expect-error lines)', () => {
    expect(typeChecks).to.be.a('function');
  });

  it('has, at run time, exactly the groups and keys the type names', () => {
    const config = loadConfig({ env: {} });
    const http: Record<keyof Config['http'], true> = { host: true, port: true, bodyLimitBytes: true };
    expect(Object.keys(config.http).sort()).to.deep.equal(Object.keys(http).sort());
  });
});
