SELECT f.id
FROM forums f
WHERE f.parent_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM forums c WHERE c.parent_id = f.id)
ORDER BY f.id
