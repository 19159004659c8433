import { useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { href, navigate } from '../lib/router.js';
import type { Destination, Source } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { Field } from '../components/field.js';
import { placeError, type FormErrors } from '../components/form-errors.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';

/** The fields the server may name in an error; anything else is shown above the form. */
const fields = ['id', 'name', 'sources', 'enabled', 'settings.webhooks', 'settings.webhookUrl', 'settings.sharedSecret'] as const;

/**
 * Creates (`#/destinations/new`) or edits (`#/destinations/{id}/edit`) a Webhooks destination.
 * The rules are the server's: the form sends what was typed and shows each refusal at its field.
 */
export function DestinationForm(props: { id?: string }) {
  const editing = props.id !== undefined;
  const path = editing ? `/destinations/${encodeURIComponent(props.id!)}` : null;
  const existing = useApi<Destination>(path);
  const sources = useApi<{ sources: Source[] }>('/sources');
  if ((editing && existing.error !== undefined) || sources.error !== undefined) return <ErrorNotice error={existing.error ?? sources.error} />;
  if ((editing && !existing.data) || !sources.data) return <Loading />;
  return <FormBody existing={editing ? existing.data : undefined} sources={sources.data.sources} />;
}

function FormBody(props: { existing: Destination | undefined; sources: Source[] }) {
  const before = props.existing;
  const beforeUrls = (before?.settings.webhooks ?? []).map((w) => w.url).join('\n');
  const [id, setId] = useState('');
  const [name, setName] = useState(before?.name ?? '');
  const [chosen, setChosen] = useState<string[]>(before?.sources ?? (props.sources.length === 1 ? [props.sources[0]!.id] : []));
  const [urls, setUrls] = useState(beforeUrls);
  const [secret, setSecret] = useState('');
  const [enabled, setEnabled] = useState(before?.enabled ?? true);
  const [errors, setErrors] = useState<FormErrors>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const urlList = () =>
    urls
      .split('\n')
      .map((u) => u.trim())
      .filter((u) => u !== '');
  const hasHeaders = (before?.settings.webhooks ?? []).some((w) => Object.keys(w.headers ?? {}).length > 0);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      let saved: Destination;
      if (before) {
        // A merge patch: what is not named stays as stored, the secret and header values included.
        const settings: Record<string, unknown> = {};
        if (urls !== beforeUrls) settings['webhooks'] = urlList().map((url) => ({ url }));
        if (secret !== '') settings['sharedSecret'] = secret;
        const patch: Record<string, unknown> = { name, sources: chosen, enabled };
        if (Object.keys(settings).length > 0) patch['settings'] = settings;
        saved = await api<Destination>('PATCH', `/destinations/${encodeURIComponent(before.id)}`, patch);
      } else {
        const settings: Record<string, unknown> = { webhooks: urlList().map((url) => ({ url })) };
        if (secret !== '') settings['sharedSecret'] = secret;
        saved = await api<Destination>('POST', '/destinations', {
          id: id.trim(),
          type: 'Webhooks',
          name: name.trim() === '' ? undefined : name.trim(),
          enabled,
          sources: chosen,
          settings,
        });
      }
      navigate('destinations', saved.id);
    } catch (error) {
      setErrors(placeError(error, fields));
      setBusy(false);
    }
  };

  const urlError = errors.fields['settings.webhooks'] ?? errors.fields['settings.webhookUrl'];
  return (
    <>
      <h1>{before ? `Edit destination ${before.id}` : 'New destination'}</h1>
      <p>
        <a href={before ? href('destinations', before.id) : href('destinations')}>Back</a>
      </p>
      {errors.form !== undefined && <ErrorNotice error={new Error(errors.form)} />}
      <form onSubmit={(e) => void submit(e)} noValidate class="panel">
        {!before && (
          <Field id="dest-id" label="Id" error={errors.fields['id']} hint="Lowercase letters, digits, - and _; it cannot change later.">
            {(c) => <input {...c} type="text" name="id" value={id} onInput={(e) => setId(e.currentTarget.value)} />}
          </Field>
        )}
        <Field id="dest-name" label="Name" error={errors.fields['name']} hint={before ? undefined : 'Defaults to the id.'}>
          {(c) => <input {...c} type="text" name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
        <fieldset aria-describedby={errors.fields['sources'] ? 'dest-sources-error' : undefined} class={errors.fields['sources'] ? 'field-invalid' : undefined}>
          <legend>Sources</legend>
          {props.sources.length === 0 && <p class="muted">No source yet: create one first.</p>}
          {props.sources.map((s) => (
            <label key={s.id} class="check">
              <input
                type="checkbox"
                name="sources"
                value={s.id}
                checked={chosen.includes(s.id)}
                onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, s.id] : chosen.filter((x) => x !== s.id))}
              />
              {s.name} <code class="muted">{s.id}</code>
            </label>
          ))}
          {errors.fields['sources'] && (
            <p class="field-error" id="dest-sources-error" role="alert">
              {errors.fields['sources']}
            </p>
          )}
        </fieldset>
        <Field
          id="dest-urls"
          label="Webhook URLs"
          error={urlError}
          hint={`One per line, up to 5; each call is sent to every one.${hasHeaders ? ' Changing them drops the static headers set per URL.' : ''}`}
        >
          {(c) => <textarea {...c} name="urls" rows={3} spellcheck={false} value={urls} onInput={(e) => setUrls(e.currentTarget.value)} />}
        </Field>
        <Field
          id="dest-secret"
          label={before?.settings.hasSharedSecret ? 'New shared secret' : 'Shared secret'}
          error={errors.fields['settings.sharedSecret']}
          hint={
            before?.settings.hasSharedSecret
              ? 'Leave empty to keep the current one.'
              : 'Optional: signs each request (X-Signature). Leave empty to send unsigned.'
          }
        >
          {(c) => (
            <input {...c} type="password" name="sharedSecret" autoComplete="new-password" value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
          )}
        </Field>
        <label class="check field">
          <input type="checkbox" name="enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
          Enabled: calls are routed to it and sent
        </label>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {before ? 'Save destination' : 'Create destination'}
          </button>
          <a href={before ? href('destinations', before.id) : href('destinations')}>Cancel</a>
        </div>
        {busy && <StatusNotice>Saving…</StatusNotice>}
      </form>
    </>
  );
}
