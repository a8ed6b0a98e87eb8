"""The long-running service: the scheduler, its leader election, status, and what runs after each collection."""
