import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import { useLoad } from '../components/use-load';
import { when } from '../format';
import type { Upstream } from '../types';
import { TableHead } from '../components/table-head';

/** Operator: each upstream's circuit, calls by outcome, latency and recent failures (GET /admin/upstreams). */
export function Upstreams() {
  const list = useLoad(() => api<{ data: Upstream[] }>('GET', '/admin/upstreams'), []);
  return (
    <section aria-labelledby="upstreams-title">
      <h1 id="upstreams-title">Upstream health</h1>
      <p class="muted">This instance's view since it started: calls by outcome, latency of the last 200 calls, the last failures.</p>
      <button type="button" onClick={list.reload}>
        Refresh
      </button>
      <ErrorNote error={list.error} />
      <div class="table-wrap">
        <table>
          <TableHead caption='Upstreams' columns={['Upstream', 'Vendor', 'Circuit', 'Calls', 'p50 / p95 ms', 'Recent failures']} />
          <tbody>
            {(list.data?.data ?? []).map((u) => (
              <tr key={u.name}>
                <td>{u.name}</td>
                <td>{u.vendor}</td>
                <td>
                  <span class={`badge ${u.circuit === 'closed' ? 'ok' : u.circuit === 'open' ? 'bad' : 'wait'}`}>{u.circuit}</span>
                  {u.consecutive_failures > 0 ? ` (${u.consecutive_failures} failing)` : ''}
                </td>
                <td>
                  {Object.entries(u.calls)
                    .map(([k, v]) => `${k}: ${v}`)
                    .join(', ') || '—'}
                </td>
                <td>{u.latency_ms.samples ? `${u.latency_ms.p50} / ${u.latency_ms.p95}` : '—'}</td>
                <td>
                  {u.recent_errors.length === 0 ? (
                    '—'
                  ) : (
                    <ul class="compact">
                      {u.recent_errors.slice(0, 5).map((e, i) => (
                        <li key={i}>
                          {e.outcome} at {when(e.at)}
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
