"""The projections store: where it lives and one connection API over SQLite and PostgreSQL
(`database`, `postgres`), its schema and SQL (`schema`, `tables`), the write side
(`writer`: batches, positions in the same transaction) and the read side (`queries`)."""
