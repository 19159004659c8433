import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { libraryInfo } from '@ferry/analytics';
import { signBody } from '@ferry/webhooks';
import { buildAudienceIdentifyBody, buildDeleteBody, buildWebhookBody } from '../../src/destinations/webhooks/body.js';
import { webhookHeaders } from '../../src/destinations/webhooks/request.js';
import type { NormalizedMessage } from '../../src/model/message.js';

/** A page of docs/ as text. */
const doc = (name: string): string => readFileSync(new URL(`../../../../docs/${name}`, import.meta.url), 'utf8');

/** The text of `page` from the heading `from` to the next heading of the same level. */
function section(page: string, from: string): string {
  const start = page.indexOf(`\n${from}\n`);
  assert.ok(start >= 0, `no heading ${from}`);
  const level = from.slice(0, from.indexOf(' ') + 1);
  const end = page.indexOf(`\n${level}`, start + from.length + 2);
  return page.slice(start, end < 0 ? undefined : end);
}

/** Each `### title` of a section with the first fenced block under it. */
function examples(text: string, fence: string): { title: string; block: string }[] {
  return text
    .split('\n### ')
    .slice(1)
    .map((part) => {
      const title = part.slice(0, part.indexOf('\n'));
      const open = part.indexOf('```' + fence + '\n');
      assert.ok(open >= 0, `no ${fence} example under ${title}`);
      const from = open + fence.length + 4;
      return { title, block: part.slice(from, part.indexOf('```', from)) };
    });
}

/** The stored message a documented body is made from: the body's members, named as ingestion names them. */
function messageOf(body: Record<string, unknown>): NormalizedMessage {
  const { version, 'Previous ID': previousId, 'User ID': aliasUserId, ...members } = body;
  assert.equal(version, 1);
  const message = { ...members } as unknown as NormalizedMessage;
  if (previousId !== undefined) Object.assign(message, { previousId, userId: aliasUserId });
  return message;
}

/** The body the server sends for what a documented example shows. */
function rebuilt(title: string, body: Record<string, any>): string {
  switch (title) {
    case 'delete':
      return buildDeleteBody(body.userId, Date.parse(body.timestamp));
    case 'identify for audience membership':
      // As the audience sync builds it: no context of its own.
      return buildAudienceIdentifyBody({ userId: body.userId, messageId: body.messageId, timestampMs: Date.parse(body.timestamp), traits: body.traits });
    default:
      return buildWebhookBody(messageOf(body));
  }
}

describe('the bodies docs/webhook-bodies.md shows are what the server sends', () => {
  const shown = examples(section(doc('webhook-bodies.md'), '## Bodies by type'), 'json');

  test('D01 every call type has its example', () => {
    assert.deepEqual(
      shown.map((e) => e.title),
      ['page', 'screen', 'identify', 'track', 'alias', 'group', 'delete', 'identify for audience membership'],
    );
  });

  for (const { title, block } of shown) {
    test(`D02 ${title}: member for member, in the order sent`, () => {
      const body = JSON.parse(block) as Record<string, any>;
      assert.equal(rebuilt(title, body), JSON.stringify(body));
      if (body.type !== 'delete') assert.equal(body.type, title.split(' ')[0]);
    });
  }

  test('D03 a client library in an example context reports what @ferry/analytics reports', () => {
    const libraries = shown.map((e) => JSON.parse(e.block).context?.library).filter((l) => l !== undefined);
    assert.ok(libraries.length > 0);
    for (const library of libraries) assert.deepEqual(library, libraryInfo);
  });

  test('D04 the audience messageId has the form the sync makes: aud_ and 32 hex digits', () => {
    const audience = shown.find((e) => e.title === 'identify for audience membership')!;
    assert.match(JSON.parse(audience.block).messageId, /^aud_[0-9a-f]{32}$/);
  });
});

describe('the request docs/delivery.md shows is what the server sends', () => {
  const block = section(doc('delivery.md'), '## What is sent').split('```\n')[1]!;
  const [head, body] = block.split('\n\n') as [string, string];
  const lines = head.split('\n');
  const headers = lines.slice(1).map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)] as const);
  const sent = body.trimEnd();

  test('E01 the body is the track body Ferry builds, its length and signature with the secret named', () => {
    assert.equal(lines[0], 'POST /events HTTP/1.1');
    assert.equal(buildWebhookBody(messageOf(JSON.parse(sent))), sent);
    assert.equal(Object.fromEntries(headers)['content-length'], String(Buffer.byteLength(sent)));
    assert.equal(Object.fromEntries(headers)['X-Signature'], signBody(sent, 'demo-secret'));
  });

  test("E02 the static header and Ferry's own, in the spelling, order and values sent", () => {
    const own = webhookHeaders(
      { url: 'https://hooks.example.com/events', headers: { 'X-Team': 'growth' } },
      { xSignature: signBody(sent, 'demo-secret') },
      'backend',
    );
    const shownOwn = headers.filter(([name]) => name in own);
    assert.deepEqual(shownOwn, Object.entries(own));
  });
});
