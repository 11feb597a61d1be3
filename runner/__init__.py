"""SQL-first streaming fan-out on PySpark."""
