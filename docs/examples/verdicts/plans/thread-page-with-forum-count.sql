SELECT p.id, (SELECT count(*) FROM forums) AS forum_count
FROM posts p
WHERE p.thread_id = 1 AND p.visibility = 'visible'
ORDER BY p.created_at, p.id
LIMIT 20
