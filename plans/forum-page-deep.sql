SELECT t.id, t.title, t.sticky, t.last_post_at, t.post_count, m.name AS author_name
FROM threads t
JOIN members m ON m.id = t.author_id
WHERE t.forum_id = $1
  AND {{thread_visibility}}
  AND t.sticky = false
  AND (t.last_post_at, t.id) < ($2, $3)
ORDER BY t.sticky DESC, t.last_post_at DESC, t.id DESC
LIMIT 20
