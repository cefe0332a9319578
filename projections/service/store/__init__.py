"""The projections store: one connection interface (`database`) with its backends (`sqlite`,
`postgres`) and `locations`, which opens the one a user names; the schema and SQL
(`schema`, `tables`); the write side (`writer`: batches, positions in the same
transaction) and the read side (`queries`)."""
