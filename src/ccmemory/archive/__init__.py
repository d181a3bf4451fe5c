"""Export and import of the whole store: JSON Lines for machines, Markdown for people.

:mod:`.records` holds one :class:`~.records.RecordType` per kind of row
(projects, sessions, memories, relationships, session usage, documents with
their chunks, docmem nodes and placements); :mod:`.jsonl` writes and reads the
stream; :mod:`.markdown` renders a readable copy.
"""
