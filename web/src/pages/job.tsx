import { useEffect } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import { JsonView } from '../components/json-view';
import { StatusBadge } from '../components/status-badge';
import { useLoad } from '../components/use-load';
import { text, when } from '../format';
import { href } from '../router';
import type { Job } from '../types';
import { jobCost } from './jobs';

/** Where the browser fetches the video (with Range requests, which the content endpoint serves). */
function videoSource(job: Job, operator: boolean): string | undefined {
  if (job.status !== 'completed') return undefined;
  // The key holder's session authenticates the content endpoint itself.
  if (!operator) return `/v1/videos/${encodeURIComponent(job.id)}/content`;
  // The operator has no key: the admin view's signed output_url works without one. Same origin,
  // path only, so the page's media policy ('self') holds behind any public URL.
  if (!job.output_url) return undefined;
  const u = new URL(job.output_url, location.href);
  return u.pathname + u.search;
}

/** One job: status, cost, the vendor's data and, once completed, the video itself. */
export function JobPage({ id, operator }: { id: string; operator: boolean }) {
  const job = useLoad(() => api<Job>('GET', `${operator ? '/admin/jobs' : '/v1/videos'}/${encodeURIComponent(id)}`), [id, operator]);
  const j = job.data;
  const done = j && (j.status === 'completed' || j.status === 'failed');
  useEffect(() => {
    if (!j || done) return;
    const t = setTimeout(job.reload, 2000);
    return () => clearTimeout(t);
  }, [j, done]);
  const src = j && videoSource(j, operator);
  return (
    <section aria-labelledby="job-title">
      <p>
        <a href={href('jobs')}>← All jobs</a>
      </p>
      <h1 id="job-title">Video {id.slice(0, 18)}…</h1>
      <ErrorNote error={job.error} />
      {j && (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={j.status} />
              {j.progress !== undefined && j.status !== 'completed' ? ` ${j.progress}%` : ''}
            </dd>
            <dt>Model</dt>
            <dd>{j.model}</dd>
            <dt>Created</dt>
            <dd>{when(j.created_at)}</dd>
            <dt>Finished</dt>
            <dd>{when(j.completed_at ?? null)}</dd>
            <dt>Seconds</dt>
            <dd>{text(j.seconds)}</dd>
            <dt>Cost</dt>
            <dd>{jobCost(j)}</dd>
            {operator && (
              <>
                <dt>Upstream</dt>
                <dd>{text(j.upstream)}</dd>
                <dt>Account id</dt>
                <dd>{text(j.account_id)}</dd>
              </>
            )}
            <dt>Id</dt>
            <dd class="mono">{j.id}</dd>
          </dl>
          {j.error && (
            <p class="error" role="status">
              {j.error.code}: {j.error.message}
            </p>
          )}
          {src && (
            <div class="player">
              <video id="player" controls preload="metadata" src={src} aria-label="The generated video" />
              <p>
                <a href={src} download>
                  Download the video
                </a>
              </p>
            </div>
          )}
          <h2>Vendor data</h2>
          <JsonView value={j.vendor_data ?? null} label="Vendor data" />
        </>
      )}
    </section>
  );
}
