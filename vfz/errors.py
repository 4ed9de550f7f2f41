"""The one error a driver reports as bad input: one line on stderr, exit 2."""


class UsageError(Exception):
    pass
