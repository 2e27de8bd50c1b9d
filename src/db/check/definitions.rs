//! What a check's scratch re-plans need ([`crate::db::scratch`]), read from the measured
//! server's catalog inside the check's own transaction, after its setup: catalog reads only
//! (`pg_get_indexdef`, `pg_get_viewdef`, `pg_get_functiondef`, `format_type`, …, which take
//! ACCESS SHARE at most), on the client's clock like every request of a check.
//!
//! Which objects: the relations the plans read, every name the read path's SQL could mean
//! (each identifier and `a.b` pair the server resolves on the session's search path, each
//! function and type of that name), and, to a fixed point, what those depend on: partitions
//! and parents, column types (enums, domains, ranges, composites), collations, the functions in
//! index expressions and predicates, check constraints, generated columns, view queries and
//! row-level security policies, the relations a function's body names, and the extensions any
//! of them belongs to (copied as `CREATE EXTENSION`, never object by object). Objects PostgreSQL
//! creates itself (an OID below 16384) are on every server of the major already. Foreign
//! tables, user-defined base types, aggregates and functions in a language other than `sql` and
//! `plpgsql` are not copied: a request that needs one says so and is not re-planned.
//!
//! Definitions are read with `search_path = pg_catalog, pg_temp` (in a savepoint rolled back
//! after), so every name in them is schema-qualified; read once per run and object.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::{Fail, Sess, failure};
use crate::db::Asked as DbAsked;
use crate::db::scratch::{Ask, Definitions, Request, RoleFacts, Uncopyable, Unit};
use crate::measure::{Failure, IndexFacts};
use crate::plan::explain::Explain;
use crate::project::ScopeCheck;
use crate::sql::names::names_in;

/// The settings of the measured session that decide how a statement is parsed and planned,
/// copied to the scratch re-plan. The scan types are not among them: the re-plan sets those.
const PLANNER_SETTINGS: [&str; 16] = [
    "DateStyle",
    "IntervalStyle",
    "TimeZone",
    "standard_conforming_strings",
    "transform_null_equals",
    "array_nulls",
    "backslash_quote",
    "default_text_search_config",
    "constraint_exclusion",
    "enable_partition_pruning",
    "enable_partitionwise_join",
    "enable_partitionwise_aggregate",
    "from_collapse_limit",
    "join_collapse_limit",
    "geqo",
    "geqo_threshold",
];

/// The relations, functions and types the names of the read path may mean, resolved on the
/// check's search path (after its setup): `$1`/`$2` schema and name of each candidate relation
/// (schema NULL for a bare name), `$3` function names, `$4` type names.
const SEEDS: &str = "\
    SELECT DISTINCT 'pg_class'::pg_catalog.text, c.oid \
      FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), \
                      pg_catalog.unnest($2::pg_catalog.text[])) AS n(s, r) \
      CROSS JOIN LATERAL (SELECT pg_catalog.to_regclass(CASE WHEN n.s IS NULL \
            THEN pg_catalog.quote_ident(n.r) \
            ELSE pg_catalog.quote_ident(n.s) OPERATOR(pg_catalog.||) '.' \
                 OPERATOR(pg_catalog.||) pg_catalog.quote_ident(n.r) END)::pg_catalog.oid \
            AS oid) c \
     WHERE c.oid IS NOT NULL AND c.oid OPERATOR(pg_catalog.>=) 16384 \
    UNION \
    SELECT 'pg_proc', p.oid FROM pg_catalog.pg_proc p \
     WHERE p.proname OPERATOR(pg_catalog.=) ANY ($3::pg_catalog.text[]) \
       AND p.oid OPERATOR(pg_catalog.>=) 16384 \
    UNION \
    SELECT 'pg_type', t.oid FROM pg_catalog.pg_type t \
     WHERE t.typname OPERATOR(pg_catalog.=) ANY ($4::pg_catalog.text[]) \
       AND t.oid OPERATOR(pg_catalog.>=) 16384 AND t.typtype OPERATOR(pg_catalog.<>) 'c'";

/// The same, for the names a function's body holds: by name in any schema (the body is read
/// with the caller's search path, or its own).
const BODY_SEEDS: &str = "\
    SELECT 'pg_class'::text, c.oid FROM pg_catalog.pg_class c \
     WHERE c.relname = ANY ($1::text[]) AND c.oid >= 16384 \
       AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'c') \
    UNION \
    SELECT 'pg_proc', p.oid FROM pg_catalog.pg_proc p \
     WHERE p.proname = ANY ($1::text[]) AND p.oid >= 16384";

/// One round of the closure: what the new relations (`$1`), types (`$2`) and functions (`$3`)
/// depend on, each with the extension it belongs to, if any. Of the relations' indexes, only the
/// asked ones (`$4`, leaves included) are followed: every other index is dropped by the re-plan,
/// and copied only where it can be.
const CLOSURE: &str = "\
    WITH r AS (SELECT unnest($1::oid[]) AS oid), \
         t AS (SELECT unnest($2::oid[]) AS oid), \
         f AS (SELECT unnest($3::oid[]) AS oid), \
         owned(classid, objid) AS ( \
            SELECT 'pg_class'::regclass, i.indexrelid FROM pg_catalog.pg_index i \
              JOIN r ON i.indrelid = r.oid WHERE i.indexrelid = ANY ($4::oid[]) \
            UNION ALL SELECT 'pg_constraint'::regclass, c.oid FROM pg_catalog.pg_constraint c \
              JOIN r ON c.conrelid = r.oid \
            UNION ALL SELECT 'pg_attrdef'::regclass, d.oid FROM pg_catalog.pg_attrdef d \
              JOIN r ON d.adrelid = r.oid \
              JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
             WHERE a.attgenerated <> '' \
            UNION ALL SELECT 'pg_rewrite'::regclass, w.oid FROM pg_catalog.pg_rewrite w \
              JOIN r ON w.ev_class = r.oid \
            UNION ALL SELECT 'pg_policy'::regclass, p.oid FROM pg_catalog.pg_policy p \
              JOIN r ON p.polrelid = r.oid \
            UNION ALL SELECT 'pg_constraint'::regclass, c.oid FROM pg_catalog.pg_constraint c \
              JOIN t ON c.contypid = t.oid \
            UNION ALL SELECT 'pg_class'::regclass, r.oid FROM r \
            UNION ALL SELECT 'pg_type'::regclass, t.oid FROM t \
            UNION ALL SELECT 'pg_proc'::regclass, f.oid FROM f), \
         refs(classid, objid) AS ( \
            SELECT d.refclassid, d.refobjid FROM pg_catalog.pg_depend d \
              JOIN owned o ON d.classid = o.classid AND d.objid = o.objid \
            UNION SELECT 'pg_class'::regclass, i.inhparent FROM pg_catalog.pg_inherits i \
              JOIN r ON i.inhrelid = r.oid \
            UNION SELECT 'pg_class'::regclass, i.inhrelid FROM pg_catalog.pg_inherits i \
              JOIN r ON i.inhparent = r.oid \
            UNION SELECT 'pg_type'::regclass, a.atttypid FROM pg_catalog.pg_attribute a \
              JOIN r ON a.attrelid = r.oid WHERE a.attnum > 0 AND NOT a.attisdropped \
            UNION SELECT 'pg_collation'::regclass, a.attcollation FROM pg_catalog.pg_attribute a \
              JOIN r ON a.attrelid = r.oid WHERE a.attnum > 0 AND NOT a.attisdropped \
            UNION SELECT 'pg_type'::regclass, y.typelem FROM pg_catalog.pg_type y \
              JOIN t ON y.oid = t.oid \
            UNION SELECT 'pg_type'::regclass, y.typbasetype FROM pg_catalog.pg_type y \
              JOIN t ON y.oid = t.oid \
            UNION SELECT 'pg_class'::regclass, y.typrelid FROM pg_catalog.pg_type y \
              JOIN t ON y.oid = t.oid \
            UNION SELECT 'pg_namespace'::regclass, c.relnamespace FROM pg_catalog.pg_class c \
              JOIN r ON c.oid = r.oid) \
    SELECT x.classid::regclass::text, x.objid, e.refobjid \
      FROM refs x \
      LEFT JOIN pg_catalog.pg_depend e \
        ON e.classid = x.classid AND e.objid = x.objid AND e.deptype = 'e' \
     WHERE x.objid >= 16384";

/// What kind each object is, for the closure and for what cannot be copied: `$1` catalog and
/// `$2` OID of each.
const DESCRIBE: &str = "\
    SELECT o.c, o.oid, pg_catalog.pg_describe_object(o.c::regclass, o.oid, 0), \
           CASE o.c \
             WHEN 'pg_class' THEN (SELECT c.relkind::text FROM pg_catalog.pg_class c \
                                   WHERE c.oid = o.oid) \
             WHEN 'pg_type' THEN (SELECT CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_type a \
                                                           WHERE a.typarray = y.oid) \
                                              THEN 'array' ELSE y.typtype::text END \
                                  FROM pg_catalog.pg_type y WHERE y.oid = o.oid) \
             WHEN 'pg_proc' THEN (SELECT l.lanname::text || ':' || p.prokind::text \
                                  FROM pg_catalog.pg_proc p \
                                  JOIN pg_catalog.pg_language l ON l.oid = p.prolang \
                                  WHERE p.oid = o.oid) END, \
           CASE WHEN o.c = 'pg_proc' THEN (SELECT p.prosrc FROM pg_catalog.pg_proc p \
                                           WHERE p.oid = o.oid) END \
      FROM unnest($1::text[], $2::oid[]) AS o(c, oid)";

/// Schemas (`$1`) and the schemas of the search path by name (`$2`).
const SCHEMAS: &str = "\
    SELECT 'schema ' || quote_ident(n.nspname), 0, \
           format('CREATE SCHEMA IF NOT EXISTS %I', n.nspname) \
      FROM pg_catalog.pg_namespace n \
     WHERE (n.oid = ANY ($1::oid[]) OR n.nspname = ANY ($2::text[])) \
       AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
    UNION ALL \
    SELECT 'schema ' || quote_ident(n.nspname), 97, \
           format('GRANT USAGE ON SCHEMA %I TO PUBLIC', n.nspname) \
      FROM pg_catalog.pg_namespace n \
     WHERE (n.oid = ANY ($1::oid[]) OR n.nspname = ANY ($2::text[])) \
       AND n.nspname NOT IN ('pg_catalog', 'information_schema')";

const EXTENSIONS: &str = "\
    SELECT 'extension ' || quote_ident(e.extname), 10, \
           format('CREATE EXTENSION IF NOT EXISTS %I WITH SCHEMA %I CASCADE', \
                  e.extname, n.nspname) \
      FROM pg_catalog.pg_extension e \
      JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace \
     WHERE e.oid = ANY ($1::oid[])";

const COLLATIONS: &str = "\
    SELECT 'collation ' || format('%I.%I', n.nspname, c.collname), 20, \
           CASE j->>'collprovider' \
             WHEN 'c' THEN format('CREATE COLLATION %I.%I (provider = libc, lc_collate = %L, \
                                   lc_ctype = %L)', n.nspname, c.collname, \
                                  j->>'collcollate', j->>'collctype') \
             WHEN 'i' THEN format('CREATE COLLATION %I.%I (provider = icu, locale = %L, \
                                   deterministic = %s)', n.nspname, c.collname, \
                                  coalesce(j->>'colllocale', j->>'colliculocale', \
                                           j->>'collcollate'), \
                                  c.collisdeterministic) \
             WHEN 'b' THEN format('CREATE COLLATION %I.%I (provider = builtin, locale = %L)', \
                                  n.nspname, c.collname, j->>'colllocale') \
           END \
      FROM pg_catalog.pg_collation c \
      JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace \
      CROSS JOIN LATERAL to_jsonb(c) j \
     WHERE c.oid = ANY ($1::oid[]) AND j->>'collprovider' IN ('c', 'i', 'b')";

/// Enums, domains (their constraints added once functions exist) and ranges.
const TYPES: &str = "\
    SELECT 'type ' || format('%I.%I', n.nspname, t.typname), d.rank, d.sql \
      FROM pg_catalog.pg_type t \
      JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace \
      CROSS JOIN LATERAL ( \
        SELECT 20 AS rank, format('CREATE TYPE %I.%I AS ENUM (%s)', n.nspname, t.typname, \
               (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) \
                  FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid)) AS sql \
         WHERE t.typtype = 'e' \
        UNION ALL \
        SELECT 25, format('CREATE DOMAIN %I.%I AS %s%s%s', n.nspname, t.typname, \
               format_type(t.typbasetype, t.typtypmod), \
               CASE WHEN t.typcollation <> 0 AND t.typcollation <> \
                         (SELECT b.typcollation FROM pg_catalog.pg_type b \
                          WHERE b.oid = t.typbasetype) \
                    THEN ' COLLATE ' || (SELECT format('%I.%I', cn.nspname, co.collname) \
                                         FROM pg_catalog.pg_collation co \
                                         JOIN pg_catalog.pg_namespace cn \
                                           ON cn.oid = co.collnamespace \
                                         WHERE co.oid = t.typcollation) \
                    ELSE '' END, \
               CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END) \
         WHERE t.typtype = 'd' \
        UNION ALL \
        SELECT 60, format('ALTER DOMAIN %I.%I ADD CONSTRAINT %I %s', n.nspname, t.typname, \
                          con.conname, pg_get_constraintdef(con.oid)) \
          FROM pg_catalog.pg_constraint con \
         WHERE t.typtype = 'd' AND con.contypid = t.oid AND con.contype = 'c' \
        UNION ALL \
        SELECT 25, format('CREATE TYPE %I.%I AS RANGE (SUBTYPE = %s%s)', n.nspname, t.typname, \
                          format_type(rg.rngsubtype, NULL), \
                          CASE WHEN rg.rngsubdiff <> 0 \
                               THEN ', SUBTYPE_DIFF = ' || rg.rngsubdiff::regproc::text \
                               ELSE '' END) \
          FROM pg_catalog.pg_range rg WHERE t.typtype = 'r' AND rg.rngtypid = t.oid \
      ) d \
     WHERE t.oid = ANY ($1::oid[]) AND t.typtype IN ('e', 'd', 'r')";

const FUNCTIONS: &str = "\
    SELECT 'function ' || p.oid::regprocedure::text, 50, pg_get_functiondef(p.oid) \
      FROM pg_catalog.pg_proc p WHERE p.oid = ANY ($1::oid[])";

/// Tables (partitioned, partitions, inheritance children), materialized views (as tables),
/// standalone composite types and views, with their check constraints, owner and grant.
const RELATIONS: &str = "\
    WITH rel AS ( \
      SELECT c.*, n.nspname, format('%I.%I', n.nspname, c.relname) AS q \
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
       WHERE c.oid = ANY ($1::oid[]) AND c.relkind IN ('r', 'p', 'm', 'c', 'v')), \
    cols AS ( \
      SELECT a.attrelid, \
             string_agg(format('%I %s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod), \
               CASE WHEN a.attcollation <> 0 AND a.attcollation <> y.typcollation \
                    THEN ' COLLATE ' || (SELECT format('%I.%I', cn.nspname, co.collname) \
                                         FROM pg_catalog.pg_collation co \
                                         JOIN pg_catalog.pg_namespace cn \
                                           ON cn.oid = co.collnamespace \
                                         WHERE co.oid = a.attcollation) \
                    ELSE '' END, \
               CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END, \
               CASE a.attgenerated \
                 WHEN 's' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) \
                               || ') STORED' \
                 WHEN 'v' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) \
                               || ') VIRTUAL' \
                 ELSE '' END), ', ' ORDER BY a.attnum) AS full_list, \
             string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), \
                        ', ' ORDER BY a.attnum) AS plain_list \
        FROM pg_catalog.pg_attribute a \
        JOIN pg_catalog.pg_type y ON y.oid = a.atttypid \
        LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
       WHERE a.attrelid IN (SELECT oid FROM rel) AND a.attnum > 0 AND NOT a.attisdropped \
       GROUP BY a.attrelid) \
    SELECT CASE WHEN rel.relkind = 'v' THEN 'view ' ELSE 'table ' END || rel.q, \
           CASE WHEN rel.relkind = 'v' THEN 70 WHEN rel.relispartition THEN 41 ELSE 40 END, \
           CASE \
             WHEN rel.relkind = 'c' THEN \
               format('CREATE TYPE %s AS (%s)', rel.q, coalesce(cols.plain_list, '')) \
             WHEN rel.relkind = 'v' THEN \
               format('CREATE VIEW %s%s AS %s', rel.q, \
                      CASE WHEN rel.reloptions IS NOT NULL \
                           THEN ' WITH (' || array_to_string(rel.reloptions, ', ') || ')' \
                           ELSE '' END, \
                      pg_get_viewdef(rel.oid)) \
             WHEN rel.relispartition THEN \
               format('CREATE TABLE %s PARTITION OF %s %s%s', rel.q, \
                      (SELECT format('%I.%I', pn.nspname, pc.relname) \
                         FROM pg_catalog.pg_inherits i \
                         JOIN pg_catalog.pg_class pc ON pc.oid = i.inhparent \
                         JOIN pg_catalog.pg_namespace pn ON pn.oid = pc.relnamespace \
                        WHERE i.inhrelid = rel.oid), \
                      pg_get_expr(rel.relpartbound, rel.oid), \
                      CASE WHEN rel.relkind = 'p' \
                           THEN ' PARTITION BY ' || pg_get_partkeydef(rel.oid) ELSE '' END) \
             ELSE \
               format('CREATE TABLE %s (%s)%s%s', rel.q, \
                      coalesce(CASE WHEN rel.relkind = 'm' THEN cols.plain_list \
                                    ELSE cols.full_list END, ''), \
                      coalesce((SELECT ' INHERITS (' \
                                       || string_agg(format('%I.%I', pn.nspname, pc.relname), \
                                                     ', ' ORDER BY i.inhseqno) || ')' \
                                  FROM pg_catalog.pg_inherits i \
                                  JOIN pg_catalog.pg_class pc ON pc.oid = i.inhparent \
                                  JOIN pg_catalog.pg_namespace pn ON pn.oid = pc.relnamespace \
                                 WHERE i.inhrelid = rel.oid), ''), \
                      CASE WHEN rel.relkind = 'p' \
                           THEN ' PARTITION BY ' || pg_get_partkeydef(rel.oid) ELSE '' END) \
           END \
      FROM rel LEFT JOIN cols ON cols.attrelid = rel.oid \
    UNION ALL \
    SELECT 'table ' || rel.q, 60, \
           format('ALTER TABLE %s ADD CONSTRAINT %I %s', rel.q, con.conname, \
                  pg_get_constraintdef(con.oid)) \
      FROM rel JOIN pg_catalog.pg_constraint con ON con.conrelid = rel.oid \
     WHERE con.contype = 'c' AND con.coninhcount = 0 AND rel.relkind IN ('r', 'p') \
    UNION ALL \
    SELECT CASE WHEN rel.relkind = 'v' THEN 'view ' ELSE 'table ' END || rel.q, 97, \
           format('GRANT SELECT ON %s TO plancheck_reader', rel.q) \
      FROM rel WHERE rel.relkind <> 'c'";

/// The extended statistics objects (`CREATE STATISTICS`) of the tables `$1` in the table's own
/// schema, each an object of its own that no request requires: without data they change no
/// plan, and `check --stats` writes production's into them.
const STATISTICS: &str = "\
    SELECT 'statistics ' || format('%I.%I', n.nspname, s.stxname), 62, \
           pg_get_statisticsobjdef(s.oid) \
      FROM pg_catalog.pg_statistic_ext s \
      JOIN pg_catalog.pg_class c ON c.oid = s.stxrelid \
      JOIN pg_catalog.pg_namespace n ON n.oid = s.stxnamespace \
     WHERE s.stxrelid = ANY ($1::oid[]) AND s.stxnamespace = c.relnamespace \
       AND c.relkind IN ('r', 'p', 'm')";

/// Every index of the tables `$1`: a constraint's by its constraint, on the table only (a
/// partitioned table's leaves are attached after, by name, as `pg_dump` does).
const INDEXES: &str = "\
    SELECT 'index ' || format('%I.%I', n.nspname, ic.relname), 80, \
           CASE WHEN con.oid IS NOT NULL \
                THEN format('ALTER TABLE ONLY %I.%I ADD CONSTRAINT %I %s', tn.nspname, \
                            t.relname, con.conname, pg_get_constraintdef(con.oid)) \
                ELSE pg_get_indexdef(ic.oid) END, \
           n.nspname::text, ic.relname::text, ic.oid \
      FROM pg_catalog.pg_index i \
      JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
      JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace \
      JOIN pg_catalog.pg_class t ON t.oid = i.indrelid \
      JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace \
      LEFT JOIN pg_catalog.pg_constraint con ON con.conindid = ic.oid AND con.conrelid = t.oid \
           AND con.contype IN ('p', 'u', 'x') \
     WHERE i.indrelid = ANY ($1::oid[]) \
    UNION ALL \
    SELECT 'index ' || format('%I.%I', n.nspname, ic.relname), 81, \
           format('ALTER INDEX %I.%I RENAME TO %I', n.nspname, con.conname, ic.relname), \
           n.nspname::text, ic.relname::text, ic.oid \
      FROM pg_catalog.pg_index i \
      JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
      JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace \
      JOIN pg_catalog.pg_constraint con ON con.conindid = ic.oid AND con.conrelid = i.indrelid \
           AND con.contype IN ('p', 'u', 'x') \
     WHERE i.indrelid = ANY ($1::oid[]) AND con.conname <> ic.relname \
    UNION ALL \
    SELECT 'index ' || format('%I.%I', n.nspname, ic.relname), 85, \
           format('ALTER INDEX %I.%I ATTACH PARTITION %I.%I', pn.nspname, p.relname, \
                  n.nspname, ic.relname), \
           n.nspname::text, ic.relname::text, ic.oid \
      FROM pg_catalog.pg_index i \
      JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
      JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace \
      JOIN pg_catalog.pg_inherits h ON h.inhrelid = ic.oid \
      JOIN pg_catalog.pg_class p ON p.oid = h.inhparent \
      JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace \
     WHERE i.indrelid = ANY ($1::oid[])";

/// Row-level security of the tables `$1` that have it on: the roles its policies name, and
/// every policy as it is.
const POLICIES: &str = "\
    WITH rel AS ( \
      SELECT c.*, format('%I.%I', n.nspname, c.relname) AS q \
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
       WHERE c.oid = ANY ($1::oid[]) AND c.relrowsecurity) \
    SELECT 'role ' || quote_ident(r.rolname), 1, format('CREATE ROLE %I NOLOGIN', r.rolname), \
           r.rolname::text \
      FROM (SELECT DISTINCT r.rolname FROM rel \
              JOIN pg_catalog.pg_policy p ON p.polrelid = rel.oid \
              JOIN pg_catalog.pg_roles r ON r.oid = ANY (p.polroles)) r \
    UNION ALL \
    SELECT 'policies ' || rel.q, 90, format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', rel.q), \
           NULL \
      FROM rel \
    UNION ALL \
    SELECT 'policies ' || rel.q, 90, format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', rel.q), \
           NULL \
      FROM rel WHERE rel.relforcerowsecurity \
    UNION ALL \
    SELECT 'policies ' || rel.q, 91, \
           format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', p.polname, rel.q, \
                  CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END, \
                  CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' \
                                WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END, \
                  CASE WHEN p.polroles = '{0}' THEN 'PUBLIC' \
                       ELSE (SELECT string_agg(quote_ident(r.rolname), ', ' ORDER BY r.rolname) \
                               FROM pg_catalog.pg_roles r WHERE r.oid = ANY (p.polroles)) END, \
                  CASE WHEN p.polqual IS NOT NULL \
                       THEN ' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')' \
                       ELSE '' END, \
                  CASE WHEN p.polwithcheck IS NOT NULL \
                       THEN ' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')' \
                       ELSE '' END), \
           NULL \
      FROM rel JOIN pg_catalog.pg_policy p ON p.polrelid = rel.oid";

/// What row-level security does for the session's role on the tables `$1`: the tables with it
/// on whose policies do not apply to the role (it owns them, is a superuser or bypasses row-level
/// security), and the policy roles the role is a member of. Read on the check's own session,
/// after its setup.
const ROLE_FACTS: &str = "\
    SELECT (SELECT pg_catalog.array_agg(pg_catalog.format('%I.%I', n.nspname, c.relname)) \
              FROM pg_catalog.pg_class c \
              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace \
             WHERE c.oid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[]) AND c.relrowsecurity \
               AND NOT pg_catalog.row_security_active(c.oid)), \
           (SELECT pg_catalog.array_agg(DISTINCT r.rolname::pg_catalog.text) \
              FROM pg_catalog.pg_policy p \
              JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) ANY (p.polroles) \
             WHERE p.polrelid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[]) \
               AND pg_catalog.pg_has_role(CURRENT_USER, r.oid, 'MEMBER'))";

/// Objects found so far, by catalog.
#[derive(Default)]
struct Found {
    relations: BTreeSet<u32>,
    types: BTreeSet<u32>,
    functions: BTreeSet<u32>,
    collations: BTreeSet<u32>,
    extensions: BTreeSet<u32>,
    schemas: BTreeSet<u32>,
    /// What cannot be copied, as a reader would name it.
    missing: BTreeSet<String>,
    /// Every `(catalog, OID)` already looked at.
    seen: BTreeSet<(String, u32)>,
}

/// What a check asks of the scratch copy, as it was measured.
pub(super) struct Asked<'a> {
    pub check: &'a ScopeCheck,
    /// Every plan measured: the relations they read are the first objects.
    pub plans: &'a [&'a Explain],
    /// The accepted indexes the asks are about.
    pub indexes: &'a [&'a IndexFacts],
    pub asks: Vec<Ask>,
    /// What the scope's setup changed, as the server read it back.
    pub session: &'a [(String, String)],
}

/// The request of one check: its objects read (and their definitions added to `definitions`,
/// each read once per run), the session's search path, settings and role.
pub(super) async fn request(
    sess: Sess<'_>,
    asked: Asked<'_>,
    definitions: &RefCell<Definitions>,
) -> Result<Request, Failure> {
    let settings = sess.settings;
    let fail = |asked: DbAsked| move |f: Fail| f.or(|e| failure(e, asked, settings));
    // In a savepoint of its own, rolled back whatever happens: the search path it sets goes,
    // and a read that fails leaves the check's transaction as it was.
    sess.exec("SAVEPOINT plancheck_definitions")
        .await
        .map_err(fail(DbAsked::ScratchDefinitions))?;
    let read = read_request(sess, asked, definitions).await;
    let ended = sess
        .exec(
            "ROLLBACK TO SAVEPOINT plancheck_definitions; \
             RELEASE SAVEPOINT plancheck_definitions",
        )
        .await
        .map_err(fail(DbAsked::ScratchDefinitions));
    let request = read?;
    ended?;
    Ok(request)
}

// Long because it is the reading in order: seeds and the search path on the check's own search
// path, the closure and the definitions under pg_catalog's, then the role's and the session's
// facts.
async fn read_request(
    sess: Sess<'_>,
    asked: Asked<'_>,
    definitions: &RefCell<Definitions>,
) -> Result<Request, Failure> {
    let Asked {
        check,
        plans,
        indexes,
        mut asks,
        session,
    } = asked;
    let settings = sess.settings;
    let fail = |asked: DbAsked| move |f: Fail| f.or(|e| failure(e, asked, settings));
    let mut names = names_in(&check.sql.text);
    for plan in plans {
        for s in plan.scans() {
            if let Some(rel) = s.relation {
                names
                    .relations
                    .insert((s.schema.map(str::to_string), rel.to_string()));
            }
        }
    }
    for facts in indexes {
        names
            .relations
            .insert((Some(facts.info.schema.clone()), facts.info.table.clone()));
    }
    let (schemas, relnames): (Vec<Option<String>>, Vec<String>) =
        names.relations.iter().cloned().unzip();
    let functions: Vec<String> = names.functions.iter().cloned().collect();
    let words: Vec<String> = names.words.iter().cloned().collect();
    let seeds = sess
        .query(SEEDS, &[&schemas, &relnames, &functions, &words])
        .await
        .map_err(fail(DbAsked::ScratchNames))?;
    let mut found = Found::default();
    let mut fresh: Vec<(String, u32)> = seeds
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, u32>(1)))
        .collect();
    let path = sess
        .query(
            "SELECT pg_catalog.current_schemas(false)::pg_catalog.text[]",
            &[],
        )
        .await
        .map_err(fail(DbAsked::ScratchSearchPath))?;
    // The asked indexes and their leaves, by OID: the only indexes whose dependencies are copied.
    let (index_schemas, index_names): (Vec<String>, Vec<String>) = indexes
        .iter()
        .flat_map(|f| {
            std::iter::once((f.info.schema.clone(), f.info.name.clone())).chain(
                f.partitions.iter().filter_map(|p| {
                    p.leaf_index
                        .as_ref()
                        .map(|leaf| (p.schema.clone(), leaf.clone()))
                }),
            )
        })
        .unzip();
    let rows = sess
        .query(
            "SELECT pg_catalog.to_regclass(pg_catalog.quote_ident(n.s) OPERATOR(pg_catalog.||) \
                    '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(n.i))::pg_catalog.oid \
             FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), \
                             pg_catalog.unnest($2::pg_catalog.text[])) AS n(s, i)",
            &[&index_schemas, &index_names],
        )
        .await
        .map_err(fail(DbAsked::ScratchIndexes))?;
    let asked_indexes: Vec<u32> = rows.iter().filter_map(|r| r.get(0)).collect();
    let search_path: Vec<String> = path.first().map(|r| r.get(0)).unwrap_or_default();

    // From here on every name the definitions print is schema-qualified.
    sess.exec("SET LOCAL search_path = pg_catalog, pg_temp")
        .await
        .map_err(fail(DbAsked::ScratchDefinitions))?;
    // Each asked index as the copy must have it, printed as the copy prints its own.
    let (ask_schemas, ask_names): (Vec<String>, Vec<String>) = asks
        .iter()
        .map(|a| (a.schema.clone(), a.index.clone()))
        .unzip();
    let rows = sess
        .query(
            "SELECT pg_catalog.pg_get_indexdef(pg_catalog.to_regclass(\
                 pg_catalog.quote_ident(n.s) OPERATOR(pg_catalog.||) '.' \
                 OPERATOR(pg_catalog.||) pg_catalog.quote_ident(n.i))) \
             FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), \
                             pg_catalog.unnest($2::pg_catalog.text[])) \
                  WITH ORDINALITY AS n(s, i, at) ORDER BY n.at",
            &[&ask_schemas, &ask_names],
        )
        .await
        .map_err(fail(DbAsked::ScratchIndexes))?;
    for (ask, row) in asks.iter_mut().zip(&rows) {
        ask.definition = row.get::<_, Option<String>>(0).unwrap_or_default();
    }
    closure(sess, &mut found, &mut fresh, &asked_indexes).await?;
    let (mut objects, index_keys, statistics) = ddl(sess, &found, definitions).await?;

    let relations: Vec<u32> = found.relations.iter().copied().collect();
    let row = sess
        .query(ROLE_FACTS, &[&relations])
        .await
        .map_err(fail(DbAsked::ScratchRls))?;
    let row = row
        .first()
        .ok_or_else(|| Failure::from(super::Why::NoRlsAnswer))?;
    let role = RoleFacts {
        member_of: row.get::<_, Option<Vec<String>>>(1).unwrap_or_default(),
        owns: row.get::<_, Option<Vec<String>>>(0).unwrap_or_default(),
    };
    let wanted: Vec<&str> = PLANNER_SETTINGS.to_vec();
    let rows = sess
        .query(
            "SELECT s.name::pg_catalog.text, s.setting FROM pg_catalog.pg_settings s \
             WHERE s.name OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.text[])",
            &[&wanted],
        )
        .await
        .map_err(fail(DbAsked::ScratchPlannerSettings))?;
    let mut settings: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    settings.extend(
        session
            .iter()
            .filter(|(name, _)| name.contains('.'))
            .cloned(),
    );
    // The asked indexes and their leaves must be on the copy; every other index is copied where
    // it can be, and set aside by the re-plan anyway.
    let mut required: BTreeSet<(String, String)> = BTreeSet::new();
    for facts in indexes {
        required.insert((facts.info.schema.clone(), facts.info.name.clone()));
        for p in &facts.partitions {
            if let Some(leaf) = &p.leaf_index {
                required.insert((p.schema.clone(), leaf.clone()));
            }
        }
    }
    let mut also = statistics;
    for (at, key) in index_keys {
        if required.contains(&at) {
            objects.push(key);
        } else {
            also.push(key);
        }
    }
    Ok(Request {
        objects,
        also,
        missing: found.missing.into_iter().collect(),
        search_path,
        settings,
        role,
        sql: check.sql.text.clone(),
        params: check.params.clone(),
        asks,
        production: Vec::new(),
        declared: Vec::new(),
        through: None,
    })
}

/// Follows what the objects found depend on to a fixed point, sorting each into its kind, or
/// into what cannot be copied.
// Long because each kind of object found has its own rule: relations by kind, types by kind,
// functions by language (and their bodies' names), everything else by its extension.
async fn closure(
    sess: Sess<'_>,
    found: &mut Found,
    fresh: &mut Vec<(String, u32)>,
    asked: &[u32],
) -> Result<(), Failure> {
    let asked = asked.to_vec();
    let settings = sess.settings;
    let fail = |f: Fail| f.or(|e| failure(e, DbAsked::ScratchDefinitions, settings));
    // Bounded: a catalog is finite, and every round adds only what was not seen.
    for _ in 0..64 {
        fresh.retain(|(c, o)| !found.seen.contains(&(c.clone(), *o)));
        fresh.sort();
        fresh.dedup();
        if fresh.is_empty() {
            return Ok(());
        }
        let (classes, oids): (Vec<String>, Vec<u32>) = fresh.drain(..).unzip();
        for (c, o) in classes.iter().zip(&oids) {
            found.seen.insert((c.clone(), *o));
        }
        let described = sess
            .query(DESCRIBE, &[&classes, &oids])
            .await
            .map_err(fail)?;
        let (mut rels, mut types, mut funcs) = (Vec::new(), Vec::new(), Vec::new());
        let mut body_names: BTreeSet<String> = BTreeSet::new();
        for row in &described {
            let class: String = row.get(0);
            let oid: u32 = row.get(1);
            let what: Option<String> = row.get(2);
            let what = what.unwrap_or_else(|| format!("{class} {oid}"));
            let kind: Option<String> = row.get(3);
            match (class.as_str(), kind.as_deref()) {
                ("pg_class", Some("r" | "p" | "m" | "v" | "c")) => {
                    found.relations.insert(oid);
                    rels.push(oid);
                }
                ("pg_class", Some("f")) => {
                    found.missing.insert(what);
                }
                // Indexes come with their table; sequences and TOAST are not planned.
                ("pg_class", _) => {}
                ("pg_type", Some("e" | "d" | "r")) => {
                    found.types.insert(oid);
                    types.push(oid);
                }
                // An array comes with its element type; a table's row type with the table.
                ("pg_type", Some("array" | "c" | "m" | "p")) => types.push(oid),
                ("pg_type", _) => {
                    found.missing.insert(crate::report::scratch::uncopyable(
                        &what,
                        Uncopyable::BaseType,
                    ));
                }
                ("pg_proc", Some(lang)) => {
                    let (language, kind) = lang.split_once(':').unwrap_or((lang, ""));
                    if kind == "a" {
                        found.missing.insert(crate::report::scratch::uncopyable(
                            &what,
                            Uncopyable::Aggregate,
                        ));
                    } else if matches!(language, "sql" | "plpgsql") {
                        found.functions.insert(oid);
                        funcs.push(oid);
                        if let Some(body) = row.get::<_, Option<String>>(4) {
                            body_names.extend(names_in(&body).words);
                        }
                    } else {
                        found.missing.insert(crate::report::scratch::uncopyable(
                            &what,
                            Uncopyable::Language(language),
                        ));
                    }
                }
                ("pg_collation", _) => {
                    found.collations.insert(oid);
                }
                ("pg_namespace", _) => {
                    found.schemas.insert(oid);
                }
                ("pg_extension", _) => {
                    found.extensions.insert(oid);
                }
                // Parts of what is copied already: its constraints, defaults, rules, policies.
                ("pg_constraint" | "pg_attrdef" | "pg_rewrite" | "pg_policy" | "pg_trigger", _) => {
                }
                // Operator classes, operators, text search configurations, languages, access
                // methods, … of no extension: not copied.
                _ => {
                    found.missing.insert(what);
                }
            }
        }
        if !rels.is_empty() || !types.is_empty() || !funcs.is_empty() {
            let rows = sess
                .query(CLOSURE, &[&rels, &types, &funcs, &asked])
                .await
                .map_err(fail)?;
            for row in &rows {
                let class: String = row.get(0);
                let oid: u32 = row.get(1);
                match row.get::<_, Option<u32>>(2) {
                    // A member of an extension comes with the extension.
                    Some(ext) => {
                        found.extensions.insert(ext);
                        found.seen.insert((class, oid));
                    }
                    None => fresh.push((class, oid)),
                }
            }
        }
        if !body_names.is_empty() {
            let names: Vec<String> = body_names.into_iter().collect();
            let rows = sess.query(BODY_SEEDS, &[&names]).await.map_err(fail)?;
            fresh.extend(
                rows.iter()
                    .map(|r| (r.get::<_, String>(0), r.get::<_, u32>(1))),
            );
        }
    }
    Err(super::Why::DependenciesUnended(64).into())
}

/// The keys of a request's indexes by `(schema, name)`.
type IndexKeys = BTreeMap<(String, String), String>;

/// The definitions of everything found that `definitions` lacks, added to it; returns the keys
/// of the objects the request needs, of every index of its tables by `(schema, name)`, and of
/// their extended statistics objects.
async fn ddl(
    sess: Sess<'_>,
    found: &Found,
    definitions: &RefCell<Definitions>,
) -> Result<(Vec<String>, IndexKeys, Vec<String>), Failure> {
    let settings = sess.settings;
    let fail = |f: Fail| f.or(|e| failure(e, DbAsked::ScratchDefinitions, settings));
    let oids = |set: &BTreeSet<u32>| set.iter().copied().collect::<Vec<u32>>();
    let (rels, types, funcs) = (
        oids(&found.relations),
        oids(&found.types),
        oids(&found.functions),
    );
    let (colls, exts, schemas) = (
        oids(&found.collations),
        oids(&found.extensions),
        oids(&found.schemas),
    );
    let no_names: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    rows.extend(
        sess.query(SCHEMAS, &[&schemas, &no_names])
            .await
            .map_err(fail)?,
    );
    rows.extend(sess.query(EXTENSIONS, &[&exts]).await.map_err(fail)?);
    rows.extend(sess.query(COLLATIONS, &[&colls]).await.map_err(fail)?);
    rows.extend(sess.query(TYPES, &[&types]).await.map_err(fail)?);
    rows.extend(sess.query(FUNCTIONS, &[&funcs]).await.map_err(fail)?);
    rows.extend(sess.query(RELATIONS, &[&rels]).await.map_err(fail)?);
    let policy_rows = sess.query(POLICIES, &[&rels]).await.map_err(fail)?;
    let index_rows = sess.query(INDEXES, &[&rels]).await.map_err(fail)?;
    let statistics_rows = sess.query(STATISTICS, &[&rels]).await.map_err(fail)?;
    let mut by_key: BTreeMap<String, Vec<Unit>> = BTreeMap::new();
    let mut objects: BTreeSet<String> = BTreeSet::new();
    let mut indexes: IndexKeys = BTreeMap::new();
    // Production's index order, by (schema, name): the file lists each table's indexes by OID.
    let in_file: BTreeMap<(String, String), usize> = settings
        .stats
        .iter()
        .flat_map(|f| &f.relations)
        .flat_map(|r| r.indexes.iter().map(|i| (r.schema.clone(), i.name.clone())))
        .enumerate()
        .map(|(at, key)| (key, at))
        .collect();
    let mut statistics: BTreeSet<String> = BTreeSet::new();
    // What each row is: a plain definition, a policy's (whose fourth column names the role a
    // policy names, made by plancheck from that name alone), an index (schema and name in the
    // fourth and fifth), or an extended statistics object.
    enum Row {
        Plain,
        Policy,
        Index,
        Statistics,
    }
    for (row, what) in rows
        .iter()
        .map(|r| (r, Row::Plain))
        .chain(policy_rows.iter().map(|r| (r, Row::Policy)))
        .chain(index_rows.iter().map(|r| (r, Row::Index)))
        .chain(statistics_rows.iter().map(|r| (r, Row::Statistics)))
    {
        let key: String = row.get(0);
        let rank: i32 = row.get(1);
        let Some(sql) = row.get::<_, Option<String>>(2) else {
            continue;
        };
        let mut role = None;
        let mut order = 0;
        match what {
            Row::Index => {
                let at: (String, String) = (row.get(3), row.get(4));
                let oid: u32 = row.get(5);
                order = in_file
                    .get(&at)
                    .map_or((1 << 32) + u64::from(oid), |p| *p as u64);
                indexes.insert(at, key.clone());
            }
            Row::Policy => {
                role = row.get::<_, Option<String>>(3);
                objects.insert(key.clone());
            }
            Row::Plain => {
                objects.insert(key.clone());
            }
            Row::Statistics => {
                statistics.insert(key.clone());
            }
        }
        by_key.entry(key.clone()).or_default().push(Unit {
            key,
            rank: u8::try_from(rank).unwrap_or(u8::MAX),
            sql,
            role,
            order,
        });
    }
    let mut defs = definitions.borrow_mut();
    for (key, units) in by_key {
        if !defs.has(&key) {
            defs.add(units);
        }
    }
    Ok((
        objects.into_iter().collect(),
        indexes,
        statistics.into_iter().collect(),
    ))
}
