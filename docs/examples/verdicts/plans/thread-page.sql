-- A thread's first page, 20 posts, oldest first. {{post_visibility}} is filled per scope.
SELECT p.id, p.author_id, m.name AS author_name, p.created_at, p.body
FROM posts p
JOIN members m ON m.id = p.author_id
WHERE p.thread_id = $1
  AND {{post_visibility}}
ORDER BY p.created_at, p.id
LIMIT 20
