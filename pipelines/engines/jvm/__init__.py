"""Java for the engines: the JDK found and checked, the pinned jars fetched and verified
(locks/*.json), and the job server JVM's class data sharing."""
