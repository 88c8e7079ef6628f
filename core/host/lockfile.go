package host

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
)

// LockFileName is the lock file written beside a pipeline by `sluice plugins
// install` and enforced by every command that starts plugins for it.
const LockFileName = ".sluice.lock.hcl"

// maxLockSize bounds the lock file read.
const maxLockSize = 4 << 20

// Lock is a pipeline's lock file: for each third-party plugin, the version
// installed and the sha256 of its binary on each platform. A plugin binary
// whose digest is not the one recorded for this platform is not started.
type Lock struct {
	// Path is the lock file's path.
	Path string
	// Exists reports that the file was read (false for a new lock).
	Exists bool
	// Plugins holds the entries by plugin name.
	Plugins map[string]*LockedPlugin
}

// LockedPlugin is one plugin's entry.
type LockedPlugin struct {
	Name    string
	Version string
	// Protocol is the plugin protocol it spoke when installed, e.g. "1.2".
	Protocol string
	// SHA256 maps a platform ("linux_amd64") to the binary's hex digest.
	SHA256 map[string]string
}

// Platform names the platform this binary runs on, as lock files key it:
// GOOS_GOARCH.
func Platform() string { return runtime.GOOS + "_" + runtime.GOARCH }

type lockFileHCL struct {
	Plugins []lockPluginHCL `hcl:"plugin,block"`
}

type lockPluginHCL struct {
	Name     string            `hcl:"name,label"`
	Version  string            `hcl:"version"`
	Protocol string            `hcl:"protocol,optional"`
	SHA256   map[string]string `hcl:"sha256"`
}

// LockDir returns the directory whose lock file applies to the pipeline at
// path (a file or a directory of *.hcl files).
func LockDir(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return path
	}
	return filepath.Dir(path)
}

// ReadLock reads the lock file in dir. A missing file gives an empty lock
// (Exists false) and no error.
func ReadLock(dir string) (*Lock, error) {
	l := &Lock{Path: filepath.Join(dir, LockFileName), Plugins: map[string]*LockedPlugin{}}
	fi, err := os.Stat(l.Path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxLockSize {
		return nil, fmt.Errorf("%s: %d bytes is too large for a lock file (at most %d)", l.Path, fi.Size(), maxLockSize)
	}
	src, err := os.ReadFile(l.Path)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, l.Path)
	if diags.HasErrors() {
		return nil, &LockError{Path: l.Path, Diags: diags}
	}
	var doc lockFileHCL
	if diags := gohcl.DecodeBody(f.Body, nil, &doc); diags.HasErrors() {
		return nil, &LockError{Path: l.Path, Diags: diags}
	}
	for _, p := range doc.Plugins {
		if _, dup := l.Plugins[p.Name]; dup {
			return nil, fmt.Errorf("%s: plugin %q is listed twice", l.Path, p.Name)
		}
		for platform, sum := range p.SHA256 {
			if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 || strings.ToLower(sum) != sum {
				return nil, fmt.Errorf("%s: plugin %q: sha256 for %s is %q, not 64 lowercase hexadecimal digits", l.Path, p.Name, platform, sum)
			}
		}
		l.Plugins[p.Name] = &LockedPlugin{Name: p.Name, Version: p.Version, Protocol: p.Protocol, SHA256: p.SHA256}
	}
	l.Exists = true
	return l, nil
}

// LockError reports a lock file that cannot be parsed.
type LockError struct {
	Path  string
	Diags hcl.Diagnostics
}

func (e *LockError) Error() string {
	return fmt.Sprintf("lock file %s: %s", e.Path, e.Diags.Error())
}

// BadConfig marks a broken lock file as a configuration problem.
func (e *LockError) BadConfig() bool { return true }

// Pins returns the digests this platform's binaries must have, by plugin
// name. A plugin locked without a digest for this platform gets a pin that
// matches nothing, so it is refused rather than run unchecked; MissingPlatform
// says which.
func (l *Lock) Pins() map[string]string {
	pins := map[string]string{}
	for name, p := range l.Plugins {
		sum, ok := p.SHA256[Platform()]
		if !ok {
			sum = strings.Repeat("0", 64)
		}
		pins[name] = sum
	}
	return pins
}

// MissingPlatform lists the locked plugins that have no digest for this
// platform, sorted.
func (l *Lock) MissingPlatform() []string {
	var out []string
	for name, p := range l.Plugins {
		if _, ok := p.SHA256[Platform()]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Record sets a plugin's entry for this platform. A new version replaces the
// entry, dropping other platforms' digests (they were for the old version).
func (l *Lock) Record(name, version, protocol, sum string) {
	p, ok := l.Plugins[name]
	if !ok || p.Version != version {
		p = &LockedPlugin{Name: name, Version: version, SHA256: map[string]string{}}
		l.Plugins[name] = p
	}
	p.Protocol = protocol
	p.SHA256[Platform()] = sum
}

// Bytes renders the lock file canonically: plugins and platforms sorted,
// formatted as `hcl fmt` formats it.
func (l *Lock) Bytes() []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(
		"# Sluice plugin lock file, maintained by \"sluice plugins install\".\n" +
			"# Commit it beside the pipeline: sluice refuses to start a plugin binary\n" +
			"# whose sha256 is not the one recorded here for its platform.\n")}})
	names := make([]string, 0, len(l.Plugins))
	for n := range l.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := l.Plugins[n]
		body.AppendNewline()
		b := body.AppendNewBlock("plugin", []string{n}).Body()
		b.SetAttributeValue("version", cty.StringVal(p.Version))
		if p.Protocol != "" {
			b.SetAttributeValue("protocol", cty.StringVal(p.Protocol))
		}
		sums := map[string]cty.Value{}
		for platform, sum := range p.SHA256 {
			sums[platform] = cty.StringVal(sum)
		}
		if len(sums) == 0 {
			b.SetAttributeValue("sha256", cty.MapValEmpty(cty.String))
		} else {
			b.SetAttributeValue("sha256", cty.ObjectVal(sums))
		}
	}
	return hclwrite.Format(f.Bytes())
}

// Write writes the lock file atomically.
func (l *Lock) Write() error {
	b := l.Bytes()
	f, err := atomicfile.Create(l.Path, int64(len(b)))
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %w", l.Path, err)
	}
	return f.Commit()
}
