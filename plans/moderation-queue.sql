SELECT p.id, p.thread_id, p.author_id, p.created_at
FROM posts p
WHERE p.forum_id = $1
  AND p.visibility = 'unapproved'
ORDER BY p.created_at
LIMIT 50
