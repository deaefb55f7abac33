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
  /** Simulator-specific data (the request, variants, ...). */
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

export class TaskBook {
  private readonly tasks = new Map<string, SimTask>();

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
    this.tasks.set(task.id, task);
    return task;
  }

  get(id: string): SimTask | undefined {
    return this.tasks.get(id);
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
