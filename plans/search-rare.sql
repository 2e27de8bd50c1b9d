SELECT p.id, p.thread_id, p.created_at
FROM posts p
WHERE p.visibility = 'visible'
  AND p.body_tsv @@ plainto_tsquery('simple', $1)
ORDER BY p.created_at DESC
LIMIT 20
