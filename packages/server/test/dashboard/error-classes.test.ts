import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorClasses as offered } from '../../../dashboard/src/lib/error-classes.js';
import { errorClasses } from '../../src/admin/delivery-routes.js';

test("the dead letters' error-class filter offers every class the server accepts, and no other", () => {
  assert.deepEqual([...offered].sort(), [...errorClasses].sort());
  assert.equal(new Set(offered).size, offered.length, 'each once');
});
