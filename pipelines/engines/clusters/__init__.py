"""Standalone Flink and Spark clusters on this machine (127.0.0.1 only) and the processes of one
engine run: started, watched and stopped together."""
