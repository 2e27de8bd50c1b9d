-- A member's thread page that also shows the member's own posts awaiting approval.
SELECT p.id, p.created_at
FROM posts p
WHERE p.thread_id = 1
  AND p.visibility IN ('visible', 'unapproved')
ORDER BY p.created_at, p.id
LIMIT 20
