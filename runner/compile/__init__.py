"""The compile stages: render (sandboxed Jinja) -> graph (model DAG) -> lint -> plan, and
:mod:`runner.compile.build`, which runs them and writes ``target/``.

Import the stage modules directly; this package imports none of them, so that ``runner.lint``
can use the render and plan types without importing the build step that calls the linter.
"""
