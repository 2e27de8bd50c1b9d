SELECT p.id, query_to_xml('SELECT count(*) FROM posts', true, false, '') AS board_size
FROM posts p
WHERE p.thread_id = 1 AND p.visibility = 'visible'
ORDER BY p.created_at, p.id
LIMIT 20
