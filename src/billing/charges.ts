import type { Micros } from '../core/money.js';
import type { Attribution, Store } from '../store/types.js';

interface Pending {
  accountId: string;
  amount: Micros;
  ref: string;
  note: string | null;
  now: number;
  by?: Attribution;
  resolve(v: 'ok' | 'duplicate'): void;
  reject(e: unknown): void;
}

/**
 * Charges from concurrent requests are written together: everything queued during one turn of
 * the event loop goes into one transaction. Each caller's promise settles only once its charge is
 * committed, so no answer leaves before it is billed; exactly-once still rests on the ledger's
 * unique (ref, kind).
 */
export class ChargeBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private writing = new Set<Promise<void>>();

  constructor(
    private readonly store: Pick<Store, 'chargeMany'>,
    private readonly maxBatch = 256,
  ) {}

  charge(accountId: string, amount: Micros, ref: string, note: string | null, now: number, by?: Attribution): Promise<'ok' | 'duplicate'> {
    return new Promise((resolve, reject) => {
      this.queue.push({ accountId, amount, ref, note, now, by, resolve, reject });
      if (this.queue.length >= this.maxBatch) this.track(this.flush());
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.track(this.flush()));
      }
    });
  }

  /**
   * Resolves once every charge queued so far is written (or failed): a shutdown waits for this, so
   * answers already billed in memory are billed in the store before the process exits.
   */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.writing.size > 0) {
      if (this.queue.length > 0) this.track(this.flush());
      await Promise.all(this.writing);
    }
  }

  private track(write: Promise<void>): void {
    this.writing.add(write);
    void write.finally(() => this.writing.delete(write));
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      const results = await this.store.chargeMany(batch);
      batch.forEach((p, i) => {
        const r = results[i];
        if (r instanceof Error) p.reject(r);
        else p.resolve(r ?? 'ok');
      });
    } catch (e) {
      for (const p of batch) p.reject(e);
    }
  }
}
