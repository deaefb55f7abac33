import { movable, serveJobs } from '../core/worker-jobs.js';
import { prepareCompletion, type CompletionJob, type CompletionJobResult } from './completion-job.js';

/** The answer worker's script (large-completions.ts): prepares one large chat answer per job. */
serveJobs<CompletionJob, CompletionJobResult>(async (job) => {
  const out = await prepareCompletion(job);
  if ('verdict' in out) return { value: out, transfer: [] };
  const body = movable(out.body);
  return { value: { ...out, body }, transfer: [body.buffer] };
});
