-- The thread id arrives as text, and the query casts the column instead of the value.
SELECT p.id
FROM posts p
WHERE p.visibility = 'visible' AND p.thread_id::text = '4000'
ORDER BY p.thread_id, p.created_at, p.id
LIMIT 20
