"""Files a user gives cgtool: the one reader of every input (regular files only, bounded size and nesting)."""
