import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeThrough } from './streams.js';

/** How many streamed bytes, across all streams, between two young-generation collections. */
export const COLLECT_EVERY_BYTES = 8 * 2 ** 20;

export type Collect = () => void;

type Gc = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;
const exposedGc = (globalThis as { gc?: Gc }).gc;
/** A scavenge, when node runs with --expose-gc (as `npm start` does). */
const scavenge: Collect | null = exposedGc ? () => exposedGc({ type: 'minor' }) : null;

/** Bytes streamed since the last collection; shared by every stream of the process. */
const since = { bytes: 0 };

/** Passes chunks on unchanged, and collects every `everyBytes` passed by this and its siblings. */
class CollectingPass extends Transform {
  constructor(private readonly collect: Collect, private readonly everyBytes: number, private readonly counter: { bytes: number }) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.counter.bytes += chunk.length;
    if (this.counter.bytes >= this.everyBytes) {
      this.counter.bytes = 0;
      this.collect();
    }
    cb(null, chunk);
  }
}

/**
 * Every chunk a socket or file read hands a stream is a fresh buffer outside V8's heap, and passing
 * bytes through allocates almost nothing on the heap, so no young-generation collection comes to
 * free the chunks already written: during a long download they piled up until V8's
 * external-memory limit (~64 MB) forced a full collection (measured: RSS +40-48 MB for a 200 MB
 * video). A scavenge every 8 MB streamed frees them while they are still young, for well under a
 * millisecond each (RSS +15 MB). Without --expose-gc (another launcher, or a gateway process a
 * test spawns; the test workers themselves have it) the body is returned as it is.
 */
export function collectAsStreamed(body: Readable, collect: Collect | null = scavenge, everyBytes = COLLECT_EVERY_BYTES, counter = since): Readable {
  return collect ? pipeThrough(body, new CollectingPass(collect, everyBytes, counter)) : body;
}
