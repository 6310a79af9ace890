"""Fleet-scale history on Spark (PySpark imported lazily, only by the history commands)."""
