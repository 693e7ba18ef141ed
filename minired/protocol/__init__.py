"""The protocol layer: RESP requests and replies as bytes in and bytes out (no I/O), and the
error texts every reply comes from. Imports nothing else of minired."""
