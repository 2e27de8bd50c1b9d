-- A deep page of the thread, reached with OFFSET instead of a keyset.
SELECT p.id, p.author_id, p.created_at, p.body
FROM posts p
WHERE p.thread_id = $1
  AND {{post_visibility}}
ORDER BY p.created_at, p.id
OFFSET 600
LIMIT 20
