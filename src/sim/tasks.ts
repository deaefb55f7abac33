import { randomUUID } from 'node:crypto';

/**
 * An in-memory book of simulated generation tasks, shared by the video simulators. A task finishes
 * `durationMs` after it was created; the prompt chooses the outcome so tests can drive failures:
 *   "[moderation]" -> content moderation failure, "[fail]" -> internal failure,
 *   "[bad-image]" -> unreachable reference image, "[bad-combo]" -> unsupported duration/size,
 *   "[no-video]" -> the task finishes as a success that carries no video (each simulator answers it
 *   in its vendor's own success shape, with the video field empty or missing).
 */
export type TaskOutcome = 'success' | 'moderation' | 'fail' | 'bad-image' | 'bad-combo' | 'no-video';

export interface SimTask {
  id: string;
  createdAt: number;
  readyAt: number;
  outcome: TaskOutcome;
  /** Seconds the finished video reports. */
  seconds: number;
  /**
   * Simulator-specific data: the few request fields the simulator answers from (never the whole
   * body, which a client may pad with megabytes: `keptFields`), variants, ...
   */
  data: Record<string, any>;
  cancelled?: boolean;
}

export function outcomeFromPrompt(prompt: unknown): TaskOutcome {
  const p = typeof prompt === 'string' ? prompt : '';
  if (p.includes('[moderation]')) return 'moderation';
  if (p.includes('[fail]')) return 'fail';
  if (p.includes('[bad-image]')) return 'bad-image';
  if (p.includes('[bad-combo]')) return 'bad-combo';
  if (p.includes('[no-video]')) return 'no-video';
  return 'success';
}

/** How many tasks a book keeps, and for how long. */
export interface TaskBookLimits {
  /** The most tasks kept; past it the oldest are forgotten first. */
  maxTasks?: number;
  /** A task is forgotten this long after its create. */
  maxAgeMs?: number;
}

/**
 * A thousand tasks, each kept a day: far more than the embedded default or a test polls at once,
 * and as long as the vendors keep a task queryable (DashScope: 24 h). The simulators run in the
 * gateway's own process there, so what they keep is the gateway's memory.
 */
export const DEFAULT_TASK_LIMITS: Required<TaskBookLimits> = { maxTasks: 1_000, maxAgeMs: 24 * 3_600_000 };

/**
 * The simulated tasks of one simulator, bounded: at most `maxTasks`, none older than `maxAgeMs`,
 * the oldest forgotten first (a Map iterates in insertion order, which is creation order). A
 * forgotten task is unknown from then on, as an expired one is to the real vendor, and each
 * simulator answers it in its vendor's not-found shape; `onForget` lets a simulator drop what it
 * keeps beside the task (its generation ids, deletion marks).
 */
export class TaskBook {
  private readonly tasks = new Map<string, SimTask>();
  private readonly limits: Required<TaskBookLimits>;

  constructor(
    limits: TaskBookLimits = {},
    private readonly onForget?: (task: SimTask) => void,
  ) {
    this.limits = { maxTasks: limits.maxTasks ?? DEFAULT_TASK_LIMITS.maxTasks, maxAgeMs: limits.maxAgeMs ?? DEFAULT_TASK_LIMITS.maxAgeMs };
  }

  create(opts: { prompt: unknown; seconds: number; durationMs: number; id?: string; data?: Record<string, any> }): SimTask {
    const now = Date.now();
    const task: SimTask = {
      id: opts.id ?? randomUUID(),
      createdAt: now,
      readyAt: now + opts.durationMs,
      outcome: outcomeFromPrompt(opts.prompt),
      seconds: opts.seconds,
      data: opts.data ?? {},
    };
    const taken = this.tasks.get(task.id);
    if (taken) this.forget(taken);
    this.tasks.set(task.id, task);
    this.prune(now);
    return task;
  }

  /** The task, unless it is unknown or has been forgotten (too old, or pushed out by newer ones). */
  get(id: string): SimTask | undefined {
    const task = this.tasks.get(id);
    if (!task) return undefined;
    if (this.expired(task, Date.now())) {
      this.forget(task);
      return undefined;
    }
    return task;
  }

  private expired(task: SimTask, now: number): boolean {
    return now - task.createdAt >= this.limits.maxAgeMs;
  }

  /** Forgets the oldest tasks while there are too many, or they are too old. */
  private prune(now: number): void {
    for (const task of this.tasks.values()) {
      if (this.tasks.size <= this.limits.maxTasks && !this.expired(task, now)) return;
      this.forget(task);
    }
  }

  private forget(task: SimTask): void {
    this.tasks.delete(task.id);
    this.onForget?.(task);
  }

  /** 'queued' in the first half of the wait, 'running' in the second, then 'done'. */
  phase(task: SimTask, now = Date.now()): 'queued' | 'running' | 'done' {
    if (now >= task.readyAt) return 'done';
    return now < task.createdAt + (task.readyAt - task.createdAt) / 2 ? 'queued' : 'running';
  }

  progress(task: SimTask, now = Date.now()): number {
    const span = Math.max(1, task.readyAt - task.createdAt);
    return Math.min(100, Math.floor(((now - task.createdAt) / span) * 100));
  }

  get size(): number {
    return this.tasks.size;
  }
}

/**
 * The named fields of a request body that are scalars (a string of at most `maxString` characters,
 * a number, a boolean, null), for a task to answer from. Anything else the body carries is left to
 * be collected with the request.
 */
export function keptFields(body: Record<string, unknown>, names: readonly string[], maxString = 256): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const name of names) {
    const v = body[name];
    if (v === null || typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && v.length <= maxString)) out[name] = v;
  }
  return out;
}
