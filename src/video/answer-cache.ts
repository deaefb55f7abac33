import type { JsonObject } from '../core/json.js';
import { clientJson } from '../core/lossless-json.js';
import type { JobRecord } from '../store/job-types.js';

/**
 * Poll answers, serialized once per job row read rather than once per poll. The job cache hands
 * out the same row object until it reads the row again (within a second, or at once after this
 * instance changes the job), so an answer that is a function of the row alone is kept with that
 * object and goes when it does: a state change always comes with a new row object, hence a new
 * answer. Answers that read the clock are rendered every time (see `dependsOnRowOnly`).
 */
export class AnswerCache {
  private readonly rendered = new WeakMap<JobRecord, string>();

  constructor(private readonly present: (job: JobRecord) => JsonObject) {}

  /** The job's answer as JSON text, exactly as the reply serializer writes `present(job)` (core/lossless-json.ts clientJson). */
  json(job: JobRecord): string {
    const hit = this.rendered.get(job);
    if (hit !== undefined) return hit;
    const text = clientJson(this.present(job));
    if (dependsOnRowOnly(job)) this.rendered.set(job, text);
    return text;
  }
}

/**
 * A completed job's answer in the spec's dialect carries an output_url signed to expire from now;
 * an OpenAI-dialect job running without a vendor progress figure shows progress read off the clock.
 * Every other answer is the row's alone.
 */
function dependsOnRowOnly(job: JobRecord): boolean {
  if (job.dialect === 'openai') return job.state !== 'processing' || job.phase !== 'running' || job.progress !== null;
  return job.state !== 'completed';
}
