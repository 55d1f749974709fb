"""Raw data, featurization and the in-memory representation of datasets."""
