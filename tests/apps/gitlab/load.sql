-- Deterministic data for tests/apps/gitlab/schema.sql (GitLab's projects and
-- project_authorizations), sized by the custom setting apps.scale:
--
--     SET apps.scale = '1';      -- 1,000,000 projects, ~2 million project_authorizations
--     SET apps.scale = '0.01';   -- 10,000 projects (a CI-sized database)
--
-- then this file as one multi-statement batch (no psql meta-commands). No random(): every value
-- comes from hashint8() of the row number, so two loads at one scale hold the same rows.
--
-- The shape is GitLab.com's, in miniature:
--   * ids in creation order, creation accelerating over the years (2011-10 .. 2025-06);
--   * a few huge namespaces (the gitlab-org's of the instance: the first namespace holds ~1.2%
--     of all projects, the first 50 about 4%) and a long tail of one-project namespaces;
--   * most projects private: ~31% public (visibility_level 20), ~3% internal (10), the rest
--     private (0); the big open-source namespaces are 90% public;
--   * the rows an anonymous reader must never see, or nobody sees: 0.3% pending_delete (being
--     deleted), 0.05% hidden (projects of banned users), 1% marked for deletion, 8% archived;
--   * stars on public projects only, heavy-tailed (most 0, a few tens of thousands);
--   * last activity skewed recent, updated_at between creation and last activity;
--   * project_authorizations as GitLab materialises them (one row per user and project, the
--     highest access level): every creator owns its project, the big namespaces' members reach
--     all of their projects, a support bot (user 42) reaches every tenth project, user 777 is an
--     ordinary member of a dozen (49 authorizations in all at scale 1, with its own projects and
--     the random tail), and a sparse random tail of members.
--
-- The indexes of both tables are dropped before the load and re-created after it from their own
-- catalog definitions, in their original order, by a plpgsql function in pg_temp (no DO block,
-- nothing left behind in the database). Measured on 2 cores, PostgreSQL 15, default settings:
-- ~37 s at scale 1 (1,000,000 projects, 2,288,229 project_authorizations), ~1.6 s at 0.01.

SET maintenance_work_mem = '256MB';

-- u(row, salt): a uniform double in [0, 1), a pure function of its arguments.
CREATE FUNCTION pg_temp.u(bigint, integer) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (hashint8($1 * 1000 + $2)::double precision + 2147483648.0) / 4294967296.0 $$;

-- apps_exec(sql): runs one statement; used only to drop the two tables' indexes before the
-- load and re-create them after it, from their own definitions as schema.sql made them
-- (pg_get_indexdef / pg_get_constraintdef), in their original order. Building 50 indexes once
-- over the loaded table is ~5x faster than maintaining them row by row.
CREATE FUNCTION pg_temp.apps_exec(text) RETURNS void
    LANGUAGE plpgsql
    AS $$ BEGIN EXECUTE $1; END $$;

CREATE TEMP TABLE apps_indexes AS
SELECT i.indexrelid AS ord,
       c.conname IS NOT NULL AS is_constraint,
       format('%s', i.indrelid::regclass) AS table_name,
       CASE WHEN c.conname IS NOT NULL
            THEN format('ALTER TABLE ONLY %s DROP CONSTRAINT %I', i.indrelid::regclass, c.conname)
            ELSE format('DROP INDEX %s', i.indexrelid::regclass) END AS drop_sql,
       CASE WHEN c.conname IS NOT NULL
            THEN format('ALTER TABLE ONLY %s ADD CONSTRAINT %I %s', i.indrelid::regclass, c.conname,
                        pg_get_constraintdef(c.oid))
            ELSE pg_get_indexdef(i.indexrelid) END AS create_sql
FROM pg_index i
LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.contype IN ('p', 'u')
WHERE i.indrelid IN ('projects'::regclass, 'project_authorizations'::regclass);

SELECT count(pg_temp.apps_exec(drop_sql)) AS indexes_dropped FROM apps_indexes;

CREATE TEMP TABLE apps_size AS
SELECT greatest(100, round(1000000 * current_setting('apps.scale')::numeric))::bigint AS n;

CREATE TEMP TABLE apps_shape AS
SELECT n,
       greatest(20, round(n * 0.6))::bigint AS namespaces,
       greatest(1000, round(n * 0.4))::bigint AS users,
       timestamp '2011-10-01 00:00:00' AS t0,
       timestamp '2025-06-01 00:00:00' AS t1
FROM apps_size;

INSERT INTO projects (
    id, name, path, description, description_html, created_at, updated_at, creator_id,
    namespace_id, last_activity_at, last_repository_updated_at, visibility_level, archived,
    star_count, import_type, import_source, mirror, mirror_user_id, mirror_trigger_builds,
    pending_delete, last_repository_check_failed, last_repository_check_at, repository_storage,
    storage_version, runners_token_encrypted, pool_repository_id,
    disable_overriding_approvers_per_merge_request, marked_for_deletion_at,
    marked_for_deletion_by_user_id, project_namespace_id, hidden, organization_id)
SELECT
    g.i,
    initcap(replace(w.word, '-', ' ')) || ' ' || to_hex(g.i),
    w.word || '-' || to_hex(g.i),
    CASE WHEN pg_temp.u(g.i, 12) < 0.45 THEN repeat(md5(g.i::text), 1 + floor(pg_temp.u(g.i, 13) * 4)::int) END,
    CASE WHEN pg_temp.u(g.i, 12) < 0.45 THEN '<p>' || repeat(md5(g.i::text), 1 + floor(pg_temp.u(g.i, 13) * 4)::int) || '</p>' END,
    t.created_at,
    t.created_at + (t.last_activity_at - t.created_at) * pg_temp.u(g.i, 9),
    c.creator_id,
    c.namespace_id,
    t.last_activity_at,
    t.last_activity_at - interval '1 minute' * floor(pg_temp.u(g.i, 24) * 600),
    v.visibility_level,
    pg_temp.u(g.i, 5) < 0.08,
    CASE WHEN v.visibility_level = 20 THEN
             CASE WHEN pg_temp.u(g.i, 14) < 0.65 THEN 0
                  ELSE floor(exp(power(pg_temp.u(g.i, 15), 3) * ln(60000.0)))::int - 1 END
         ELSE CASE WHEN pg_temp.u(g.i, 14) < 0.97 THEN 0 ELSE 1 + floor(pg_temp.u(g.i, 15) * 3)::int END
    END,
    CASE WHEN pg_temp.u(g.i, 16) < 0.12
         THEN (ARRAY['github', 'gitlab_project', 'git', 'bitbucket', 'gitea'])[1 + floor(pg_temp.u(g.i, 17) * 5)::int] END,
    CASE WHEN pg_temp.u(g.i, 16) < 0.12 THEN 'example/' || to_hex(g.i) END,
    pg_temp.u(g.i, 18) < 0.01,
    CASE WHEN pg_temp.u(g.i, 18) < 0.01 THEN c.creator_id END,
    pg_temp.u(g.i, 18) < 0.01 AND pg_temp.u(g.i, 19) < 0.3,
    pg_temp.u(g.i, 3) < 0.003,
    CASE WHEN pg_temp.u(g.i, 20) < 0.9 THEN pg_temp.u(g.i, 21) < 0.005 END,
    CASE WHEN pg_temp.u(g.i, 20) < 0.9 THEN s.t1 - interval '1 hour' * floor(pg_temp.u(g.i, 22) * 24 * 30) END,
    CASE WHEN g.i < s.n * 0.3 THEN 'default' ELSE 'nfs-file' || lpad(((g.i / 5000) % 50)::text, 2, '0') END,
    2,
    CASE WHEN pg_temp.u(g.i, 23) < 0.7 THEN md5(g.i::text || 'runners') END,
    CASE WHEN pg_temp.u(g.i, 25) < 0.05 THEN 1 + floor(pg_temp.u(g.i, 26) * s.n / 50)::bigint END,
    CASE WHEN pg_temp.u(g.i, 27) < 0.02 THEN true WHEN pg_temp.u(g.i, 27) < 0.05 THEN false END,
    CASE WHEN pg_temp.u(g.i, 6) < 0.01 THEN (s.t1 - interval '1 day' * floor(pg_temp.u(g.i, 28) * 30))::date END,
    CASE WHEN pg_temp.u(g.i, 6) < 0.01 THEN c.creator_id END,
    2 * s.n + g.i,
    pg_temp.u(g.i, 4) < 0.0005,
    1
FROM apps_shape s
CROSS JOIN LATERAL generate_series(1, s.n) AS g(i)
CROSS JOIN LATERAL (
    SELECT 1 + floor(s.namespaces * power(pg_temp.u(g.i, 1), 3))::bigint AS namespace_id,
           1 + floor(s.users * power(pg_temp.u(g.i, 7), 2.5))::bigint AS creator_id
) c
CROSS JOIN LATERAL (
    SELECT CASE WHEN c.namespace_id <= 50 THEN
                    CASE WHEN pg_temp.u(g.i, 2) < 0.90 THEN 20 WHEN pg_temp.u(g.i, 2) < 0.93 THEN 10 ELSE 0 END
                ELSE
                    CASE WHEN pg_temp.u(g.i, 2) < 0.28 THEN 20 WHEN pg_temp.u(g.i, 2) < 0.31 THEN 10 ELSE 0 END
           END AS visibility_level
) v
CROSS JOIN LATERAL (
    SELECT (ARRAY['test', 'demo', 'my-project', 'hello-world', 'website', 'api', 'docs', 'backend',
                  'frontend', 'dotfiles', 'infrastructure', 'terraform', 'helm-charts', 'mobile-app',
                  'cli', 'sandbox', 'homework', 'thesis', 'blog', 'portfolio', 'bot', 'scripts',
                  'notes', 'ci-templates'])[1 + floor(24 * power(pg_temp.u(g.i, 10), 2))::int] AS word
) w
CROSS JOIN LATERAL (
    SELECT s.t0 + (s.t1 - s.t0) * sqrt(g.i::double precision / s.n) AS created_at
) t0
CROSS JOIN LATERAL (
    SELECT t0.created_at,
           t0.created_at + (s.t1 - t0.created_at) * power(pg_temp.u(g.i, 8), 0.35) AS last_activity_at
) t;

SELECT setval('projects_id_seq', (SELECT max(id) FROM projects));

INSERT INTO project_authorizations (user_id, project_id, access_level, is_unique)
SELECT a.user_id, a.project_id, max(a.access_level), true
FROM (
    -- every creator owns its project
    SELECT p.creator_id AS user_id, p.id AS project_id, 50 AS access_level
    FROM projects p
    UNION ALL
    -- the members of the 50 big namespaces (30 in the first, 15 in the second, ...) reach all
    -- of its projects, as group membership is inherited by every project of the group
    SELECT 100 + p.namespace_id * 40 + m.j, p.id,
           (ARRAY[30, 30, 30, 20, 40])[1 + (m.j % 5)::int]
    FROM projects p
    CROSS JOIN LATERAL generate_series(0, ceil(30.0 / p.namespace_id)::int - 1) AS m(j)
    WHERE p.namespace_id <= 50
    UNION ALL
    -- a support bot with reporter access to every tenth project
    SELECT 42, p.id, 20
    FROM projects p
    WHERE p.id % 10 = 3
    UNION ALL
    -- an ordinary member of a dozen projects, spread over the years
    SELECT 777, p.id, 30
    FROM projects p, apps_size z
    WHERE p.id % (z.n / 12) = 5
    UNION ALL
    -- a sparse random tail of project members
    SELECT 1 + floor(s.users * pg_temp.u(p.id * 16 + k.k, 31))::bigint, p.id,
           (ARRAY[10, 20, 30, 30, 40])[1 + floor(pg_temp.u(p.id * 16 + k.k, 32) * 5)::int]
    FROM projects p
    CROSS JOIN apps_shape s
    CROSS JOIN LATERAL generate_series(1, floor(power(pg_temp.u(p.id, 30), 8) * 8)::int) AS k(k)
) a
GROUP BY a.user_id, a.project_id;

SELECT count(pg_temp.apps_exec(create_sql)) AS indexes_created
FROM (SELECT create_sql FROM apps_indexes ORDER BY ord) x;

ANALYZE;
