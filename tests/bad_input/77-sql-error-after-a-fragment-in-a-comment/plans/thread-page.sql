-- {{post_visibility}} is filled per scope
SELECT p.id, p.created_at
FROM posts p
WHERE p.thread_id = 1
  AND {{post_visibility}} AND p.thred_id = 1
ORDER BY p.created_at, p.id
LIMIT 20
