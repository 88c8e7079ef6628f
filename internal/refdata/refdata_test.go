package refdata

import (
	"os"
	"path/filepath"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	root := ModuleRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("ModuleRoot = %s, which holds no go.mod", root)
	}
}

func TestPathSkipsWhenAbsent(t *testing.T) {
	var skipped bool
	// Run the helper in a subtest so its Skip ends only that subtest.
	t.Run("absent", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Path(t, "no-such-reference-data")
		t.Error("Path returned for a file that does not exist")
	})
	if !skipped {
		t.Error("Path did not skip for an absent file")
	}
}
