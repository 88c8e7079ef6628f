package plugin

import (
	"errors"
	"strings"
	"testing"
)

func TestVersionErrorNamesBothVersions(t *testing.T) {
	// go-plugin's handshake error for an app protocol the host does not list.
	err := errors.New("incompatible API version with plugin. Plugin version: 2, Client versions: [1]")
	v, ok := pluginProtocol(err)
	if !ok || v != 2 {
		t.Fatalf("pluginProtocol = %d, %v", v, ok)
	}
	msg := (&VersionError{Label: `plugin "x"`, Path: "bin/sluice-plugin-x", Plugin: v}).Error()
	for _, want := range []string{"protocol 2 (sluice.plugin.v2)", "protocol 1 (sluice.plugin.v1", "bin/sluice-plugin-x", "not started"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if !IsBadConfig(&VersionError{}) {
		t.Error("a version mismatch is not a configuration error")
	}
	if _, ok := pluginProtocol(errors.New("plugin exited before we could connect")); ok {
		t.Error("another start failure taken for a version mismatch")
	}
}
