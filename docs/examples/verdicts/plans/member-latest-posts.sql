SELECT p.id, p.created_at
FROM posts p
WHERE p.author_id = 7 AND p.visibility = 'visible'
ORDER BY p.created_at DESC
LIMIT 20
