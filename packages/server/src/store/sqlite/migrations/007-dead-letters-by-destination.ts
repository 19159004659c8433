/**
 * Dead letters per destination, counted for metrics (`ferry_dead_letters`) from an index of
 * their own rather than from the rows: a receiver broken for days leaves millions. Only rows
 * that become or stop being dead letters touch it.
 */
export const sql = `
CREATE INDEX deliveries_dead_destination ON deliveries (destination_id) WHERE status = 'dead';
`;
