"""The harness: CLI, run planning, child processes, records and the models it builds itself."""
