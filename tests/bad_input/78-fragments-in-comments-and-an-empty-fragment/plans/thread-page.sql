-- {{post_visibility}} is filled per scope; {{extra}} may be empty.
/* {{post visibility}} is no name, and /* nested */ {{ is never closed here */
SELECT p.id, p.created_at
FROM posts p
WHERE p.thread_id = 1
  AND {{post_visibility}}{{extra}} -- {{unknown}}
ORDER BY p.created_at, p.id
LIMIT 20
