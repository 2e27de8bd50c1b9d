SELECT t.id, t.forum_id, t.title, t.last_post_at
FROM threads t
WHERE {{thread_visibility}}
  AND t.forum_id = ANY ($1::int[])
ORDER BY t.last_post_at DESC, t.id DESC
LIMIT 20
