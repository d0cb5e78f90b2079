"""What a build writes and how it is read and shown: the shard format and manifest, the rule
samples, the reports of what each rule removed, `corpus inspect`'s page."""
