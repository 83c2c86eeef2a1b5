import { NatsConnectionImpl, setTransportFactory, type ConnectionOptions, type NatsConnection } from '@nats-io/nats-core/internal';
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

/** `connect` of `@nats-io/transport-node`, with the turn-batched transport (reconnects use it too). */
export function connectNats(options: ConnectionOptions): Promise<NatsConnection> {
  setTransportFactory({ factory: () => new TurnBatchedTransport(), dnsResolveFn: nodeResolveHost });
  return NatsConnectionImpl.connect(options);
}
