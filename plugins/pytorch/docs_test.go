package pytorch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsListTheAllowlist keeps docs/formats/pytorch.md true: every global
// the unpickler accepts is documented.
func TestDocsListTheAllowlist(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "formats", "pytorch.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range Allowlist() {
		if !strings.Contains(string(b), "`"+g+"`") {
			t.Errorf("docs/formats/pytorch.md does not list allowed global %s", g)
		}
	}
}
