"""What a rule reads of one model: its rendered SQL parsed once with name resolution's findings
(:class:`~.context.ModelContext`), its tokens, its calls of Spark built-ins,
the function and table allowlist, and the :class:`~.rule.Rule` base.
"""
