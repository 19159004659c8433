import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { snakeCase } from '../../src/audiences/snake-case.js';

describe('snakeCase', () => {
  // [case, audience name, trait key]
  const cases: [string, string, string][] = [
    ['C01 words with a space', 'Power Users', 'power_users'],
    ['C02 hyphen and a year', 'High-Value Customers 2024', 'high_value_customers_2024'],
    ['C03 camelCase', 'powerUsers', 'power_users'],
    ['C04 PascalCase', 'PowerUsers', 'power_users'],
    ['C05 an acronym before a word', 'HTMLReaders', 'html_readers'],
    ['C06 known limit: a mixed-case acronym splits at its inner capital', 'activeSaaS', 'active_saa_s'],
    ['C07 all capitals', 'VIP', 'vip'],
    ['C08 already snake_case', 'power_users', 'power_users'],
    ['C09 runs of separators and edges', '  --Power__Users!!  ', 'power_users'],
    ['C10 digits stay with their word', 'Top100 Buyers', 'top100_buyers'],
    ['C11 a digit then a capital starts a word', 'v2Beta Testers', 'v2_beta_testers'],
    ['C12 apostrophes are dropped', "Mom's Club", 'moms_club'],
    ['C13 typographic apostrophe', 'Mom’s Club', 'moms_club'],
    ['C14 dots and slashes', 'EU/UK users.active', 'eu_uk_users_active'],
    ['C15 accented letters are kept', 'Café Fans', 'café_fans'],
    ['C16 capital accented letters split camelCase', 'clientÉlite', 'client_élite'],
    ['C17 scripts without case', '日本 Users', '日本_users'],
    ['C18 emoji are separators', 'Fans 🎉 2024', 'fans_2024'],
    ['C19 nothing usable', '!!!', ''],
    ['C20 empty', '', ''],
  ];
  for (const [name, input, expected] of cases) {
    test(`${name}: ${JSON.stringify(input)}`, () => assert.equal(snakeCase(input), expected));
  }

  test('C21 idempotent: a snake_case key maps to itself', () => {
    for (const [, input] of cases) {
      const once = snakeCase(input);
      assert.equal(snakeCase(once), once);
    }
  });
});
