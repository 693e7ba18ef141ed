"""Command groups: one module per group of Redis commands, each declaring its commands with
`@command` (engine/table.py). The table is filled explicitly, by the front ends' startup.py,
which imports every group module once in the table's order.
"""
