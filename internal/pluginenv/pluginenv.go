// Package pluginenv says which of the host's environment variables a plugin
// process gets: enough to run, without the caller's secrets (SLUICE_VAR_*
// values never reach a plugin).
//
// It imports only os and bytes, so that internal/standby, which uses it in
// its init, can be initialised early (see that package).
package pluginenv

import (
	"bytes"
	"os"
)

// Environ returns the variables of this process's environment a plugin
// process inherits, as "key=value".
func Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		key := kv
		if i := bytes.IndexByte([]byte(kv), '='); i >= 0 {
			key = kv[:i]
		}
		switch key {
		case "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "USER", "GOCOVERDIR", "XDG_CONFIG_HOME":
			env = append(env, kv)
		}
	}
	return env
}
