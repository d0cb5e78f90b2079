"""The portable worker plumbing: Beam's local job service, the Python SDK harness, a worker's
boot as Beam's container runs it, forked warm workers and an external worker pool."""
