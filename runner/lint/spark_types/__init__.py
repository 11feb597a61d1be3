"""Spark's types under ANSI mode without a JVM: type coercion, the type of an expression, casts,
the spatial types, and Spark's built-in functions as its analyser checks a call
(``functions.json``, ``srids.json``: generated from the pinned Spark). Imports only
:mod:`runner.lint.sql`.
"""
