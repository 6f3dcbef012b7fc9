"""Multicluster controller runtime on asyncio (arrives with the runtime issue)."""
