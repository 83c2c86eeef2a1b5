import { expect } from 'chai';
import pg from 'pg';
import { ClosedConnectionError, ConnectionError, DrainingConnectionError, TimeoutError } from '@nats-io/nats-core';
import { dependencyOf, isDatabaseConnectionError } from '../../../src/libraries/errors/dependency-failure.js';
import { DependencyUnavailableError } from '../../../src/libraries/errors/internal-errors.js';

const pgError = (code: string, message: string): Error => Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code });
const socketError = (code: string): Error => Object.assign(new Error(`connect ${code} db.internal:5432`), { code });

/** `error` as the cause of `layers` errors wrapped around it, the outermost first. */
function wrapped(error: Error, layers: number): Error {
  let outer = error;
  for (let layer = 0; layer < layers; layer++) outer = new Error(`layer ${layer}`, { cause: outer });
  return outer;
}

describe('database connection errors: which pg errors mean the server is out of reach', () => {
  for (const code of ['08000', '08001', '08003', '08004', '08006', '08P01', '57P01', '57P02', '57P03']) {
    it(`when pg reports SQLSTATE ${code} (a lost, refused or ending session), then it is a connection error`, () => {
      expect(isDatabaseConnectionError(pgError(code, 'session lost'))).to.equal(true);
    });
  }

  it('when a SQLSTATE only contains a session-lost class past its start (22008, 2257P01), then it is not a connection error', () => {
    expect(isDatabaseConnectionError(pgError('22008', 'date/time field value out of range'))).to.equal(false);
    expect(isDatabaseConnectionError(pgError('2257P01', 'not a session state'))).to.equal(false);
  });

  it('when pg reports 57P04 or 57014 (the same class, but not the server going away), then it is not a connection error', () => {
    expect(isDatabaseConnectionError(pgError('57P04', 'database dropped'))).to.equal(false);
    expect(isDatabaseConnectionError(pgError('57014', 'canceling statement due to user request'))).to.equal(false);
  });

  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']) {
    it(`when the socket fails with ${code}, then it is a connection error`, () => {
      expect(isDatabaseConnectionError(socketError(code))).to.equal(true);
    });
  }

  it('when the socket fails with another code (EACCES, a lower-case econnrefused), then it is not a connection error', () => {
    expect(isDatabaseConnectionError(socketError('EACCES'))).to.equal(false);
    expect(isDatabaseConnectionError(socketError('econnrefused'))).to.equal(false);
  });

  for (const message of [
    'Connection terminated unexpectedly',
    'Connection terminated due to connection timeout',
    'Client has encountered a connection error and is not queryable',
    'timeout exceeded when trying to connect',
    'Client was closed and is not queryable',
  ]) {
    it(`when pg says "${message}" without a code, then it is a connection error`, () => {
      expect(isDatabaseConnectionError(new Error(message))).to.equal(true);
    });
  }

  it('when an error has no code and another message, then it is not a connection error', () => {
    expect(isDatabaseConnectionError(new Error('relation "messages" does not exist'))).to.equal(false);
  });

  it('when the code is not text (a list holding a session-lost state), then it is not read as a SQLSTATE', () => {
    expect(isDatabaseConnectionError(Object.assign(new Error('odd driver'), { code: ['08006'] }))).to.equal(false);
    expect(isDatabaseConnectionError(Object.assign(new Error('odd driver'), { code: 8006 }))).to.equal(false);
  });

  it('when the value thrown is not an Error, even one shaped like a connection error, then it is not a connection error', () => {
    expect(isDatabaseConnectionError({ code: 'ECONNREFUSED', message: 'Connection terminated unexpectedly' })).to.equal(false);
    expect(isDatabaseConnectionError('Connection terminated unexpectedly')).to.equal(false);
    expect(isDatabaseConnectionError(null)).to.equal(false);
  });
});

describe('dependency of a failure: which dependency an error (or one of its causes) says is out of reach', () => {
  const transportErrors: readonly (readonly [string, () => Error])[] = [
    ['ConnectionError', () => new ConnectionError('connection refused')],
    ['ClosedConnectionError', () => new ClosedConnectionError()],
    ['DrainingConnectionError', () => new DrainingConnectionError()],
    ['TimeoutError', () => new TimeoutError()],
  ];
  for (const [name, make] of transportErrors) {
    it(`when the NATS client throws a ${name}, then the transport is named`, () => {
      expect(dependencyOf(make())).to.equal('transport');
    });
  }

  it('when a dependency failure is named explicitly, then its dependency is named', () => {
    expect(dependencyOf(new DependencyUnavailableError('database', new Error('down')))).to.equal('database');
    expect(dependencyOf(new DependencyUnavailableError('transport', new Error('down')))).to.equal('transport');
  });

  it('when a dependency failure wraps a transport error, then the outer, explicit dependency is named', () => {
    expect(dependencyOf(new DependencyUnavailableError('database', new TimeoutError()))).to.equal('database');
  });

  it('when the transport error is the eighth error of the chain (seven wrappers), then it is still found', () => {
    expect(dependencyOf(wrapped(new TimeoutError(), 7))).to.equal('transport');
  });

  it('when the transport error lies deeper than eight errors, then the chain is not followed that far and none is named', () => {
    expect(dependencyOf(wrapped(new TimeoutError(), 8))).to.equal(null);
    expect(dependencyOf(wrapped(new DependencyUnavailableError('database', new Error('down')), 8))).to.equal(null);
  });

  it('when the causes form a loop, then the search ends and names none', () => {
    const first = new Error('first');
    const second = new Error('second', { cause: first });
    first.cause = second;

    expect(dependencyOf(first)).to.equal(null);
  });

  it('when a cause along the chain is not an Error, then the search stops there', () => {
    expect(dependencyOf(new Error('outer', { cause: { cause: new TimeoutError() } }))).to.equal(null);
  });

  it('when the error is not an Error, or no cause explains it, then none is named', () => {
    expect(dependencyOf('timeout')).to.equal(null);
    expect(dependencyOf(undefined)).to.equal(null);
    expect(dependencyOf(wrapped(new Error('a bug'), 3))).to.equal(null);
  });
});
