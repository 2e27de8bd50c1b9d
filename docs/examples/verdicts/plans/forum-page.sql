SELECT t.id, t.title
FROM threads t
WHERE t.forum_id = 2
ORDER BY t.sticky DESC, t.last_post_at DESC, t.id DESC
LIMIT 20
