"""Test support: real redis-server instances, process handling, polling."""
