import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import { useLoad } from '../components/use-load';
import { when } from '../format';
import { TableHead } from '../components/table-head';

interface Record {
  id: number;
  jobId: string;
  upstream: string;
  reason: string;
  createdAt: number;
}

/** Operator: creates whose outcome at the vendor is unknown (GET /admin/reconcile). */
export function Reconcile() {
  const list = useLoad(() => api<{ data: Record[] }>('GET', '/admin/reconcile'), []);
  const rows = list.data?.data ?? [];
  return (
    <section aria-labelledby="reconcile-title">
      <h1 id="reconcile-title">Reconciliation</h1>
      <p class="muted">Creates that may have reached an upstream unanswered: the hold was released; check the vendor for a task that may still bill.</p>
      <ErrorNote error={list.error} />
      {list.data && rows.length === 0 && <p>Nothing to reconcile.</p>}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table>
            <TableHead caption='Reconciliation records' columns={['#', 'Job', 'Upstream', 'Reason', 'When']} />
            <tbody>
              {rows.map((r) => (
                <tr key={r.id}>
                  <td>{r.id}</td>
                  <td class="mono">{r.jobId}</td>
                  <td>{r.upstream}</td>
                  <td>{r.reason}</td>
                  <td>{when(new Date(r.createdAt).toISOString())}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
