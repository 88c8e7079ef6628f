package run

import (
	"fmt"

	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/detached"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// signDetached writes a detached signature (NAME.sig, see sdk/detached)
// beside every file a sink committed, when a sign stage gave the sink a key
// and the sink's format does not embed signatures itself. It returns the
// signature files as artifacts. The key is never part of an error.
func signDetached(sk *plan.SinkPlan, arts []plugin.Artifact, fsync bool) ([]plugin.Artifact, error) {
	if len(sk.SigningKey) == 0 || sk.Plan == nil || sk.Plan.EmbedsSignature {
		return nil, nil
	}
	var sigs []plugin.Artifact
	for _, a := range arts {
		p, n, err := detached.Write(a.Path, a.SHA256, a.Size, sk.SigningKey, sk.SigningKeyID, fsync)
		if err != nil {
			return sigs, fmt.Errorf("%s was committed, but its detached signature could not be written: %w", a.Path, err)
		}
		sigs = append(sigs, plugin.Artifact{Path: p, Size: n})
	}
	return sigs, nil
}
