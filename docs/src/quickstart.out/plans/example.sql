-- plans/example.sql: one read path, the SQL exactly as the application sends it: a literal
-- where it sends a literal, $1 where it binds a parameter (give the values in the
-- expectation). Replace this example, which reads the catalog every PostgreSQL database has,
-- with one of your application's queries.
SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = $1
