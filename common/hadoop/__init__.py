"""Hadoop IPC: the wire format, an asyncio server and client, SASL, and Hadoop's token formats."""
