SELECT m.id, m.name, m.joined_at,
       (SELECT count(*)
          FROM posts p
         WHERE p.author_id = m.id
           AND p.visibility = 'visible') AS visible_posts
FROM members m
WHERE m.id = $1
