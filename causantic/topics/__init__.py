"""Topics: groups of chunks about the same thing, found without an LLM.

- `hdbscan`: HDBSCAN* in numpy alone (the clustering algorithm).
- `maintain`: `causantic topics rebuild` (cluster every chunk vector, name the clusters, store
  topics and memberships in one transaction) and the `Assigner` that lets freshly embedded
  chunks join the nearest topic between rebuilds.
- `naming`: topic names from their most distinctive terms (class-based TF-IDF).
- `maps`: reading topics back: the list, one topic's chunks, a project's active topics
  (SQL only: the session-start hook uses it).

Storage is `causantic.store.topics` (tables `topics`, `topic_members`, `topic_build`); search
uses memberships for cluster expansion (`causantic.retrieval.expand`). Importing this package
imports nothing.
"""
