SELECT p.id, p.created_at
FROM posts p
WHERE p.thread_id = 1
  AND p.visibility = 'visible'
ORDER BY p.created_at, p.id
LIMIT 20
