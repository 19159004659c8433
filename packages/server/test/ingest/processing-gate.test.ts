import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProcessingGate } from '../../src/ingest/processing-gate.js';

/** A task that runs until `finish` is called, recording when it started. */
function heldTask(started: number[], id: number) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { run: async () => (started.push(id), done), finish: () => finish() };
}

test('at most `limit` tasks run at once; the others start in arrival order as slots free', async () => {
  const gate = new ProcessingGate(2);
  const started: number[] = [];
  const tasks = [0, 1, 2, 3, 4].map((id) => heldTask(started, id));
  const results = tasks.map((task) => gate.run(task.run));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(started, [0, 1]);
  tasks[1]!.finish();
  await results[1];
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(started, [0, 1, 2]);
  tasks[0]!.finish();
  tasks[2]!.finish();
  await Promise.all([results[0], results[2]]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  tasks[3]!.finish();
  tasks[4]!.finish();
  await Promise.all(results);
});

test('a task that fails frees its slot and its error reaches the caller', async () => {
  const gate = new ProcessingGate(1);
  await assert.rejects(gate.run(async () => Promise.reject(new Error('boom'))), /boom/);
  assert.equal(await gate.run(async () => 'next'), 'next');
});
