"""The compile stages below the linter: render (sandboxed Jinja), graph (the model DAG),
selection, and the plan's types. :mod:`runner.lint` checks rendered models between render and
plan, and :mod:`runner.build` runs them all and writes ``target/``: compile <- lint <- build.
"""
