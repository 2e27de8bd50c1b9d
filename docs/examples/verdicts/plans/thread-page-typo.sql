SELECT p.id, p.created_at
FROM posts p
WHERE p.thread_id = 1
ORDER BY p.create_at, p.id
LIMIT 20
