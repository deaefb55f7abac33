import { randomBytes } from 'node:crypto';
import type { LimitDecision } from './decision.js';
import type { LimitScope } from './types.js';
import { WINDOW_SECONDS } from './window.js';

/** Most operations (admissions and corrections) in one script call; more in one turn go as further calls. */
export const MAX_BATCH = 128;

/**
 * How long an operation that nobody waits on (a token correction) may wait for an admission of its
 * family to share a script call with, before it goes on its own. At one connection the next request's
 * admission comes a fraction of a millisecond after an answer's correction, and under load many times
 * a millisecond, so nearly every correction rides along and a request costs one Redis call instead of
 * two. The shared windows learn of a correction this much later at most (docs/architecture.md).
 */
export const CORRECTION_WAIT_MS = 10;

/**
 * Work queued during one event-loop turn, handed over in one piece when the turn ends
 * (`setImmediate`): requests whose sockets became readable in the same poll phase share one Redis
 * call instead of one each. Nothing a caller waits on waits longer than the rest of its turn, and a
 * request alone in its turn goes out as a batch of one. An item pushed as one that can wait (nobody
 * waits on its answer) stays queued until its group sends something anyway, or `maxWaitMs` passed.
 * Groups keep apart what must not share a call (each limit family has its own Redis Cluster hash
 * slot); within a group the order of `push` is kept.
 */
export class TurnQueue<Item> {
  private pending = new Map<string, Item[]>();
  /** Groups holding an item that must go at the end of this turn. */
  private due = new Set<string>();
  private scheduled = false;
  private waitTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly send: (group: string, items: Item[]) => void,
    private readonly maxBatch = MAX_BATCH,
    private readonly maxWaitMs = CORRECTION_WAIT_MS,
  ) {}

  push(group: string, item: Item, canWait = false): void {
    let items = this.pending.get(group);
    if (!items) {
      items = [];
      this.pending.set(group, items);
    }
    items.push(item);
    if (canWait) {
      this.waitTimer ??= setTimeout(this.flushAll, this.maxWaitMs);
      return;
    }
    this.due.add(group);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flushDue);
  }

  /** Sends everything queued now, waiting items included (at shutdown). */
  readonly flushAll = (): void => {
    clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
    this.due.clear();
    const pending = this.pending;
    this.pending = new Map();
    for (const [group, items] of pending) this.sendGroup(group, items);
  };

  private readonly flushDue = (): void => {
    this.scheduled = false;
    for (const group of this.due) {
      const items = this.pending.get(group);
      this.pending.delete(group);
      if (items) this.sendGroup(group, items);
    }
    this.due.clear();
    if (this.pending.size === 0 && this.waitTimer) {
      clearTimeout(this.waitTimer);
      this.waitTimer = undefined;
    }
  };

  private sendGroup(group: string, items: Item[]): void {
    for (let i = 0; i < items.length; i += this.maxBatch) this.send(group, items.slice(i, i + this.maxBatch));
  }
}

/** One admission waiting for its batch: the scopes that limit something, and the tokens asked. */
export interface QueuedAdmission {
  kind: 'admission';
  limited: readonly LimitScope[];
  tokens: number;
}

/** One token correction waiting for its batch. */
export interface QueuedCorrection {
  kind: 'correction';
  limited: readonly LimitScope[];
  delta: number;
  /** The corrected admission's window second (see RateLimiter.adjustTokens), when known. */
  second?: number;
}

export type QueuedOperation = QueuedAdmission | QueuedCorrection;

/** An admission as the limiter queues it: with every scope (the local fallback takes them all) and its caller. */
export interface PendingAdmission extends QueuedAdmission {
  scopes: readonly LimitScope[];
  resolve(decision: LimitDecision): void;
  reject(e: unknown): void;
}

export interface PendingCorrection extends QueuedCorrection {
  resolve(): void;
  reject(e: unknown): void;
}

export type PendingOperation = PendingAdmission | PendingCorrection;

/**
 * Runs a batch's sender so that no caller is left waiting and nothing escapes as an unhandled
 * rejection (which would end the process): if the sender throws, every caller of the batch it has
 * not answered yet gets the error (a promise already settled ignores it).
 */
export function answerAll<T extends { reject(e: unknown): void }>(items: T[], send: (items: T[]) => Promise<void>): void {
  send(items).catch((e: unknown) => {
    for (const it of items) it.reject(e);
  });
}

/** KEYS and ARGV of one batched script call (see redis-scripts.ts for the layout). */
export interface ScriptCall {
  keys: string[];
  args: (string | number)[];
}

/**
 * Builds the call to TURN_LUA: the turn's own key first (its id: what Redis records of the turn, see
 * redis-scripts.ts), then each distinct scope key once in KEYS, then each operation in order: an
 * admission as 'a', its scope count, its tokens and per scope (KEYS index, rpm, tpm); a correction
 * as 'c', its scope count, its delta, its admission's second (-1: not known) and the KEYS indexes.
 */
export function turnCall(items: readonly QueuedOperation[], keyOf: (s: LimitScope) => string, clock: number, turnKey: string): ScriptCall {
  const keys = new KeyList();
  keys.index(turnKey);
  const args: (string | number)[] = [clock, WINDOW_SECONDS, items.length];
  for (const it of items) {
    if (it.kind === 'admission') {
      args.push('a', it.limited.length, it.tokens);
      for (const s of it.limited) args.push(keys.index(keyOf(s)), s.quota.rpm ?? 0, s.quota.tpm ?? 0);
    } else {
      args.push('c', it.limited.length, it.delta, it.second ?? -1);
      for (const s of it.limited) args.push(keys.index(keyOf(s)));
    }
  }
  return { keys: keys.list, args };
}

/** Distinct keys in first-seen order, with their 1-based position (Lua's KEYS index). */
class KeyList {
  readonly list: string[] = [];
  private readonly positions = new Map<string, number>();

  index(key: string): number {
    let i = this.positions.get(key);
    if (i === undefined) {
      this.list.push(key);
      i = this.list.length;
      this.positions.set(key, i);
    }
    return i;
  }
}

/**
 * Ids of this instance's script calls, each a key in its family's Redis Cluster hash slot like the
 * windows the call changes: a turn's (TURN_LUA) and a hand-over call's (RECORD_LUA). Short, since
 * Redis keeps one for each turn (redis-scripts.ts).
 */
export class CallIds {
  private readonly instance = randomBytes(9).toString('base64url');
  private seq = 0;

  constructor(private readonly prefix: string) {}

  turn(family: string): string {
    return `${this.prefix}rl:{${family}}:turn:${this.next()}`;
  }

  /** For a call on the window `windowKey` (`<prefix>rl:{family}:...`): under the same hash tag. */
  record(windowKey: string): string {
    const tag = /\{[^}]*\}/.exec(windowKey.slice(this.prefix.length))?.[0] ?? '';
    return `${this.prefix}rl:${tag}:record:${this.next()}`;
  }

  private next(): string {
    return `${this.instance}.${(++this.seq).toString(36)}`;
  }
}
