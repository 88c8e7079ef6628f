package pytorch

import (
	"os"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugintest"
)

func TestMain(m *testing.M) {
	plugintest.ServeIfChild(Plugin())
	os.Exit(m.Run())
}

// TestConformance runs sdk/plugintest's checks of a source-only plugin on
// sourceSuite: fixtures read the same in-process and over a real go-plugin
// process with the shared arena, a malicious pickle refused there too, a
// large checkpoint described from its headers only, and the corruption
// suite.
func TestConformance(t *testing.T) {
	plugintest.RunSource(t, sourceSuite(t))
}
