"""The floor everything stands on: configuration, typed errors, locks, kill points and
faults, times, the home's privacy, operator logs and durable whole-file writes. It
imports nothing else of the package."""
