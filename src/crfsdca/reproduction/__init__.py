"""What only the paper's reproduction needs: reference optima (:mod:`.optimum`), run
directories (:mod:`.rundir`), the rules' code inputs (:mod:`.sources`), the workflow's
configuration (:mod:`.config`), CRFsuite as a traced baseline (:mod:`.crfsuite_baseline`)
and the figures, tables and report (:mod:`.report`). Only the command line and this
package import it."""
