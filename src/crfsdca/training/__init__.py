"""How a training run goes: the run loop and its log (:mod:`.run`), the estimator's and
``crfsdca learn``'s run in CRFsuite's scale (:mod:`.learn`), continued training
(:mod:`.warm_start`), how a run ended (:mod:`.status`) and CRFsuite's feature set
(:mod:`.feature_set`)."""
