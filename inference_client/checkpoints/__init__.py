"""Publishing model checkpoints: files to the object store, one torrent per file,
the manifest to the database and the store (the worker side is
inference_worker.checkpoints; the shared record is inference_protocol.checkpoints)."""
