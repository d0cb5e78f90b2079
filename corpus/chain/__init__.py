"""What a step is and how steps run: the step record, the chains as data and their plan, the
verdict a page step returns, the one loop of page steps, corpus-wide steps in one process, and
the whole chain in one process (`corpus clean`)."""
