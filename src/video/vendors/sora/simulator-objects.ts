import type { SimReply } from '../../../sim/framework.js';
import type { SimTask, TaskBook } from '../../../sim/tasks.js';

/** OpenAI's error envelope, as every route of the Sora simulator answers its refusals. */
export function oaiError(status: number, message: string, param: string | null = null, code: string | null = null): SimReply {
  return { status, json: { error: { message, type: 'invalid_request_error', param, code } } };
}

/** Failure codes the simulator reports; the real strings are not all documented. */
const FAILURES: Record<string, { code: string; message: string }> = {
  moderation: { code: 'moderation_blocked', message: 'The generated video was blocked by our moderation system.' },
  fail: { code: 'internal_error', message: 'Video generation failed due to an internal error.' },
  'bad-image': { code: 'invalid_input_reference', message: 'The input reference image could not be downloaded.' },
  'bad-combo': { code: 'unsupported_parameters', message: 'The requested size is not supported for this duration.' },
};

/** The video object, as create, retrieve, remix, edits and extensions answer it. */
export function videoObject(book: TaskBook, task: SimTask): Record<string, unknown> {
  const phase = book.phase(task);
  const d = task.data;
  const failed = phase === 'done' && task.outcome !== 'success' && task.outcome !== 'no-video';
  const status = phase === 'done' ? (failed ? 'failed' : 'completed') : phase === 'queued' ? 'queued' : 'in_progress';
  return {
    id: task.id,
    object: 'video',
    model: d.model,
    status,
    progress: phase === 'done' ? 100 : phase === 'queued' ? 0 : book.progress(task),
    created_at: Math.floor(task.createdAt / 1000),
    completed_at: phase === 'done' ? Math.floor(task.readyAt / 1000) : null,
    expires_at: phase === 'done' && !failed ? Math.floor(task.readyAt / 1000) + 3600 : null,
    prompt: d.prompt,
    seconds: String(task.seconds),
    size: d.size,
    remixed_from_video_id: d.remixedFrom ?? null,
    error: failed ? FAILURES[task.outcome] : null,
    sim_trace_id: d.traceId,
  };
}
