"""The measuring instrument: the streaming HTTP client, its SSE accounting, the processes it
can spread over (`client.workers`), and its self-check (event-loop passes, stamp probe, health).
Nothing here knows what a point, an engine or a workload is; it takes `RequestSpec`s and
returns `RequestRecord`s (harness.records). docs/client.md."""
