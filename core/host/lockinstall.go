package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/sluice-ml/sluice/internal/pluginenv"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// DefaultPluginDir is where third-party plugins live when SLUICE_PLUGIN_PATH
// is not set: <user config dir>/sluice/plugins (~/.config/sluice/plugins on
// Linux).
func DefaultPluginDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no plugin directory: %s is not set and %w", PluginPathEnv, err)
	}
	return filepath.Join(dir, "sluice", "plugins"), nil
}

// InstallDir returns the directory `sluice plugins install` copies binaries
// into: the first entry of SLUICE_PLUGIN_PATH, else DefaultPluginDir.
func InstallDir(env string) (string, error) {
	if dirs := splitPath(env); len(dirs) > 0 {
		return dirs[0], nil
	}
	return DefaultPluginDir()
}

// splitPath splits a list of directories, dropping empty entries.
func splitPath(env string) []string {
	var out []string
	for _, p := range filepath.SplitList(env) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Installed describes a plugin binary copied into a plugin directory.
type Installed struct {
	Name     string
	Version  string
	Protocol string
	// Path is the installed binary.
	Path   string
	SHA256 string
	// Replaced reports that an older binary of the same name was replaced.
	Replaced bool
}

var pluginNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Install copies the plugin binary at src into dir as sluice-plugin-NAME,
// NAME being the name the plugin gives itself. The binary is started first
// (pinned to the digest just computed, so what runs is what is copied) to
// check that it speaks the plugin protocol and to learn its name, version and
// protocol. The copy is written atomically, executable by everyone and
// writable by its owner only: a binary others can rewrite between the check
// and the start defeats the check.
func (h *Host) Install(src, dir string) (*Installed, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", src)
	}
	if fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not executable", src)
	}
	sum, err := FileSHA256(src)
	if err != nil {
		return nil, err
	}
	want, _ := hex.DecodeString(sum)
	cmd := exec.Command(src)
	cmd.Env = pluginenv.Environ()
	c, err := plugin.Launch(plugin.LaunchConfig{Cmd: cmd, SHA256: want, Label: "plugin binary " + src, StartTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	info := c.Info()
	c.Close()
	if !pluginNameRE.MatchString(info.Name) {
		return nil, fmt.Errorf("%s calls itself %q, which is not a plugin name (lowercase letters, digits, - and _)", src, info.Name)
	}
	if _, builtin := h.builtin(info.Name); builtin {
		return nil, fmt.Errorf("%s is plugin %q, which is built into sluice; a third-party plugin needs another name", src, info.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the plugin directory: %w", err)
	}
	inst := &Installed{Name: info.Name, Version: info.Version, Protocol: fmt.Sprintf("%d.%d", plugin.ProtocolVersion, info.ProtocolMinor),
		Path: filepath.Join(dir, BinaryPrefix+info.Name)}
	if _, err := os.Stat(inst.Path); err == nil {
		inst.Replaced = true
	}
	copied, err := copyExecutable(src, inst.Path, fi.Size())
	if err != nil {
		return nil, err
	}
	if copied != sum {
		os.Remove(inst.Path)
		return nil, fmt.Errorf("%s changed while it was installed (sha256 %s, then %s); nothing was installed", src, sum, copied)
	}
	inst.SHA256 = sum
	return inst, nil
}

// copyExecutable copies src to dst atomically with mode 0755 and returns the
// copy's sha256.
func copyExecutable(src, dst string, size int64) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := atomicfile.Create(dst, size)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Abort()
		return "", fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if err := out.Chmod(0o755); err != nil {
		out.Abort()
		return "", err
	}
	if err := out.Commit(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Binary returns the file that serves plugin name: the sluice executable
// for a built-in (in-process or not), the plugin's binary otherwise.
func (h *Host) Binary(name string) (path string, builtin bool, err error) {
	if _, ok := h.builtin(name); ok {
		exe := h.opts.Executable
		if exe == "" {
			if exe, err = os.Executable(); err != nil {
				return "", true, fmt.Errorf("finding the sluice binary: %w", err)
			}
		}
		return exe, true, nil
	}
	h.scan()
	h.mu.Lock()
	e, ok := h.external[name]
	h.mu.Unlock()
	if !ok {
		return "", false, errors.New("no plugin named " + name)
	}
	return e.Path, false, nil
}
