"""The runner's side of Spark: building the session (or reaching a remote one) and its JVM
options.
"""
