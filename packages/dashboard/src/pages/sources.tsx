import { useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { href, navigate } from '../lib/router.js';
import type { PageProps, Source } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { CopyButton } from '../components/copy-button.js';
import { Field } from '../components/field.js';
import { placeError, type FormErrors } from '../components/form-errors.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';
import { SourceLivePage } from './source-live.js';

/** Sources: `#/sources` the list, `#/sources/new`, `#/sources/{id}/edit`, `#/sources/{id}/live` the debugger. */
export function SourcesPage(props: PageProps) {
  const [first, second] = props.params;
  if (first === 'new' && props.canWrite) return <SourceForm />;
  if (first !== undefined && second === 'edit' && props.canWrite) return <SourceForm id={first} />;
  if (first !== undefined && second === 'live') return <SourceLivePage {...props} params={[first]} />;
  return <SourceList canWrite={props.canWrite} />;
}

function SourceList(props: { canWrite: boolean }) {
  const sources = useApi<{ sources: Source[] }>('/sources');
  const [revealed, setRevealed] = useState<Record<string, string>>({});
  const [revealError, setRevealError] = useState<unknown>();

  const reveal = async (id: string) => {
    try {
      const { writeKey } = await api<{ writeKey: string }>('GET', `/sources/${encodeURIComponent(id)}/write-key`);
      setRevealed((r) => ({ ...r, [id]: writeKey }));
      setRevealError(undefined);
    } catch (error) {
      setRevealError(error);
    }
  };
  const hide = (id: string) => setRevealed((r) => Object.fromEntries(Object.entries(r).filter(([key]) => key !== id)));

  return (
    <>
      <div class="panel-head">
        <h1>Sources</h1>
        {props.canWrite && (
          <a class="button primary" href={href('sources', 'new')}>
            New source
          </a>
        )}
      </div>
      {sources.error !== undefined && <ErrorNotice error={sources.error} />}
      {revealError !== undefined && <ErrorNotice error={revealError} />}
      {sources.loading && !sources.data && <Loading />}
      {sources.data && sources.data.sources.length === 0 && <p class="muted">No source yet.</p>}
      {sources.data && sources.data.sources.length > 0 && (
        <ul class="cards" aria-label="Sources">
          {sources.data.sources.map((s) => (
            <li key={s.id} class="card">
              <div class="card-head">
                <h2>{s.name}</h2>
                <code class="muted">{s.id}</code>
              </div>
              <div class="write-key">
                <span class="muted">Write key </span>
                {revealed[s.id] !== undefined ? (
                  <code class="secret">{revealed[s.id]}</code>
                ) : (
                  <code aria-label={`masked, ending ${s.writeKeyHint}`}>{s.writeKeyHint}</code>
                )}
              </div>
              <div class="actions">
                <a href={href('sources', s.id, 'live')}>Live debugger</a>
                {props.canWrite && (
                  <>
                    <a href={href('sources', s.id, 'edit')} aria-label={`Edit ${s.name}`}>
                      Edit
                    </a>
                    {revealed[s.id] === undefined ? (
                      <button type="button" onClick={() => void reveal(s.id)} aria-label={`Reveal write key of ${s.name}`}>
                        Reveal write key
                      </button>
                    ) : (
                      <>
                        <CopyButton value={revealed[s.id]!} label="Copy write key" />
                        <button type="button" onClick={() => hide(s.id)}>
                          Hide
                        </button>
                      </>
                    )}
                  </>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

const sourceFields = ['id', 'name', 'writeKey'] as const;

/** A new write key: 32 random bytes as hex, from the browser's CSPRNG. */
function newWriteKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return 'wk_' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function SourceForm(props: { id?: string }) {
  const editing = props.id !== undefined;
  const existing = useApi<Source>(editing ? `/sources/${encodeURIComponent(props.id!)}` : null);
  const [id, setId] = useState('');
  const [name, setName] = useState<string | null>(null);
  const [writeKey, setWriteKey] = useState(() => (editing ? '' : newWriteKey()));
  const [errors, setErrors] = useState<FormErrors>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const shownName = name ?? existing.data?.name ?? '';

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      if (editing) {
        // PUT takes the whole source: an unchanged write key is read back and sent as it is.
        const key =
          writeKey.trim() !== '' ? writeKey.trim() : (await api<{ writeKey: string }>('GET', `/sources/${encodeURIComponent(props.id!)}/write-key`)).writeKey;
        await api('PUT', `/sources/${encodeURIComponent(props.id!)}`, { name: shownName, writeKey: key });
      } else {
        await api('POST', '/sources', { id: id.trim(), name: shownName.trim() === '' ? undefined : shownName.trim(), writeKey: writeKey.trim() });
      }
      navigate('sources');
    } catch (error) {
      setErrors(placeError(error, sourceFields));
      setBusy(false);
    }
  };

  if (editing && existing.error !== undefined) return <ErrorNotice error={existing.error} />;
  if (editing && !existing.data) return <Loading />;
  return (
    <>
      <h1>{editing ? `Edit source ${props.id}` : 'New source'}</h1>
      <p>
        <a href={href('sources')}>Back to sources</a>
      </p>
      {errors.form !== undefined && <ErrorNotice error={new Error(errors.form)} />}
      <form onSubmit={(e) => void submit(e)} noValidate class="panel">
        {!editing && (
          <Field id="source-id" label="Id" error={errors.fields['id']} hint="Lowercase letters, digits, - and _; it cannot change later.">
            {(c) => <input {...c} type="text" name="id" required value={id} onInput={(e) => setId(e.currentTarget.value)} />}
          </Field>
        )}
        <Field id="source-name" label="Name" error={errors.fields['name']} hint={editing ? undefined : 'Defaults to the id.'}>
          {(c) => <input {...c} type="text" name="name" value={shownName} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <Field
          id="source-write-key"
          label={editing ? 'New write key' : 'Write key'}
          error={errors.fields['writeKey']}
          hint={
            editing
              ? 'Leave empty to keep the current key. A new key works at once and the old one stops working.'
              : 'The secret the source sends with its events.'
          }
        >
          {(c) => (
            <div class="input-row">
              <input
                {...c}
                type="text"
                name="writeKey"
                autoComplete="off"
                spellcheck={false}
                value={writeKey}
                onInput={(e) => setWriteKey(e.currentTarget.value)}
              />
              <button type="button" onClick={() => setWriteKey(newWriteKey())}>
                Generate
              </button>
            </div>
          )}
        </Field>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {editing ? 'Save source' : 'Create source'}
          </button>
          <a href={href('sources')}>Cancel</a>
        </div>
        {busy && <StatusNotice>Saving…</StatusNotice>}
      </form>
    </>
  );
}
