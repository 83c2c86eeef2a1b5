import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ActorFailureError,
  ConfigError,
  DataDirectoryInUseError,
  DeadlineExpiredError,
  DependencyUnavailableError,
  DuplicateRecordError,
  EnvironmentMismatchError,
  INTERNAL_ERRORS,
  InternalError,
  isInternalError,
  isJournalConflict,
  JournalConflictError,
  NatsNamespaceError,
  NoResponderError,
  RequestTimeoutError,
  SecretUnreadableError,
} from '../../../src/libraries/errors/internal-errors.js';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('internal errors', () => {
  const cause = new Error('connection refused');
  const cases: [InternalError, string, string][] = [
    [new ConfigError('Invalid configuration: x', 'http.port'), 'config_invalid', 'Invalid configuration: x'],
    [new ActorFailureError('wallet:mer_1', 'timeout', 'no answer'), 'actor_failure', 'wallet:mer_1: timeout: no answer'],
    [new DeadlineExpiredError('charge'), 'deadline_expired', 'deadline passed before charge'],
    [new JournalConflictError('wallet:mer_1', 7, 'sequence_taken'), 'journal_conflict', 'sequence 7 of wallet:mer_1 already written'],
    [new JournalConflictError('wallet:mer_1', 7, 'fenced'), 'journal_conflict', 'lease lost: append to wallet:mer_1@7 refused'],
    [new DuplicateRecordError('merchant mer_1'), 'duplicate_record', 'merchant mer_1 already exists'],
    [
      new DataDirectoryInUseError('/data', 42),
      'data_directory_in_use',
      'the data directory /data is in use by process 42; stop it first (PGlite serves one process)',
    ],
    [
      new EnvironmentMismatchError('production', 'sandbox'),
      'environment_mismatch',
      'this database was initialised for the sandbox environment and cannot serve production: one database serves one environment, give production a database of its own (GATEWAY_ENVIRONMENT=production, recorded: sandbox)',
    ],
    [new SecretUnreadableError('no key opens it'), 'secret_unreadable', 'no key opens it'],
    [new NatsNamespaceError('a.b', 'NATS_NAMESPACE must be short'), 'nats_namespace_invalid', 'NATS_NAMESPACE must be short, not "a.b"'],
    [new NoResponderError('gw.shard.3'), 'no_responder', 'no responder on gw.shard.3'],
    [new RequestTimeoutError('gw.shard.3'), 'request_timeout', 'request on gw.shard.3 timed out'],
    [new DependencyUnavailableError('database', cause), 'dependency_unavailable', 'database unavailable: connection refused'],
  ];
  for (const [error, kind, message] of cases) {
    it(`${error.constructor.name} is the internal error of kind ${kind}, named after its class, its message unchanged`, () => {
      expect(error).to.be.instanceOf(InternalError).and.instanceOf(Error);
      expect(error.kind).to.equal(kind);
      expect(error.name).to.equal(error.constructor.name);
      expect(error.message).to.equal(message);
      expect(isInternalError(error)).to.equal(true);
      expect(isInternalError(error, kind as keyof typeof INTERNAL_ERRORS)).to.equal(true);
    });
  }

  it('recognises errors by class and kind, never by their wording', () => {
    expect(isInternalError(new Error('deadline passed before charge'))).to.equal(false);
    expect(isInternalError(new DeadlineExpiredError('charge'), 'request_timeout')).to.equal(false);
    expect(isJournalConflict(new JournalConflictError('k', 1, 'fenced'))).to.equal(true);
    expect(isJournalConflict(new Error('lease lost: append to k@1 refused'))).to.equal(false);
    expect(new DependencyUnavailableError('transport', cause).cause).to.equal(cause);
  });

  it('every error class of the gateway (the published client aside) is an internal error of a catalogued kind, each kind of one class', () => {
    const kinds: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const relative = path.relative(SRC, file);
      if (relative.startsWith(`client${path.sep}`)) continue;
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/class (\w+) extends (\w+)/g)) {
        const [, name, base] = match;
        if (name === 'AppError' || name === 'InternalError') continue;
        if (base === 'Error' || base?.endsWith('Error')) expect(base, `${relative}: ${name}`).to.equal('InternalError');
      }
      for (const match of text.matchAll(/readonly kind = '(\w+)'/g)) kinds.push(match[1] ?? '');
    }
    expect([...kinds].sort()).to.deep.equal(Object.keys(INTERNAL_ERRORS).sort());
  });
});
