"""Name resolution over one parsed query as Spark's analyser does it: relations and their
columns, scopes, output columns, names Spark generates, which calls aggregate, which columns
are unique. Reads the SQL and the types; knows no rule.
"""
