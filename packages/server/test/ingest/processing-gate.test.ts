import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProcessingGate } from '../../src/ingest/processing-gate.js';

/** A task that runs until `finish` is called, recording when it started. */
function heldTask(started: number[], id: number) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { run: async () => (started.push(id), done), finish: () => finish() };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('tasks run while their bytes fit the limit together; the others start in arrival order as bytes are given back', async () => {
  const gate = new ProcessingGate(100);
  const started: number[] = [];
  const weights = [40, 40, 40, 10, 10];
  const tasks = weights.map((_, id) => heldTask(started, id));
  const results = tasks.map((task, id) => gate.run(weights[id]!, task.run));
  await turn();
  // 40 + 40 fit; the third (40) does not, and the light ones behind it wait their turn.
  assert.deepEqual(started, [0, 1]);
  assert.equal(gate.runningBytes, 80);
  tasks[1]!.finish();
  await results[1];
  await turn();
  // 40 + 40 + 10 + 10 = 100: the third and both light ones fit now.
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  assert.equal(gate.runningBytes, 100);
  for (const t of [0, 2, 3, 4]) tasks[t]!.finish();
  await Promise.all(results);
  assert.equal(gate.runningBytes, 0);
});

test('a task heavier than the limit runs alone, and nothing starts beside it', async () => {
  const gate = new ProcessingGate(100);
  const started: number[] = [];
  const heavy = heldTask(started, 0);
  const light = heldTask(started, 1);
  const results = [gate.run(500, heavy.run), gate.run(1, light.run)];
  await turn();
  assert.deepEqual(started, [0]);
  heavy.finish();
  await results[0];
  await turn();
  assert.deepEqual(started, [0, 1]);
  light.finish();
  await Promise.all(results);
});

test('a task that fails gives its bytes back and its error reaches the caller', async () => {
  const gate = new ProcessingGate(10);
  await assert.rejects(
    gate.run(10, async () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  assert.equal(gate.runningBytes, 0);
  assert.equal(await gate.run(10, async () => 'next'), 'next');
});
