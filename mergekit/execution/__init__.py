"""The only layer that imports pyspark: DataFrames from plans, sinks on executors, commits on the driver."""
