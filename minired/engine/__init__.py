"""The engine: clients, the connection protocol, dispatch, the command table and the argument
rules every command shares, blocking, configuration, and the hook points (hooks.py) through
which features plug in. It never imports a feature, a command or the script engine."""
