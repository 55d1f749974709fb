"""Files of models: the model itself (:mod:`.model`), crfsdca's HDF5 model and dual-state
files (:mod:`.hdf5_model`), CRFsuite's binary model (:mod:`.crfsuite_model`) and the
constant database inside it (:mod:`.cqdb`). Users open them through
:mod:`crfsdca.model_file`."""
