"""The Python half of the Spark catalog: the callbacks the JVM (LakeCatalog and friends) calls, and what they share with the Session."""
