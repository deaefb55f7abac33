import { useEffect, useState } from 'preact/hooks';
import { api, onSessionLost, setCsrfToken } from './api';
import { go, href, useRoute } from './router';
import type { Session } from './types';
import { Account } from './pages/account';
import { Accounts } from './pages/accounts';
import { JobPage } from './pages/job';
import { Jobs } from './pages/jobs';
import { Reconcile } from './pages/reconcile';
import { SignIn } from './pages/sign-in';
import { Upstreams } from './pages/upstreams';
import { Usage } from './pages/usage';
import { Webhooks } from './pages/webhooks';

const OPERATOR_NAV: [string, string][] = [
  ['accounts', 'Accounts'],
  ['jobs', 'Jobs'],
  ['usage', 'Usage'],
  ['upstreams', 'Upstreams'],
  ['webhooks', 'Webhooks'],
  ['reconcile', 'Reconciliation'],
];
const KEY_NAV: [string, string][] = [
  ['jobs', 'Jobs'],
  ['usage', 'Usage'],
];

function Page({ route, operator }: { route: string[]; operator: boolean }) {
  const [first, second] = route;
  if (first === 'jobs' && second) return <JobPage id={second} operator={operator} />;
  if (first === 'jobs') return <Jobs operator={operator} />;
  if (first === 'usage') return <Usage operator={operator} />;
  if (operator) {
    if (first === 'accounts' && second) return <Account name={second} />;
    if (first === 'accounts') return <Accounts />;
    if (first === 'upstreams') return <Upstreams />;
    if (first === 'webhooks') return <Webhooks />;
    if (first === 'reconcile') return <Reconcile />;
  }
  return <Jobs operator={operator} />;
}

/** The shell: who is signed in, the navigation of that role, and the current page. */
export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const route = useRoute();
  const accept = (s: Session | null) => {
    setCsrfToken(s?.csrf_token ?? '');
    setSession(s);
  };
  useEffect(() => {
    onSessionLost(() => accept(null));
    api<Session>('GET', '/console/session', undefined, { quiet401: true }).then(accept, () => accept(null));
  }, []);
  useEffect(() => {
    if (session) document.getElementById('main')?.focus();
  }, [route.join('/')]);

  if (session === undefined) return <p class="muted">Loading…</p>;
  if (session === null)
    return (
      <SignIn
        onSignedIn={(s) => {
          accept(s);
          go(s.role === 'operator' ? 'accounts' : 'jobs');
        }}
      />
    );
  const operator = session.role === 'operator';
  const nav = operator ? OPERATOR_NAV : KEY_NAV;
  const signOut = async () => {
    await api('DELETE', '/console/session', undefined, { quiet401: true }).catch(() => undefined);
    accept(null);
  };
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">Gateway console</strong>
        <nav aria-label="Sections">
          <ul>
            {nav.map(([path, label]) => (
              <li key={path}>
                <a href={href(path)} aria-current={route[0] === path ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who" data-role={session.role}>
          {operator ? 'Operator' : session.label}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} operator={operator} />
      </main>
    </>
  );
}
