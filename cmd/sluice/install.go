package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
)

// withInstall adds `install` to the plugins command.
func (a *app) withInstall(plugins *cobra.Command) *cobra.Command {
	plugins.AddCommand(a.pluginsInstallCommand())
	return plugins
}

func (a *app) pluginsInstallCommand() *cobra.Command {
	var dir string
	var noLock bool
	cmd := &cobra.Command{
		Use:   "install PATH",
		Short: "Install a plugin binary and record its digest in the pipeline's lock file",
		Long: `install starts the plugin binary at PATH once, to check that it speaks the
Sluice plugin protocol and to learn its name and version, then copies it into
the plugin directory as sluice-plugin-NAME: the first directory of
SLUICE_PLUGIN_PATH, or ` + "`<user config dir>/sluice/plugins`" + ` (~/.config/sluice/plugins on
Linux) when it is not set. The copy is executable by all and writable by its
owner only.

It then records the plugin's name, version, protocol and the binary's sha256
(for this platform, GOOS_GOARCH) in the lock file .sluice.lock.hcl beside the
pipeline (--pipeline DIR, default the current directory). Commit the lock
file: every sluice command that reads a pipeline from that directory refuses
to start a plugin binary whose sha256 is not the recorded one. Installing on
another platform adds that platform's digest; installing another version
replaces the entry.`,
		Example: `  go build -o sluice-plugin-npz ./examples/plugin-npz && sluice plugins install ./sluice-plugin-npz --pipeline pipelines/npz
  SLUICE_PLUGIN_PATH=/opt/sluice/plugins sluice plugins install ./build/sluice-plugin-npz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := host.InstallDir(os.Getenv(host.PluginPathEnv))
			if err != nil {
				return configErr(err)
			}
			h := host.New(host.Options{Builtins: builtins})
			defer h.Close()
			inst, err := h.Install(args[0], target)
			if err != nil {
				return err
			}
			out := map[string]any{"name": inst.Name, "version": inst.Version, "protocol": inst.Protocol, "path": inst.Path, "sha256": inst.SHA256}
			if !noLock {
				l, err := host.ReadLock(dir)
				if err != nil {
					return configErr(err)
				}
				l.Record(inst.Name, inst.Version, inst.Protocol, inst.SHA256)
				if err := l.Write(); err != nil {
					return err
				}
				out["lock_file"] = l.Path
			}
			if a.json {
				return writeJSON(a.stdout, out)
			}
			if a.quiet {
				return nil
			}
			verb := "installed"
			if inst.Replaced {
				verb = "replaced"
			}
			fmt.Fprintf(a.stdout, "%s plugin %s %s (protocol %s) as %s\nsha256 %s\n", verb, inst.Name, inst.Version, inst.Protocol, inst.Path, inst.SHA256)
			if !noLock {
				fmt.Fprintf(a.stdout, "recorded in %s for %s\n", out["lock_file"], host.Platform())
			}
			if !onSearchPath(target) {
				fmt.Fprintf(a.stdout, "note: %s is not searched for plugins while %s is set\n", target, host.PluginPathEnv)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "pipeline", ".", "directory of the pipeline whose lock file records the plugin")
	cmd.Flags().BoolVar(&noLock, "no-lock", false, "install without recording the plugin in a lock file")
	return cmd
}

func onSearchPath(dir string) bool {
	for _, d := range host.SearchPath(os.Getenv(host.PluginPathEnv)) {
		if filepath.Clean(d) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// lockDiags applies the lock file beside the pipeline at path: its digests
// become pins, so a binary that does not match is never started. A lock
// that cannot be read, a plugin locked without a digest for this platform,
// an installed binary that does not match its lock entry, or a lock entry
// that contradicts a pin in the pipeline's sluice block are errors.
func lockDiags(path string, p *pipeline.Pipeline, h *host.Host) hcl.Diagnostics {
	l, err := host.ReadLock(host.LockDir(path))
	if err != nil {
		if le, ok := err.(*host.LockError); ok {
			return le.Diags
		}
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read the plugin lock file", Detail: err.Error()}}
	}
	if !l.Exists {
		return nil
	}
	var diags hcl.Diagnostics
	subject := &hcl.Range{Filename: l.Path, Start: hcl.InitialPos, End: hcl.InitialPos}
	for _, name := range l.MissingPlatform() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin not locked for this platform",
			Detail: fmt.Sprintf("%s locks plugin %q, but records no sha256 for %s. Run `sluice plugins install` for it on this platform and commit the lock file.",
				l.Path, name, host.Platform()), Subject: subject})
	}
	pins := l.Pins()
	for name, sum := range pins {
		if pin, ok := p.Plugins[name]; ok && !strings.EqualFold(pin.SHA256, sum) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin pin contradicts the lock file",
				Detail:  fmt.Sprintf("The pipeline pins plugin %q to sha256 %s, but %s records %s for %s. Keep one of them.", name, pin.SHA256, l.Path, sum, host.Platform()),
				Subject: pin.Range.Ptr()})
			continue
		}
		bin, builtin, err := h.Binary(name)
		if builtin {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Built-in plugin in the lock file",
				Detail: fmt.Sprintf("%s locks plugin %q, which is built into sluice; remove the entry.", l.Path, name), Subject: subject})
			continue
		}
		if err != nil {
			continue // not installed: reported if a stage needs it
		}
		got, err := host.FileSHA256(bin)
		if err == nil && got != sum {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin binary does not match the lock file",
				Detail: fmt.Sprintf("%s has sha256 %s, but %s records %s (version %s) for %s; it will not be started. Install the locked build, or run `sluice plugins install` with the new one and commit the lock file.",
					bin, got, l.Path, sum, l.Plugins[name].Version, host.Platform()), Subject: subject})
		}
	}
	if !diags.HasErrors() {
		h.SetPins(pins)
	}
	return diags
}

// lockStatus describes an installed plugin against the lock file in dir,
// for `sluice plugins list`; "" when there is no lock file.
func lockStatus(dir, name, sum string) string {
	l, err := host.ReadLock(dir)
	if err != nil || !l.Exists {
		return ""
	}
	e, ok := l.Plugins[name]
	switch {
	case !ok:
		return "not locked"
	case e.SHA256[host.Platform()] == sum:
		return "locked " + e.Version
	case e.SHA256[host.Platform()] == "":
		return "locked, not for " + host.Platform()
	}
	return "MISMATCH: locked " + e.Version + " has another sha256"
}
