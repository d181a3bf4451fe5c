"""Team memory on PostgreSQL + pgvector: the server connection, its schema and its administration.

Nothing here is imported by the hooks or by a default install: ``psycopg`` (the ``team`` extra)
is imported inside the functions that talk to a server, so importing this package costs nothing.
How a team sets it up: docs/team.md.
"""
