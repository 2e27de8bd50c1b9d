-- The visibility bound as a parameter, where the application used to write the literal.
SELECT p.id, p.created_at
FROM posts p
WHERE p.thread_id = $1 AND p.visibility = $2
ORDER BY p.created_at, p.id
LIMIT 20
