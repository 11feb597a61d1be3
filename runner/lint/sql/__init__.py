"""Reading SQL as Spark 4.2 reads it: sqlglot's Spark dialect where it differs, Spark's own
grammar without a JVM (:mod:`.spark_parser`), and the literal formats Spark's
parser checks (interval strings, number formats). Imports nothing else of lint.
"""
