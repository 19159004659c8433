import { useState } from 'preact/hooks';
import { api, ApiError, describeError } from '../lib/api.js';
import { keepToken } from '../lib/token.js';
import type { Session } from '../lib/types.js';
import { Field } from '../components/field.js';

/** Sign-in: a token field; the server's `GET /session` says whether it is valid and its scope. */
export function SignInPage(props: { onSignedIn: (session: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const value = token.trim();
    if (value === '') {
      setError('Enter an admin or read token.');
      return;
    }
    setBusy(true);
    try {
      const session = await api<Session>('GET', '/session', undefined, value);
      keepToken(value);
      props.onSignedIn(session);
    } catch (e) {
      setError(e instanceof ApiError && e.status === 401 ? 'This token is not valid (or was revoked).' : describeError(e));
      setBusy(false);
    }
  };

  return (
    <main class="sign-in" id="main">
      <h1>Ferry dashboard</h1>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field id="token" label="Admin or read token" error={error} hint="Kept in this browser tab only, until you sign out or close it.">
          {(control) => (
            <input
              {...control}
              type="password"
              name="token"
              autoComplete="off"
              spellcheck={false}
              value={token}
              onInput={(e) => setToken(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
