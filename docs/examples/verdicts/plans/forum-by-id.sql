SELECT f.id, f.name FROM forums f WHERE f.id = 2
