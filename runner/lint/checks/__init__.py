"""The rules: one small class each (its docstring is its message), grouped by what they check
(:mod:`~.rules` holds the base and the general ones). Each reads a model
through :mod:`runner.lint.reading` and reports; none imports another room's rules.
"""
