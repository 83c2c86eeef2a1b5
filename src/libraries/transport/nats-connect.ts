import {
  NatsConnectionImpl,
  RequestError,
  RequestOne,
  setTransportFactory,
  type ConnectionOptions,
  type NatsConnection,
} from '@nats-io/nats-core/internal';
import { NodeTransport, nodeResolveHost } from '@nats-io/transport-node/lib/node_transport.js';

/**
 * The Node transport, with its writes gathered per turn of the event loop.
 *
 * The client writes its outbound buffer to the socket at the end of every microtask that added to it, so under load
 * each ack, publish and pull is its own `write` system call (a fifth of the node's CPU in `bench:pipeline`, and as
 * many reads on the server's side). Corking the socket at the first frame of a turn and uncorking it when the turn's
 * I/O callbacks are done sends everything the turn produced as one `writev`, in the same order; a frame waits at most
 * until the end of the current turn.
 */
class TurnBatchedTransport extends NodeTransport {
  private corked = false;

  override send(frame: Uint8Array): void {
    const socket = this.socket as NodeTransport['socket'] | undefined;
    if (!this.corked && socket !== undefined && !socket.destroyed) {
      this.corked = true;
      socket.cork();
      setImmediate(() => {
        this.corked = false;
        socket.uncork();
      });
    }
    super.send(frame);
  }
}

/** Requests whose answer (or failure) has been given: their closing `cancel` rejects nothing any more. */
const answered = new WeakSet<RequestOne>();
/** What such a `cancel` hands the settled promise instead of a new error: one instance, made once, never seen. */
const ALREADY_ANSWERED = new RequestError('cancelled after its answer');
let requestsMended = false;

/**
 * Every request (each JetStream publish and KV operation is one) ends with the client's `RequestOne.resolver`
 * calling `cancel()`, which builds a `RequestError` (a stack trace) to reject a promise the answer has just settled:
 * rejecting it again does nothing, so the error is never seen, but building it costs a tenth of a connector's CPU
 * under load. After an answer, `cancel` gets one error made at load instead. A `cancel` before any answer (a caller
 * giving up, the connection closing) is the client's own, unchanged. The test of this module checks both paths
 * against the installed client, so an upgrade that changes them fails there.
 */
function mendRequestCancel(): void {
  if (requestsMended) return;
  requestsMended = true;
  const prototype = RequestOne.prototype;
  // the client's own methods, called below with the request they belong to
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const { resolver: resolve, cancel } = prototype;
  prototype.resolver = function (this: RequestOne, ...args: Parameters<RequestOne['resolver']>): void {
    answered.add(this);
    resolve.apply(this, args);
  };
  prototype.cancel = function (this: RequestOne, error?: Error): void {
    cancel.call(this, error ?? (answered.has(this) ? ALREADY_ANSWERED : undefined));
  };
}

/** `connect` of `@nats-io/transport-node`, with the turn-batched transport (reconnects use it too). */
export function connectNats(options: ConnectionOptions): Promise<NatsConnection> {
  mendRequestCancel();
  setTransportFactory({ factory: () => new TurnBatchedTransport(), dnsResolveFn: nodeResolveHost });
  return NatsConnectionImpl.connect(options);
}
