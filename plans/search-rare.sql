SELECT p.id, p.thread_id, p.created_at
FROM posts p
WHERE p.visibility = 'visible'
  AND to_tsvector('simple', p.body) @@ plainto_tsquery('simple', $1)
ORDER BY p.created_at DESC
LIMIT 20
