/**
 * nact's bundled typings are wrong under --strict (the persistent context lacks persist/recovering, refs are
 * structurally empty, dispatch takes two arguments). This file states what nact 7.6 really does, once, and is the
 * only place that imports it.
 */
import * as nact from 'nact';

/** Opaque nact reference. */
export interface NactRef {
  readonly __nactRef: unique symbol;
}

export interface NactSupervisionContext {
  readonly stop: symbol;
  readonly reset: symbol;
  readonly resume: symbol;
  readonly mailbox: readonly { readonly message: unknown; readonly sender: NactRef | undefined }[];
}

export interface NactPersistentContext {
  readonly self: NactRef;
  readonly recovering?: boolean;
  persist(message: unknown, tags?: string[], ...properties: unknown[]): Promise<void>;
}

export interface NactPersistedEvent {
  readonly data: unknown;
  readonly sequenceNumber: number;
  readonly key: string;
  readonly tags: readonly string[];
  readonly createdAt: number;
  readonly isDeleted: boolean;
}

export interface NactPersistedSnapshot {
  readonly data: unknown;
  readonly sequenceNumber: number;
  readonly key: string;
  readonly createdAt: number;
}

/** What nact calls on its persistence engine. `events(...)` must have a `reduce` synchronously. */
export interface NactPersistenceEngine {
  events(
    key: string,
    afterSequenceNumber: number,
  ): { reduce<T>(fn: (acc: T, event: NactPersistedEvent, index: number) => T, initial: T): Promise<T> };
  latestSnapshot(key: string): Promise<NactPersistedSnapshot | undefined>;
  takeSnapshot(snapshot: NactPersistedSnapshot): Promise<void>;
  persist(event: NactPersistedEvent, ...properties: unknown[]): Promise<void>;
}

export interface NactPersistentProperties<S> {
  readonly shutdownAfter?: number;
  readonly snapshotEvery?: number;
  readonly initialState?: S;
  readonly snapshotEncoder?: (state: S) => unknown;
  readonly snapshotDecoder?: (data: unknown) => S;
  readonly onCrash?: (message: unknown, error: unknown, context: NactSupervisionContext) => symbol | Promise<symbol>;
  readonly afterStop?: (state: S) => void;
}

type PersistentFn<S> = (this: NactPersistentContext, state: S, message: unknown, context: NactPersistentContext) => Promise<S>;

interface NactModule {
  start(...extensions: unknown[]): NactRef;
  stop(ref: NactRef): void;
  dispatch(ref: NactRef, message: unknown, sender?: NactRef): void;
  spawnPersistent<S>(parent: NactRef, fn: PersistentFn<S>, key: string, name: string, properties: NactPersistentProperties<S>): NactRef;
  configurePersistence(engine: NactPersistenceEngine): unknown;
}

const bound = nact as unknown as NactModule;

export const startNact = (engine: NactPersistenceEngine): NactRef => bound.start(bound.configurePersistence(engine));
export const stopNact = (ref: NactRef): void => {
  bound.stop(ref);
};
export const dispatchNact = (ref: NactRef, message: unknown): void => {
  bound.dispatch(ref, message);
};
export const spawnPersistentNact = <S>(
  parent: NactRef,
  fn: PersistentFn<S>,
  key: string,
  name: string,
  properties: NactPersistentProperties<S>,
): NactRef => bound.spawnPersistent(parent, fn, key, name, properties);
