"""What feeds the store: the topics (`kafka`), a JSONL file (`file`), events in memory
(`memory`); each is a runner `Source`."""
