package pytorch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
)

// TestMaliciousFuzzSeeds keeps the malicious fixtures in the fuzz corpus
// (go test -run TestMaliciousFuzzSeeds -update-seeds rewrites them): raw
// pickles that call os.system, eval, exec, getattr … for FuzzUnpickle, and
// checkpoint files that embed them for FuzzCheckpoint.
func TestMaliciousFuzzSeeds(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "malicious", "*"))
	if len(files) == 0 {
		t.Fatal("no malicious fixtures")
	}
	var pickles, checkpoints []fuzzseed.Seed
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := fuzzseed.Seed{Name: "malicious_" + strings.ReplaceAll(filepath.Base(p), ".", "_"), Values: []any{b}}
		if strings.HasSuffix(p, ".pkl") {
			pickles = append(pickles, s)
		} else {
			checkpoints = append(checkpoints, s)
		}
	}
	fuzzseed.Sync(t, "FuzzUnpickle", pickles)
	fuzzseed.Sync(t, "FuzzCheckpoint", checkpoints)
}
