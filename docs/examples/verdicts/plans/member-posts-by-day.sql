SELECT p.id
FROM posts p
WHERE p.author_id = 7 AND p.created_at >= '2024-01-01'
ORDER BY p.created_at
LIMIT 20
