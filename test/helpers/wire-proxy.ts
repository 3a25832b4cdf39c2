/**
 * A TCP proxy (node:net) in front of a MongoDB/FerretDB server that forwards the wire protocol
 * message by message and can hold chosen client messages back for a while before forwarding
 * them: a command the driver gave up on (its time bound, src/store/mongo/bounded.ts) still
 * reaches the server later, as it does on a busy machine or network. When the driver closes a
 * connection, the messages held on it are still delivered before the upstream side is closed.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { BSON, type Document } from 'mongodb';

const OP_MSG = 2013;

/** The command document (kind 0) and the kind-1 document sequence of an OP_MSG message. */
export function opMsg(msg: Buffer): { body: Document | undefined; sequence: Document[] } | undefined {
  if (msg.readInt32LE(12) !== OP_MSG) return undefined;
  const checksum = (msg.readUInt32LE(16) & 1) !== 0;
  const end = msg.length - (checksum ? 4 : 0);
  let body: Document | undefined;
  const sequence: Document[] = [];
  for (let at = 20; at < end; ) {
    const kind = msg[at++];
    const size = msg.readInt32LE(at);
    if (kind === 0) {
      body = BSON.deserialize(msg.subarray(at, at + size));
    } else {
      let doc = msg.indexOf(0, at + 4) + 1;
      while (doc < at + size) {
        const len = msg.readInt32LE(doc);
        sequence.push(BSON.deserialize(msg.subarray(doc, doc + len)));
        doc += len;
      }
    }
    at += size;
  }
  return { body, sequence };
}

/** A 'data' listener that hands on whole wire messages (each starts with its int32 length). */
export function messages(each: (msg: Buffer) => void): (chunk: Buffer) => void {
  let buffered = Buffer.alloc(0);
  return (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4 && buffered.length >= buffered.readInt32LE(0)) {
      const msg = buffered.subarray(0, buffered.readInt32LE(0));
      buffered = buffered.subarray(msg.length);
      each(msg);
    }
  };
}

/**
 * Decides, per client command, how long to hold it back (0: forward at once; below 0: never,
 * as a command lost on its way). `sequence`: the documents the driver sent beside the command
 * (e.g. the statements of an update).
 */
export type HoldPolicy = (command: Document, sequence: Document[]) => number;

export class DelayProxy {
  /** Commands held back so far. */
  held = 0;
  /** Commands never forwarded. */
  dropped = 0;
  policy: HoldPolicy = () => 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<DelayProxy> {
    const server = createServer();
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const proxy = new DelayProxy(server, (server.address() as { port: number }).port);
    server.on('connection', (client) => proxy.pipe(client, connect(target.port, target.host)));
    return proxy;
  }

  private pipe(client: Socket, upstream: Socket): void {
    this.sockets.add(client);
    this.sockets.add(upstream);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    // Messages go upstream in order; a held one holds those after it on this connection.
    let queue = Promise.resolve();
    client.on(
      'data',
      messages((msg) => {
        const parsed = opMsg(msg);
        const ms = parsed?.body ? this.policy(parsed.body, parsed.sequence) : 0;
        if (ms > 0) this.held++;
        if (ms < 0) {
          this.dropped++;
          return;
        }
        queue = queue.then(async () => {
          if (ms > 0) await new Promise((r) => setTimeout(r, ms));
          if (!upstream.destroyed) upstream.write(msg);
        });
      }),
    );
    upstream.on('data', (chunk: Buffer) => {
      if (!client.destroyed) client.write(chunk);
    });
    client.on('close', () => {
      this.sockets.delete(client);
      // What the driver sent before it gave up still reaches the server.
      void queue.then(() => setTimeout(() => upstream.destroy(), 2000));
    });
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}
