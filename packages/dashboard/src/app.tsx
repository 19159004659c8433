import { useEffect, useRef, useState } from 'preact/hooks';
import { api, whenUnauthorized } from './lib/api.js';
import { forgetEarly, takeEarly } from './lib/early-calls.js';
import { href, useRoute } from './lib/router.js';
import { forgetToken, readToken } from './lib/token.js';
import type { Session } from './lib/types.js';
import { pages } from './nav.js';
import { SignInPage } from './pages/sign-in.js';
import { Loading } from './components/notice.js';

/** The whole console: sign-in until a token is accepted, then the layout with the page of the route. */
export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [checking, setChecking] = useState(() => readToken() !== null);
  const route = useRoute();

  useEffect(() => {
    whenUnauthorized(() => {
      forgetEarly();
      setSession(null);
    });
    if (readToken() === null) return;
    (takeEarly<Session>('/session') ?? api<Session>('GET', '/session')).then(
      (s) => {
        setSession(s);
        setChecking(false);
      },
      () => {
        forgetToken();
        forgetEarly();
        setChecking(false);
      },
    );
  }, []);

  if (checking) return <Loading />;
  if (session === null) return <SignInPage onSignedIn={setSession} />;

  const entry = pages.find((p) => p.path === route[0]) ?? pages[0]!;
  const signOut = () => {
    forgetToken();
    forgetEarly();
    setSession(null);
  };
  return (
    <Layout current={entry.path} session={session} onSignOut={signOut}>
      <entry.page params={route.slice(1)} session={session} canWrite={session.scope === 'admin'} />
    </Layout>
  );
}

function Layout(props: { current: string; session: Session; onSignOut: () => void; children: preact.ComponentChildren }) {
  const main = useRef<HTMLElement>(null);
  const route = useRoute().join('/');
  // A page change moves focus to the content, so a screen reader announces the new page.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else main.current?.focus();
  }, [route]);
  return (
    <div class="layout">
      <a class="skip-link" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Ferry</span>
        <span class="who">
          <span class={`scope scope-${props.session.scope}`}>{props.session.scope === 'admin' ? 'Admin' : 'Read only'}</span>
          <button type="button" class="link-button" onClick={props.onSignOut}>
            Sign out
          </button>
        </span>
      </header>
      <nav class="sidenav" aria-label="Main">
        <ul>
          {pages.map((p) => (
            <li key={p.path}>
              <a href={href(p.path)} aria-current={p.path === props.current ? 'page' : undefined}>
                {p.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={main} tabIndex={-1}>
        {props.children}
      </main>
    </div>
  );
}
