/** Webhook events given up on (a 4xx answer, retries exhausted, a refused address): kept for operators to replay. */
export interface DeadLetter {
  /** The delivery job id: `<event_id>:<target>`. */
  readonly id: string;
  readonly eventId: string;
  readonly merchantId: string;
  readonly keyId: string;
  readonly url: string;
  readonly auth: 'key' | 'none';
  readonly event: unknown;
  readonly attempts: number;
  readonly reason: 'rejected' | 'retries_exhausted' | 'refused_address';
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly droppedAt: number;
}

export interface DeadLetters {
  /** Idempotent per id (a redelivered drop records once). */
  record(letter: DeadLetter): Promise<void>;
  list(options: { readonly merchantId?: string; readonly limit: number }): Promise<readonly DeadLetter[]>;
  /** Removes and returns a letter, for replay. */
  take(id: string): Promise<DeadLetter | null>;
}
