SELECT p.id FROM posts p WHERE p.thread_id = 1
