"""The write path: transcripts in, chunks, edges, states and vectors out.

`pipeline` reads -> scrubs -> chunks -> stores -> links -> derives state; `run` wires
settings, progress and locks to it and to `embed` (vectors for stored chunks); `rescan`
redacts again what older versions stored. Nothing is imported here: the hooks load
only the modules they need.
"""
