"""Apache Flink and Apache Spark for `corpus build`: the pinned Java jars (jars.py), standalone
clusters on this machine (flink.py, spark.py), the processes they run as (processes.py), and
how a build runs on each (runners.py)."""
