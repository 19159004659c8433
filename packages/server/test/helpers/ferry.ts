import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { createFerry, type Ferry, type FerryOptions } from '../../src/app.js';
import { configFromObject } from '../../src/config/load.js';
import type { FerryConfig } from '../../src/config/model.js';
import { within } from './within.js';

export const adminToken = 'test-admin-token-of-32-characters';
export const writeKey = 'test-write-key';
export const secret = 'test-shared-secret';

/** Longest a request to the test server may take before the test fails instead of hanging. */
const REQUEST_DEADLINE_MS = 30_000;
/** Longest a worker driven by hand may take to send what is due, or deletions to be carried out. */
const WORKER_DEADLINE_MS = 30_000;
/** Longest a stop may take: the worker's grace for running sends (10 s) and some margin. */
const STOP_DEADLINE_MS = 30_000;

/** A config object for tests: one source `app` and whatever destinations the test names. */
export function testConfig(destinations: unknown[], extra: Record<string, unknown> = {}): FerryConfig {
  return configFromObject(
    {
      sources: [
        { id: 'app', name: 'App', writeKey },
        { id: 'other', name: 'Other', writeKey: 'other-write-key' },
      ],
      destinations,
      network: { allowPrivateNetworks: true },
      ...extra,
    },
    'test config',
  );
}

/** A webhook destination connected to `app` posting to the given URLs. */
export function webhooksDestination(id: string, urls: string[], more: Record<string, unknown> = {}) {
  const { settings, ...rest } = more as { settings?: Record<string, unknown> };
  return {
    id,
    type: 'Webhooks',
    name: id,
    enabled: true,
    sources: ['app'],
    settings: { webhooks: urls.map((url) => ({ url })), sharedSecret: secret, ...settings },
    ...rest,
  };
}

export interface TestFerry {
  ferry: Ferry;
  url: string;
  dataDir: string;
  /** POSTs JSON (or raw bytes) to an ingestion path with the test write key. */
  send(
    path: string,
    body: unknown,
    init?: { writeKey?: string | null; headers?: Record<string, string>; gzip?: boolean; raw?: Buffer | string },
  ): Promise<{ status: number; json: any }>;
  /** Calls the admin API with the test token. */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
  /** The worker's `runUntilIdle()`, failing after 30 s instead of hanging. */
  idle(): Promise<void>;
  /** The worker's `settled()`, failing after 30 s instead of hanging. */
  settled(): Promise<void>;
  /** The deletion runner's `idle()`, failing after 30 s instead of hanging. */
  deletionsDone(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a real Ferry on loopback with a fresh SQLite file. */
export async function startFerry(config: FerryConfig, options: Partial<FerryOptions> = {}): Promise<TestFerry> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-test-'));
  const ferry = await createFerry({
    config,
    dataDir,
    adminToken,
    logger: pino({ level: process.env['FERRY_LOG_LEVEL'] ?? 'silent' }),
    ...options,
  });
  const url = await within(REQUEST_DEADLINE_MS, 'the test server to start', ferry.start(0, '127.0.0.1'));
  return {
    ferry,
    url,
    dataDir,
    async send(path, body, init = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
      const key = init.writeKey === undefined ? writeKey : init.writeKey;
      if (key !== null) headers['authorization'] = 'Basic ' + Buffer.from(`${key}:`).toString('base64');
      let payload: Buffer | string = init.raw ?? JSON.stringify(body);
      if (init.gzip) {
        payload = gzipSync(payload);
        headers['content-encoding'] = 'gzip';
      }
      const res = await fetch(url + path, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) });
      const text = await res.text();
      return { status: res.status, json: text ? JSON.parse(text) : undefined };
    },
    async admin(method, path, body) {
      const res = await fetch(url + '/admin/v1' + path, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
      });
      const text = await res.text();
      return { status: res.status, json: text ? JSON.parse(text) : undefined };
    },
    idle() {
      return within(WORKER_DEADLINE_MS, 'the worker to send everything due', ferry.worker.runUntilIdle());
    },
    settled() {
      return within(WORKER_DEADLINE_MS, 'the sends in flight to end', ferry.worker.settled());
    },
    deletionsDone() {
      return within(WORKER_DEADLINE_MS, 'the deletion requests to be carried out', ferry.regulations.idle());
    },
    async stop() {
      await within(STOP_DEADLINE_MS, 'the test server to stop', ferry.stop());
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
