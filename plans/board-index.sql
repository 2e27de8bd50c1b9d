SELECT f.id, f.parent_id, f.name, f.position, f.thread_count, f.post_count,
       f.last_post_at, p.thread_id AS last_thread_id, m.name AS last_poster
FROM forums f
LEFT JOIN posts p ON p.id = f.last_post_id
LEFT JOIN members m ON m.id = p.author_id
ORDER BY coalesce(f.parent_id, f.id), f.parent_id IS NOT NULL, f.position
