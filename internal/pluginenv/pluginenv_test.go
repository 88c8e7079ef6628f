package pluginenv

import (
	"slices"
	"testing"
)

func TestEnvironKeepsWhatAPluginNeedsAndNoSecret(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	t.Setenv("TZ", "UTC")
	t.Setenv("SLUICE_VAR_signing_key", "secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("HOMEWORK", "not HOME")
	env := Environ()
	for _, want := range []string{"HOME=/home/someone", "TZ=UTC"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %q", want, env)
		}
	}
	for _, kv := range env {
		if kv == "SLUICE_VAR_signing_key=secret" || kv == "AWS_SECRET_ACCESS_KEY=secret" || kv == "HOMEWORK=not HOME" {
			t.Errorf("%s reached the plugin's environment", kv)
		}
	}
}
