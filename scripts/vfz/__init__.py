"""vfatfuzz Python side: op-scripts, listings, model, drivers."""
