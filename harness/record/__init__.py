"""What a point is and how it is judged and kept: metric formulas and their catalogue, validity
rules, the point record and its identity, the run directory on disk (points.jsonl, request
Parquet, atomic writes, resume), measured energy. Pure functions and typed records, plus the
results I/O; nothing here starts a process or sends a request."""
