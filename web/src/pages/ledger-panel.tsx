import { useState } from 'preact/hooks';
import { api, query } from '../api';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { useLoad } from '../components/use-load';
import { money, text, when } from '../format';
import type { LedgerEntry } from '../types';
import { TableHead } from '../components/table-head';

const PAGE = 50;

/** The account's ledger, newest first: filters by kind, model and date; pages by entry id. */
export function LedgerPanel({ account, refresh }: { account: string; refresh: number }) {
  const [draft, setDraft] = useState({ kind: '', model: '', from: '', to: '' });
  const [filters, setFilters] = useState(draft);
  const [cursors, setCursors] = useState<number[]>([]);
  const before = cursors[cursors.length - 1];
  const page = useLoad(
    () => api<{ data: LedgerEntry[] }>('GET', `/admin/accounts/${encodeURIComponent(account)}/ledger${query({ ...filters, before, limit: PAGE })}`),
    [account, filters, before, refresh],
  );
  const rows = page.data?.data ?? [];
  const set = (k: keyof typeof draft) => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <section aria-labelledby="ledger-title">
      <h2 id="ledger-title">Ledger</h2>
      <form
        class="filters"
        aria-label="Filter the ledger"
        onSubmit={(e) => {
          e.preventDefault();
          setCursors([]);
          setFilters({ ...draft });
        }}
      >
        <Field id="l-kind" label="Kind">
          <select id="l-kind" value={draft.kind} onChange={set('kind')}>
            <option value="">any</option>
            {['credit', 'hold', 'release', 'capture', 'charge'].map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </Field>
        <Field id="l-model" label="Model">
          <input id="l-model" value={draft.model} onInput={set('model')} />
        </Field>
        <Field id="l-from" label="From">
          <input id="l-from" type="date" value={draft.from} onInput={set('from')} />
        </Field>
        <Field id="l-to" label="To">
          <input id="l-to" type="date" value={draft.to} onInput={set('to')} />
        </Field>
        <button type="submit">Apply</button>
      </form>
      <ErrorNote error={page.error} />
      <div class="table-wrap">
        <table>
          <TableHead caption={`Ledger entries of ${account}`} columns={['#', 'Kind', 'Amount', 'Model', 'Upstream', 'Note', 'When']} />
          <tbody>
            {rows.map((e) => (
              <tr key={e.id}>
                <td>{e.id}</td>
                <td>{e.kind}</td>
                <td class="num">{money(e.amount)}</td>
                <td>{text(e.model)}</td>
                <td>{text(e.upstream)}</td>
                <td>{text(e.note)}</td>
                <td>{when(e.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Ledger pages">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors([])}>
          Newest
        </button>
        <button type="button" disabled={rows.length < PAGE} onClick={() => setCursors([...cursors, rows[rows.length - 1]!.id])}>
          Older
        </button>
      </nav>
    </section>
  );
}
