import { useEffect, useState } from 'preact/hooks';
import { api, query } from '../api';
import { AccountSelect } from '../components/account-select';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { StatusBadge } from '../components/status-badge';
import { useLoad } from '../components/use-load';
import { money, when } from '../format';
import { href } from '../router';
import type { Account, Job, JobPage } from '../types';

interface Filters {
  status: string;
  model: string;
  from: string;
  to: string;
  account: string;
}

const EMPTY: Filters = { status: '', model: '', from: '', to: '', account: '' };

/** Cost in currency units, from whichever shape the job came in. */
export function jobCost(j: Job): string {
  if (j.cost !== undefined && j.cost !== null) return money(j.cost);
  if (j.usage?.cost !== undefined) return money(j.usage.cost);
  if (j.usage?.held !== undefined) return `${money(j.usage.held)} held`;
  return '—';
}

/**
 * The jobs list: the key holder's from GET /v1/videos, the operator's (every account) from
 * GET /admin/jobs; filters by status, model and creation date; cursor pages (`after` = the last
 * id shown). While a job on the page is still running it refreshes itself every few seconds.
 */
export function Jobs({ operator }: { operator: boolean }) {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [cursors, setCursors] = useState<string[]>([]);
  const after = cursors[cursors.length - 1];
  const accounts = useLoad(() => (operator ? api<{ data: Account[] }>('GET', '/admin/accounts') : Promise.resolve({ data: [] as Account[] })), [operator]);
  const page = useLoad(() => {
    const q = query({ status: filters.status, model: filters.model, from: filters.from, to: filters.to, after, limit: 20, ...(operator ? { account: filters.account } : {}) });
    return api<JobPage>('GET', `${operator ? '/admin/jobs' : '/v1/videos'}${q}`);
  }, [operator, filters, after]);
  const running = page.data?.data.some((j) => j.status !== 'completed' && j.status !== 'failed');
  useEffect(() => {
    if (!running) return;
    const t = setTimeout(page.reload, 2000);
    return () => clearTimeout(t);
  }, [running, page.data]);
  const names = new Map((accounts.data?.data ?? []).map((a) => [a.id, a.name]));

  const apply = (e: Event) => {
    e.preventDefault();
    setCursors([]);
    setFilters({ ...draft });
  };
  const set = (k: keyof Filters) => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value });

  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Video jobs</h1>
      <form class="filters" onSubmit={apply} aria-label="Filter jobs">
        <Field id="f-status" label="Status">
          <select id="f-status" value={draft.status} onChange={set('status')}>
            <option value="">any</option>
            <option value="processing">processing</option>
            <option value="completed">completed</option>
            <option value="failed">failed</option>
          </select>
        </Field>
        <Field id="f-model" label="Model">
          <input id="f-model" value={draft.model} onInput={set('model')} placeholder="any" />
        </Field>
        <Field id="f-from" label="Created from">
          <input id="f-from" type="date" value={draft.from} onInput={set('from')} />
        </Field>
        <Field id="f-to" label="Created to">
          <input id="f-to" type="date" value={draft.to} onInput={set('to')} />
        </Field>
        {operator && <AccountSelect id="f-account" value={draft.account} accounts={accounts.data?.data ?? []} onChange={set('account')} />}
        <button type="submit">Apply</button>
        <button type="button" onClick={page.reload}>
          Refresh
        </button>
      </form>
      <ErrorNote error={page.error} />
      <div class="table-wrap">
        <table>
          <caption class="sr-only">Jobs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Video</th>
              <th scope="col">Status</th>
              <th scope="col">Model</th>
              {operator && <th scope="col">Account</th>}
              <th scope="col">Created</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {(page.data?.data ?? []).map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td>
                  <a href={href('jobs', j.id)}>{`${j.id.slice(0, 14)}…`}</a>
                </td>
                <td>
                  <StatusBadge status={j.status} />
                </td>
                <td>{j.model}</td>
                {operator && <td>{names.get(j.account_id ?? '') ?? j.account_id}</td>}
                <td>{when(j.created_at)}</td>
                <td>{jobCost(j)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {page.data && page.data.data.length === 0 && <p class="muted">No jobs match.</p>}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors([])}>
          First page
        </button>
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <button type="button" disabled={!page.data?.has_more || !page.data.last_id} onClick={() => setCursors([...cursors, page.data!.last_id!])}>
          Next page
        </button>
      </nav>
    </section>
  );
}
