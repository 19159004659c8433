/**
 * The attempt log's error classes, which `GET /dead-letters` and `POST /dead-letters/replay`
 * filter on, in the order the filter offers them. The server's list (`errorClasses` in its
 * admin delivery routes) is the reference; a test keeps this one the same set.
 */
export const errorClasses = ['http', 'timeout', 'connect', 'dns', 'tls', 'ssrf', 'invalid_url', 'protocol', 'circuit_open'] as const;
