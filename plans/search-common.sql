SELECT m.id, m.thread_id, m.created_at, ts_rank_cd(m.body_tsv, q.q) AS rank
FROM (
    SELECT p.id, p.thread_id, p.created_at, p.body_tsv
    FROM posts p
    WHERE p.visibility = 'visible'
      AND p.body_tsv @@ plainto_tsquery('simple', 'forum')
    ORDER BY p.id DESC
    LIMIT 20000
) m, plainto_tsquery('simple', 'forum') AS q(q)
ORDER BY rank DESC, m.id DESC
LIMIT 20
