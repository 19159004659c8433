import { useState } from 'preact/hooks';
import { api } from '../lib/api.js';
import { count } from '../lib/format.js';
import { audiencePath, kinds } from '../lib/audience-paths.js';
import type { Audience, AudienceKind, AudienceRule } from '../lib/records.js';
import { href, navigate } from '../lib/router.js';
import type { Destination, Source } from '../lib/types.js';
import { useApi } from '../lib/use-api.js';
import { parseEquals, showEquals } from '../lib/rule-values.js';
import { Field } from '../components/field.js';
import { placeError, type FormErrors } from '../components/form-errors.js';
import { ErrorNotice, Loading, StatusNotice } from '../components/notice.js';

/** The fields the server may name in an error (`rule` last: a rule error without a key shows at the rule type). */
const fields = [
  'id',
  'name',
  'destinationIds',
  'sourceIds',
  'rule',
  'rule.type',
  'rule.event',
  'rule.minCount',
  'rule.withinDays',
  'rule.trait',
  'rule.equals',
] as const;

type RuleType = AudienceRule['type'];

/** What the rule inputs hold, as typed: the server decides what is valid. */
interface RuleDraft {
  type: RuleType;
  event: string;
  minCount: string;
  withinDays: string;
  trait: string;
  equals: string;
}

/**
 * Creates (`#/audiences/new/{kind}`) or edits (`#/audiences/{kind}/{id}/edit`) an audience or
 * computed trait, with a form for its rule; each refusal of the server shows at its field.
 */
export function AudienceForm(props: { kind: AudienceKind; id?: string }) {
  const existing = useApi<Audience>(props.id === undefined ? null : audiencePath(props.kind, props.id));
  const destinations = useApi<{ destinations: Destination[] }>('/destinations');
  const sources = useApi<{ sources: Source[] }>('/sources');
  const failed = existing.error ?? destinations.error ?? sources.error;
  if (failed !== undefined) return <ErrorNotice error={failed} />;
  if ((props.id !== undefined && !existing.data) || !destinations.data || !sources.data) return <Loading />;
  return <FormBody kind={props.kind} before={existing.data} destinations={destinations.data.destinations} sources={sources.data.sources} />;
}

function draftOf(kind: AudienceKind, rule: AudienceRule | undefined): RuleDraft {
  const draft: RuleDraft = { type: kind === 'audience' ? 'event' : 'event_count', event: '', minCount: '', withinDays: '', trait: '', equals: '' };
  if (!rule) return draft;
  draft.type = rule.type;
  if (rule.type === 'trait') return { ...draft, trait: rule.trait, equals: showEquals(rule.equals) };
  draft.event = rule.event;
  if (rule.withinDays !== undefined) draft.withinDays = String(rule.withinDays);
  if (rule.type === 'event' && rule.minCount !== undefined) draft.minCount = String(rule.minCount);
  return draft;
}

/** A number as typed, or the text itself, so the server's refusal names the field. */
function numberOrText(text: string): number | string {
  return /^\s*-?\d+(\.\d+)?\s*$/.test(text) ? Number(text) : text;
}

/**
 * The rule to send. On a create, empty optional keys are left out; on an edit of the same
 * type they are null, since a patch's rule merges into the stored one and null removes a key.
 */
function ruleBody(draft: RuleDraft, merge: boolean): Record<string, unknown> {
  const optional = (text: string) => (text.trim() === '' ? (merge ? null : undefined) : numberOrText(text));
  const rule: Record<string, unknown> =
    draft.type === 'trait'
      ? { type: 'trait', trait: draft.trait, equals: parseEquals(draft.equals) }
      : draft.type === 'event'
        ? { type: 'event', event: draft.event, minCount: optional(draft.minCount), withinDays: optional(draft.withinDays) }
        : { type: 'event_count', event: draft.event, withinDays: optional(draft.withinDays) };
  for (const key of Object.keys(rule)) if (rule[key] === undefined) delete rule[key];
  return rule;
}

function FormBody(props: { kind: AudienceKind; before: Audience | undefined; destinations: Destination[]; sources: Source[] }) {
  const { before } = props;
  const k = kinds[props.kind];
  const webhooks = props.destinations.filter((d) => d.type === 'Webhooks' || before?.destinationIds.includes(d.id));
  const [id, setId] = useState('');
  const [name, setName] = useState(before?.name ?? '');
  const [chosenDestinations, setChosenDestinations] = useState<string[]>(before?.destinationIds ?? (webhooks.length === 1 ? [webhooks[0]!.id] : []));
  const [chosenSources, setChosenSources] = useState<string[]>(before?.sourceIds ?? []);
  const [rule, setRule] = useState<RuleDraft>(draftOf(props.kind, before?.rule));
  const [errors, setErrors] = useState<FormErrors>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const [preview, setPreview] = useState<string | null>(null);
  const setRuleKey = (key: keyof RuleDraft) => (e: { currentTarget: { value: string } }) => setRule({ ...rule, [key]: e.currentTarget.value });

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      let saved: Audience;
      if (before) {
        saved = await api<Audience>('PATCH', audiencePath(props.kind, before.id), {
          name,
          destinationIds: chosenDestinations,
          sourceIds: chosenSources.length === 0 ? null : chosenSources,
          rule: ruleBody(rule, rule.type === before.rule.type),
        });
      } else {
        const body: Record<string, unknown> = { id: id.trim(), name, destinationIds: chosenDestinations, rule: ruleBody(rule, false) };
        if (chosenSources.length > 0) body['sourceIds'] = chosenSources;
        saved = await api<Audience>('POST', k.api, body);
      }
      navigate('audiences', k.segment, saved.id);
    } catch (error) {
      setErrors(placeError(error, fields));
      setBusy(false);
    }
  };

  // How many users the definition as typed holds now (`POST …/preview`): the sync's own count, nothing stored.
  const previewCount = async () => {
    setBusy(true);
    setPreview(null);
    try {
      const body: Record<string, unknown> = { id: before?.id ?? id.trim(), name, destinationIds: chosenDestinations, rule: ruleBody(rule, false) };
      if (chosenSources.length > 0) body['sourceIds'] = chosenSources;
      const answer = await api<{ members?: number; profiles?: number }>('POST', `${k.api}/preview`, body);
      const n = answer.members ?? answer.profiles ?? 0;
      setErrors({ fields: {} });
      setPreview(
        props.kind === 'audience'
          ? `${count(n)} user${n === 1 ? '' : 's'} would be members now.`
          : `${count(n)} user${n === 1 ? '' : 's'} would hold a count now.`,
      );
    } catch (error) {
      setErrors(placeError(error, fields));
    } finally {
      setBusy(false);
    }
  };

  const e = errors.fields;
  const title = before ? `Edit ${k.noun} ${before.id}` : `New ${k.noun}`;
  return (
    <>
      <h1>{title}</h1>
      <p>
        <a href={before ? href('audiences', k.segment, before.id) : href('audiences')}>Back</a>
      </p>
      {errors.form !== undefined && <ErrorNotice error={new Error(errors.form)} />}
      <form onSubmit={(ev) => void submit(ev)} noValidate class="panel" aria-label={title}>
        {!before && (
          <Field id="aud-id" label="Id" error={e['id']} hint="Lowercase letters, digits, - and _; it cannot change later.">
            {(c) => <input {...c} type="text" value={id} onInput={(ev) => setId(ev.currentTarget.value)} />}
          </Field>
        )}
        <Field
          id="aud-name"
          label="Name"
          error={e['name']}
          hint={before ? `The trait key sent stays ${before.trait}.` : 'Its snake_case form is the trait key sent to destinations.'}
        >
          {(c) => <input {...c} type="text" value={name} onInput={(ev) => setName(ev.currentTarget.value)} />}
        </Field>
        <CheckList
          id="aud-destinations"
          legend="Destinations"
          error={e['destinationIds']}
          options={webhooks.map((d) => ({ id: d.id, label: d.name }))}
          chosen={chosenDestinations}
          onChange={setChosenDestinations}
          empty="No Webhooks destination yet: create one first."
        />
        <CheckList
          id="aud-sources"
          legend="Sources"
          hint="None chosen: events of every source count."
          error={e['sourceIds']}
          options={props.sources.map((s) => ({ id: s.id, label: s.name }))}
          chosen={chosenSources}
          onChange={setChosenSources}
        />
        <fieldset>
          <legend>Rule</legend>
          <Field id="aud-rule-type" label="Who qualifies" error={e['rule.type'] ?? e['rule']}>
            {(c) => (
              <select {...c} value={rule.type} onChange={setRuleKey('type')}>
                {props.kind === 'audience' ? (
                  <>
                    <option value="event">Users who did an event</option>
                    <option value="trait">Users with a trait value</option>
                  </>
                ) : (
                  <option value="event_count">Count of an event per user</option>
                )}
              </select>
            )}
          </Field>
          {rule.type === 'trait' ? (
            <>
              <Field id="aud-trait" label="Trait" error={e['rule.trait']} hint="From identify calls: the latest value that carries it decides.">
                {(c) => <input {...c} type="text" value={rule.trait} onInput={setRuleKey('trait')} />}
              </Field>
              <Field
                id="aud-equals"
                label="Equals"
                error={e['rule.equals']}
                hint='A number, true, false and null are read as such; put text that looks like one in "quotes".'
              >
                {(c) => <input {...c} type="text" value={rule.equals} onInput={setRuleKey('equals')} />}
              </Field>
            </>
          ) : (
            <>
              <Field id="aud-event" label="Event name" error={e['rule.event']} hint="A track call's event, exactly (case included).">
                {(c) => <input {...c} type="text" value={rule.event} onInput={setRuleKey('event')} />}
              </Field>
              {rule.type === 'event' && (
                <Field id="aud-min" label="At least this many times" error={e['rule.minCount']} hint="1 to 1,000,000; empty: 1.">
                  {(c) => <input {...c} type="text" inputMode="numeric" value={rule.minCount} onInput={setRuleKey('minCount')} />}
                </Field>
              )}
              <Field id="aud-within" label="Within the last days" error={e['rule.withinDays']} hint="1 to 3650; empty: all time.">
                {(c) => <input {...c} type="text" inputMode="numeric" value={rule.withinDays} onInput={setRuleKey('withinDays')} />}
              </Field>
            </>
          )}
        </fieldset>
        {preview && <StatusNotice>{preview}</StatusNotice>}
        <div class="actions">
          <button type="button" disabled={busy} onClick={() => void previewCount()}>
            {props.kind === 'audience' ? 'Preview members' : 'Preview profiles'}
          </button>
          <button type="submit" class="primary" disabled={busy}>
            {before ? `Save ${k.noun}` : `Create ${k.noun}`}
          </button>
        </div>
      </form>
    </>
  );
}

/** A fieldset of checkboxes with the server's error for the list (or one of its entries) under it. */
function CheckList(props: {
  id: string;
  legend: string;
  hint?: string;
  error: string | undefined;
  options: { id: string; label: string }[];
  chosen: string[];
  onChange: (chosen: string[]) => void;
  empty?: string;
}) {
  const described = [props.hint ? `${props.id}-hint` : '', props.error ? `${props.id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <fieldset aria-describedby={described} class={props.error ? 'field-invalid' : undefined}>
      <legend>{props.legend}</legend>
      {props.hint && (
        <p class="hint" id={`${props.id}-hint`}>
          {props.hint}
        </p>
      )}
      {props.options.length === 0 && props.empty && <p class="muted">{props.empty}</p>}
      {props.options.map((o) => (
        <label key={o.id} class="check">
          <input
            type="checkbox"
            value={o.id}
            checked={props.chosen.includes(o.id)}
            onChange={(ev) => props.onChange(ev.currentTarget.checked ? [...props.chosen, o.id] : props.chosen.filter((x) => x !== o.id))}
          />
          {o.label} <code class="muted">{o.id}</code>
        </label>
      ))}
      {props.error && (
        <p class="field-error" id={`${props.id}-error`} role="alert">
          {props.error}
        </p>
      )}
    </fieldset>
  );
}
