"""The job logic of tidings as plain functions.

Every function takes a :class:`tidings.jobs.runtime.Runtime` (Redis client, clock,
settings, dispatcher) and an :class:`tidings.store.models.AgentRecord`; none builds a
client or reads the real clock, so all of them run under fakeredis and a fake
clock. Actors in ``workers`` are thin wrappers around them.
"""
