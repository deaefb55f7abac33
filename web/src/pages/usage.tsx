import { useState } from 'preact/hooks';
import { api, query } from '../api';
import { BarChart } from '../components/bar-chart';
import { AccountSelect } from '../components/account-select';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { useLoad } from '../components/use-load';
import { money } from '../format';
import type { Account } from '../types';

interface Row {
  cost: number;
  requests: number;
  day?: string;
  model?: string;
}

interface Report {
  byDay: Row[];
  byModel: Row[];
  summary?: { balance: number; limit: number | null; usage: number; limit_remaining: number | null };
}

const monthStart = () => new Date().toISOString().slice(0, 8) + '01';
const today = () => new Date().toISOString().slice(0, 10);

/**
 * Spend and requests per day and per model: the key holder's from GET /v1/usage (its own key), the
 * operator's from GET /admin/usage (every account, or one), for a date range.
 */
export function Usage({ operator }: { operator: boolean }) {
  const [draft, setDraft] = useState({ from: monthStart(), to: today(), account: '' });
  const [range, setRange] = useState(draft);
  const accounts = useLoad(() => (operator ? api<{ data: Account[] }>('GET', '/admin/accounts') : Promise.resolve({ data: [] as Account[] })), [operator]);
  const report = useLoad<Report>(async () => {
    if (!operator) {
      const u = await api<{ data: Report['summary'] & { by_day: Row[]; by_model: Row[] } }>('GET', `/v1/usage${query({ from: range.from, to: range.to })}`);
      return { byDay: u.data.by_day ?? [], byModel: u.data.by_model, summary: u.data };
    }
    const base = { from: range.from, to: range.to, account: range.account };
    const [days, models] = await Promise.all([
      api<{ data: Row[] }>('GET', `/admin/usage${query({ ...base, group_by: 'day' })}`),
      api<{ data: Row[] }>('GET', `/admin/usage${query({ ...base, group_by: 'model' })}`),
    ]);
    return { byDay: days.data, byModel: models.data };
  }, [operator, range]);
  const r = report.data;
  const set = (k: 'from' | 'to' | 'account') => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <form
        class="filters"
        aria-label="Usage range"
        onSubmit={(e) => {
          e.preventDefault();
          setRange({ ...draft });
        }}
      >
        <Field id="u-from" label="From">
          <input id="u-from" type="date" value={draft.from} onInput={set('from')} />
        </Field>
        <Field id="u-to" label="To (inclusive)">
          <input id="u-to" type="date" value={draft.to} onInput={set('to')} />
        </Field>
        {operator && <AccountSelect id="u-account" value={draft.account} accounts={accounts.data?.data ?? []} onChange={set('account')} />}
        <button type="submit">Show</button>
      </form>
      <ErrorNote error={report.error} />
      {r?.summary && (
        <dl class="facts">
          <dt>Account balance</dt>
          <dd>{money(r.summary.balance)}</dd>
          <dt>This key's spend</dt>
          <dd>{money(r.summary.usage)}</dd>
          <dt>Key limit</dt>
          <dd>{r.summary.limit === null ? 'none' : money(r.summary.limit)}</dd>
          <dt>Remaining</dt>
          <dd>{r.summary.limit_remaining === null ? '—' : money(r.summary.limit_remaining)}</dd>
        </dl>
      )}
      {r && (
        <div class="charts">
          <BarChart title="Spend per day" unit="$" bars={r.byDay.map((d) => ({ label: d.day ?? '', value: d.cost }))} />
          <BarChart title="Requests per day" bars={r.byDay.map((d) => ({ label: d.day ?? '', value: d.requests }))} />
          <BarChart title="Spend per model" unit="$" bars={r.byModel.map((d) => ({ label: d.model ?? '', value: d.cost }))} />
          <BarChart title="Requests per model" bars={r.byModel.map((d) => ({ label: d.model ?? '', value: d.requests }))} />
        </div>
      )}
    </section>
  );
}
