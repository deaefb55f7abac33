import type { Worker } from 'node:worker_threads';
import { errors } from '../core/errors.js';
import { redactorFor } from '../core/redact.js';
import { asBuffer, JobAbandoned, movable, startWorkerBeside, WorkerFailed, WorkerJobs } from '../core/worker-jobs.js';
import type { CallSignal } from '../http/call-signal.js';
import { TransportError, type Upstream } from '../http/types.js';
import type { AttemptOutcome } from '../routing/failover.js';
import type { CompletionJob, CompletionJobResult } from './completion-job.js';
import type { ChatUsage } from './usage.js';

/**
 * Successful chat answers larger than this are parsed, checked, redacted and re-serialised in the
 * answer worker rather than on the main thread. That work costs 60 to 90 ms per MB on the main
 * thread (measured on answers of many choices with log probabilities: 3.9 to 5.3 s for 60 MB, the
 * parse alone 2 to 4 s),
 * so a smaller answer holds the event loop for under ~90 ms, and the answers of everyday requests
 * (a few KB) never pay the hop to the worker.
 */
export const OFF_THREAD_BYTES = 1024 * 1024;

/** A completion read and checked, as `ChatService.complete` bills and renders it. */
export interface Completion {
  /** The vendor's usage, when it reported a believable one. */
  usage: ChatUsage | undefined;
  /** Output tokens counted from the answer's messages, for an answer without usage. */
  generated(): Promise<number>;
  /** The bytes to send, `cost` (in currency units) in its `usage`. */
  render(cost: number): Buffer;
}

/** The worker that prepares large chat answers, started on the first one (core/worker-jobs.ts). */
export class LargeCompletions {
  private readonly jobs: WorkerJobs<CompletionJob, CompletionJobResult>;

  /**
   * `log` hears of each answer a worker failed on; `startWorker` starts a worker running
   * completion-worker.ts (the default), or one that stands in for it.
   */
  constructor(private readonly opts: { log?: (message: string) => void; startWorker?: () => Worker } = {}) {
    this.jobs = new WorkerJobs(opts.startWorker ?? startCompletionWorker);
  }

  /** Whether an answer is being prepared now. */
  get busy(): boolean {
    return this.jobs.busy;
  }

  /** Workers started so far: a fresh one follows each that died or was stopped. */
  get workersStarted(): number {
    return this.jobs.started;
  }

  /**
   * Prepares `raw` (moved to the worker: unusable here afterwards) from `up` for `ChatService`'s
   * failover. A client gone or past its deadline meanwhile ends the work at once (aborted, nothing
   * billed); a worker that dies fails the request as an upstream failure (502, nothing billed), since
   * another upstream's answer to the same request would likely end the same way.
   */
  async prepare(raw: Buffer, up: Upstream, signal: CallSignal | undefined): Promise<AttemptOutcome<Completion>> {
    const bytes = movable(raw);
    const size = bytes.byteLength;
    let out: CompletionJobResult;
    try {
      out = await this.jobs.run({ raw: bytes, credentials: redactorFor(up).credentials() }, [bytes.buffer], signal);
    } catch (e) {
      if (e instanceof JobAbandoned) throw new TransportError('aborted', 'the client is gone', true);
      if (!(e instanceof WorkerFailed)) throw e;
      this.opts.log?.(`chat answer of ${size} bytes from ${up.name} could not be processed: ${e.message}`);
      throw errors.upstreamError("The upstream's answer could not be processed; nothing was charged.");
    }
    if ('verdict' in out) return { ok: false, verdict: out.verdict };
    const body = asBuffer(out.body);
    const { usage, generated, cost } = out;
    return {
      ok: true,
      value: {
        usage,
        generated: () => Promise.resolve(generated),
        render: (units) => (cost ? priced(body, cost, units) : body),
      },
    };
  }

  close(): Promise<void> {
    return this.jobs.close();
  }
}

/** A worker running completion-worker.ts. */
export function startCompletionWorker(): Worker {
  return startWorkerBeside(import.meta.url, 'completion-worker');
}

/**
 * `body` with the cost written over the placeholder in place: the amount, then spaces (JSON allows
 * them after a value) to the placeholder's end. The placeholder (34 bytes) is longer than any amount
 * (`9007199254.740991` at most), so the tens of MB are not copied on the main thread.
 */
function priced(body: Buffer, cost: { at: number; length: number }, units: number): Buffer {
  const amount = Buffer.from(JSON.stringify(units));
  if (amount.length > cost.length) return Buffer.concat([body.subarray(0, cost.at), amount, body.subarray(cost.at + cost.length)]);
  amount.copy(body, cost.at);
  body.fill(0x20, cost.at + amount.length, cost.at + cost.length);
  return body;
}
