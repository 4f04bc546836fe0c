"""`causantic dashboard`: a local, read-only web page over memory (see `server`)."""
