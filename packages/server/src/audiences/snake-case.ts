/**
 * Audience names become trait keys in snake_case: "Power Users" is sent to webhooks as
 * `{"traits":{"power_users":true}}`, as Segment's audiences do.
 */

// A lower-case letter or digit followed by an upper-case letter starts a word ("powerUsers",
// "v2Beta"); so does the last capital of a run followed by a lower-case one ("HTMLParser").
const lowerThenUpper = /([\p{Ll}\p{N}])(\p{Lu})/gu;
const acronymThenWord = /(\p{Lu})(\p{Lu}\p{Ll})/gu;
// Apostrophes are dropped rather than split on: "Mom's Club" is `moms_club`, not `mom_s_club`.
const apostrophes = /['\u2019]/gu;
const separators = /[^\p{L}\p{N}]+/u;

/**
 * Converts a display name to snake_case: words are runs of letters and digits, split at
 * anything else and at camelCase boundaries, lower-cased and joined with `_`. Digits stay
 * with the letters they touch ("Top100 Buyers" → `top100_buyers`), letters of any script
 * are kept ("Café Fans" → `café_fans`), and a name with no letters or digits gives `""`.
 *
 * @example snakeCase('High-Value Customers 2024') // 'high_value_customers_2024'
 * @example snakeCase('powerUsers') // 'power_users'
 */
export function snakeCase(name: string): string {
  const spaced = name.replace(apostrophes, '').replace(lowerThenUpper, '$1 $2').replace(acronymThenWord, '$1 $2');
  const words = spaced.split(separators).filter((word) => word !== '');
  return words.join('_').toLowerCase();
}
